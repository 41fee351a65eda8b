package imds

import (
	"net/http"
	"strings"
	"testing"
)

// GCE is a fake Compute Engine metadata server.
type GCE struct {
	ProjectID     string // my-project
	ProjectNumber string // 123456789012
	Zone          string // europe-west1-b
	InstanceName  string
	// Disks is the JSON answer of instance/disks/?recursive=true, the
	// instance's disks ("" answers 404). Shape as
	// kubernetes-sigs/gcp-compute-persistent-disk-csi-driver@b560165
	// pkg/mount-manager/safe-mounter-v1_windows.go reads it: a list of
	// objects with deviceName, index, interface, mode, type and, for NVMe
	// disks, nvmeNamespaceIdentifier.
	Disks  string
	Faults Faults
}

// Start serves the fake.
func (g GCE) Start(t testing.TB) *Server {
	t.Helper()
	values := map[string]string{
		"instance/zone":      "projects/" + g.ProjectNumber + "/zones/" + g.Zone,
		"instance/name":      g.InstanceName,
		"project/project-id": g.ProjectID,
	}
	return start(t, g.Faults, func(_ *Server, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Metadata-Flavor", "Google")
		if r.Header.Get("Metadata-Flavor") != "Google" {
			http.Error(w, "Missing required header \"Metadata-Flavor\": \"Google\"", http.StatusForbidden)
			return
		}
		suffix, ok := strings.CutPrefix(r.URL.Path, "/computeMetadata/v1/")
		if ok && suffix == "instance/disks/" && r.URL.Query().Get("recursive") == "true" && g.Disks != "" && r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(g.Disks))
			return
		}
		v, found := values[suffix]
		if !ok || !found || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/text")
		_, _ = w.Write([]byte(v))
	})
}
