// Package imds serves fake instance metadata services of AWS (IMDS with
// IMDSv2 session tokens), GCE (the metadata server) and Azure (IMDS) on
// free 127.0.0.1 ports, for the tests of pkg/cloud and of the plugin
// binary's --cloud. Each speaks its service's protocol as far as the plugin
// uses it, and refuses what the real service refuses with the same status:
//
//   - AWS: PUT /latest/api/token needs X-aws-ec2-metadata-token-ttl-seconds
//     between 1 and 21600 (400 otherwise); a GET with a missing (when
//     tokens are required), unknown or expired token gets 401. Sources: the
//     EC2 User Guide, "Access instance metadata for an EC2 instance"
//     (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-data-retrieval.html),
//     AWS's troubleshooting article
//     https://repost.aws/knowledge-center/ec2-linux-metadata-retrieval
//     (400 for an invalid PUT, 401 for a GET with an invalid token, 403
//     when IMDS is off), and AWS's own IMDS mock,
//     github.com/aws/amazon-ec2-metadata-mock v1.13.0
//     (f04df343e39ce8ffc944feaa50afe1d5e8aa3b29):
//     pkg/mock/imdsv2/tokengenerator.go (TTL 1..21600, else 400) and
//     tokenvalidator.go (401 for a missing, unknown or expired token when
//     IMDSv2 is required).
//   - GCE: every request needs "Metadata-Flavor: Google" (403 without it;
//     https://cloud.google.com/compute/docs/metadata/querying-metadata says
//     the server denies such requests, and the status is 403 as reported in
//     googleapis/google-api-dotnet-client#1409 and
//     googleapis/google-auth-library-ruby#228); every answer carries
//     "Metadata-Flavor: Google" (googleapis/gcp-metadata#657).
//   - Azure: every request needs "Metadata: true" and a known api-version
//     (400 otherwise), and only GET is allowed (405)
//     (https://learn.microsoft.com/azure/virtual-machines/instance-metadata-service,
//     "Errors and debugging").
//
// Unknown paths get 404 everywhere. Faults make a fake answer with an error
// status or never answer.
//
// Test tooling only; never imported by the plugin.
package imds

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Faults make a fake misbehave: the requests after the first After are
// answered with Status, or never (Hang), Times of them (0: all).
type Faults struct {
	Status int  // answer with this status (500, 503, …) instead
	Hang   bool // never answer: hold the request until the client gives up
	After  int
	Times  int
}

// Request is what a fake received.
type Request struct {
	Method string
	Path   string // with the query
	Header http.Header
}

// Server is a running fake, stopped at test cleanup.
type Server struct {
	URL string // base URL, http://127.0.0.1:<port>

	mu       sync.Mutex
	requests []Request
	faulted  int      // requests answered with the fault
	tokens   []string // AWS session tokens issued
	done     chan struct{}
}

// handler answers a request to the fake s.
type handler func(s *Server, w http.ResponseWriter, r *http.Request)

// start serves h behind the fault injection and the request log.
func start(t testing.TB, f Faults, h handler) *Server {
	t.Helper()
	s := &Server{done: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.RequestURI(), Header: r.Header.Clone()})
		fault := (f.Status != 0 || f.Hang) && len(s.requests) > f.After && (f.Times == 0 || s.faulted < f.Times)
		if fault {
			s.faulted++
		}
		s.mu.Unlock()
		switch {
		case fault && f.Hang:
			select {
			case <-r.Context().Done():
			case <-s.done:
			}
		case fault:
			http.Error(w, http.StatusText(f.Status), f.Status)
		default:
			h(s, w, r)
		}
	}))
	s.URL = srv.URL
	t.Cleanup(func() {
		close(s.done) // release hanging requests, or Close waits for them
		srv.Close()
	})
	return s
}

// Absent returns a "server" nobody listens on: a loopback port that was
// free a moment ago, for a metadata service that is not there.
func Absent(t testing.TB) *Server {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{URL: "http://" + l.Addr().String(), done: make(chan struct{})}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return s
}

// Requests returns what the fake received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Tokens returns the AWS session tokens the fake issued, so that a test
// can check none of them leaks into a log.
func (s *Server) Tokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.tokens...)
}
