package imds

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

// Azure is a fake Azure Instance Metadata Service.
type Azure struct {
	Location    string // westeurope
	Zone        string // "1", "2", "3", or "" for a VM in no zone
	Name        string // the VM name
	FaultDomain string
	Faults      Faults
}

// azureVersions are api-versions IMDS accepts: a subset of the list on
// https://learn.microsoft.com/azure/virtual-machines/instance-metadata-service
// ("Supported API versions"), holding the one cloud-provider-azure pins.
var azureVersions = []string{"2019-06-01", "2020-09-01", "2021-02-01", "2021-10-01", "2021-12-13", "2023-07-01"}

// Start serves the fake.
func (a Azure) Start(t testing.TB) *Server {
	t.Helper()
	return start(t, a.Faults, func(_ *Server, w http.ResponseWriter, r *http.Request) {
		badRequest := func(msg string) {
			w.WriteHeader(http.StatusBadRequest)
			writeJSON(w, map[string]any{"error": msg, "newest-versions": azureVersions[len(azureVersions)-3:]})
		}
		switch {
		case r.Method != http.MethodGet:
			http.Error(w, "", http.StatusMethodNotAllowed)
		case !strings.EqualFold(r.Header.Get("Metadata"), "true"):
			badRequest("Bad request. Required metadata header not specified")
		case r.URL.Query().Get("api-version") == "":
			badRequest("Bad request. api-version was not specified in the request")
		case !slices.Contains(azureVersions, r.URL.Query().Get("api-version")):
			badRequest("Bad request. api-version is invalid or was not specified in the request")
		case r.URL.Path == "/metadata/instance":
			writeJSON(w, map[string]any{
				"compute": map[string]any{
					"azEnvironment": "AzurePublicCloud", "location": a.Location, "name": a.Name, "osType": "Windows",
					"platformFaultDomain": a.FaultDomain, "platformUpdateDomain": "0", "resourceGroupName": "rg",
					"subscriptionId": "00000000-0000-0000-0000-000000000000", "vmSize": "Standard_D4s_v5", "zone": a.Zone,
				},
				"network": map[string]any{"interface": []any{}},
			})
		default:
			http.NotFound(w, r)
		}
	})
}
