package imds

import (
	"io"
	"net/http"
	"slices"
	"testing"
)

// call sends one request to a fake and returns the status and body.
func call(t *testing.T, method, url string, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, http.NoBody)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestAWSRefusesAsIMDS checks the statuses the real IMDS answers a wrong
// token exchange with.
func TestAWSRefusesAsIMDS(t *testing.T) {
	required := AWS{InstanceID: "i-1", AvailabilityZone: "eu-west-1a", Region: "eu-west-1"}.Start(t)
	optional := AWS{InstanceID: "i-1", AvailabilityZone: "eu-west-1a", Region: "eu-west-1", Tokens: TokensOptional}.Start(t)
	refused := AWS{InstanceID: "i-1", AvailabilityZone: "eu-west-1a", Region: "eu-west-1", Tokens: TokensRefused, RefuseWith: http.StatusNotFound}.Start(t)
	const doc = "/latest/dynamic/instance-identity/document"

	code, tok := call(t, http.MethodPut, required.URL+"/latest/api/token", map[string]string{awsTTLHeader: "60"})
	if code != http.StatusOK || tok == "" {
		t.Fatalf("token PUT: %d %q", code, tok)
	}
	tests := []struct {
		name   string
		server *Server
		method string
		path   string
		header map[string]string
		want   int
	}{
		{"token without TTL", required, http.MethodPut, "/latest/api/token", nil, http.StatusBadRequest},
		{"token TTL 0", required, http.MethodPut, "/latest/api/token", map[string]string{awsTTLHeader: "0"}, http.StatusBadRequest},
		{"token TTL above 6 h", required, http.MethodPut, "/latest/api/token", map[string]string{awsTTLHeader: "21601"}, http.StatusBadRequest},
		{"GET without token when required", required, http.MethodGet, doc, nil, http.StatusUnauthorized},
		{"GET with an unknown token", required, http.MethodGet, doc, map[string]string{awsTokenHeader: "forged"}, http.StatusUnauthorized},
		{"GET with the token", required, http.MethodGet, doc, map[string]string{awsTokenHeader: tok}, http.StatusOK},
		{"GET without token when optional", optional, http.MethodGet, doc, nil, http.StatusOK},
		{"GET with an unknown token when optional", optional, http.MethodGet, doc, map[string]string{awsTokenHeader: "forged"}, http.StatusUnauthorized},
		{"token refused", refused, http.MethodPut, "/latest/api/token", map[string]string{awsTTLHeader: "60"}, http.StatusNotFound},
		{"IMDSv1 GET", refused, http.MethodGet, doc, nil, http.StatusOK},
		{"no outpost", required, http.MethodGet, "/latest/meta-data/outpost-arn", map[string]string{awsTokenHeader: tok}, http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if code, body := call(t, tt.method, tt.server.URL+tt.path, tt.header); code != tt.want {
				t.Fatalf("%s %s: %d %q, want %d", tt.method, tt.path, code, body, tt.want)
			}
		})
	}
	if got := required.Tokens(); len(got) != 1 || got[0] != tok {
		t.Fatalf("Tokens() = %q, want the one issued", got)
	}
}

func TestGCERefusesAsTheMetadataServer(t *testing.T) {
	s := GCE{ProjectID: "p", ProjectNumber: "1", Zone: "europe-west1-b", InstanceName: "vm"}.Start(t)
	flavor := map[string]string{"Metadata-Flavor": "Google"}
	tests := []struct {
		name   string
		path   string
		header map[string]string
		want   int
		body   string
	}{
		{"without Metadata-Flavor", "/computeMetadata/v1/instance/zone", nil, http.StatusForbidden, ""},
		{"with another flavor", "/computeMetadata/v1/instance/zone", map[string]string{"Metadata-Flavor": "Amazon"}, http.StatusForbidden, ""},
		{"zone", "/computeMetadata/v1/instance/zone", flavor, http.StatusOK, "projects/1/zones/europe-west1-b"},
		{"unknown key", "/computeMetadata/v1/instance/nothing", flavor, http.StatusNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := call(t, http.MethodGet, s.URL+tt.path, tt.header)
			if code != tt.want || (tt.body != "" && body != tt.body) {
				t.Fatalf("GET %s: %d %q, want %d %q", tt.path, code, body, tt.want, tt.body)
			}
		})
	}
}

func TestAzureRefusesAsIMDS(t *testing.T) {
	s := Azure{Location: "westeurope", Zone: "2", Name: "vm", FaultDomain: "0"}.Start(t)
	md := map[string]string{"Metadata": "true"}
	tests := []struct {
		name   string
		method string
		path   string
		header map[string]string
		want   int
	}{
		{"without Metadata", http.MethodGet, "/metadata/instance?api-version=2021-10-01", nil, http.StatusBadRequest},
		{"without api-version", http.MethodGet, "/metadata/instance", md, http.StatusBadRequest},
		{"unknown api-version", http.MethodGet, "/metadata/instance?api-version=1999-01-01", md, http.StatusBadRequest},
		{"POST", http.MethodPost, "/metadata/instance?api-version=2021-10-01", md, http.StatusMethodNotAllowed},
		{"instance", http.MethodGet, "/metadata/instance?api-version=2021-10-01&format=json", md, http.StatusOK},
		{"Metadata: True", http.MethodGet, "/metadata/instance?api-version=2021-10-01", map[string]string{"Metadata": "True"}, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if code, body := call(t, tt.method, s.URL+tt.path, tt.header); code != tt.want {
				t.Fatalf("%s %s: %d %q, want %d", tt.method, tt.path, code, body, tt.want)
			}
		})
	}
}

// TestFaults checks that a fault applies to its first Times requests.
func TestFaults(t *testing.T) {
	s := GCE{ProjectID: "p", ProjectNumber: "1", Zone: "z", InstanceName: "vm", Faults: Faults{Status: http.StatusServiceUnavailable, Times: 2}}.Start(t)
	var got []int
	for range 3 {
		code, _ := call(t, http.MethodGet, s.URL+"/computeMetadata/v1/instance/name", map[string]string{"Metadata-Flavor": "Google"})
		got = append(got, code)
	}
	if want := []int{503, 503, 200}; !slices.Equal(got, want) {
		t.Fatalf("statuses %v, want %v", got, want)
	}
	if n := len(s.Requests()); n != 3 {
		t.Fatalf("%d requests recorded, want 3", n)
	}
}
