// Package version holds the build's identity, set at link time with
// -ldflags "-X github.com/wincsi/csi-windows-node/pkg/version.Version=... -X ...Commit=...".
// Nothing else belongs here.
package version

import (
	"encoding/json"
	"runtime"
)

// devVersion names a development build.
const devVersion = "v0.0.0-dev"

// Set by the linker; the defaults describe a development build.
var (
	Version   string = devVersion
	Commit           = "unknown"
	BuildDate        = "unknown"
)

// A build whose VERSION was set empty (-X ...Version=, a docker build
// with --build-arg VERSION=) is a development build too: GetPluginInfo's
// vendor_version must not be empty (CSI spec v1.13.0,
// GetPluginInfoResponse.vendor_version: "This field is REQUIRED").
func init() { Version = orDev(Version) }

func orDev(v string) string {
	if v == "" {
		return devVersion
	}
	return v
}

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
