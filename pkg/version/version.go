// Package version holds the build's identity, set at link time with
// -ldflags "-X github.com/wincsi/csi-windows-node/pkg/version.Version=... -X ...Commit=...".
// Nothing else belongs here.
package version

import (
	"encoding/json"
	"runtime"
)

// Set by the linker; the defaults describe a development build.
var (
	Version   = "v0.0.0-dev"
	Commit    = "unknown"
	BuildDate = "unknown"
)

// Info is what --version prints.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	BuildDate string `json:"buildDate"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the build's identity.
func Get() Info {
	return Info{
		Version:   Version,
		Commit:    Commit,
		BuildDate: BuildDate,
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
}

// JSON returns Get() as indented JSON.
func JSON() string {
	b, err := json.MarshalIndent(Get(), "", "  ")
	if err != nil { // cannot happen for this struct of strings
		return "{}"
	}
	return string(b)
}
