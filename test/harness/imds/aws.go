package imds

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// TokenMode is how the AWS fake treats IMDSv2 session tokens.
type TokenMode int

// Token modes: an instance's HttpTokens option "required" (the default
// for new AMIs) or "optional", or a service without the token API.
const (
	TokensRequired TokenMode = iota // a GET needs a valid token
	TokensOptional                  // a GET may come without one
	TokensRefused                   // the token PUT is refused (RefuseWith)
)

// AWS is a fake EC2 instance metadata service.
type AWS struct {
	InstanceID       string // i-…
	AvailabilityZone string // eu-west-1a
	Region           string
	OutpostARN       string // "" answers outpost-arn with 404, as off an Outpost
	Tokens           TokenMode
	RefuseWith       int // status of a refused token PUT; default 403
	Faults           Faults
}

// Header names as the real service and the SDK spell them (HTTP header
// names are case-insensitive).
const (
	awsTokenHeader = "X-aws-ec2-metadata-token"
	awsTTLHeader   = "X-aws-ec2-metadata-token-ttl-seconds"
	awsMaxTTL      = 21600
)

// Start serves the fake.
func (a AWS) Start(t testing.TB) *Server {
	t.Helper()
	if a.RefuseWith == 0 {
		a.RefuseWith = http.StatusForbidden
	}
	expires := map[string]time.Time{} // token -> expiry; guarded by s.mu
	return start(t, a.Faults, func(s *Server, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/latest/api/token" {
			if r.Method != http.MethodPut {
				http.Error(w, "", http.StatusMethodNotAllowed)
				return
			}
			if a.Tokens == TokensRefused {
				http.Error(w, "", a.RefuseWith)
				return
			}
			ttl, err := strconv.Atoi(r.Header.Get(awsTTLHeader))
			if err != nil || ttl < 1 || ttl > awsMaxTTL {
				http.Error(w, "Bad Request", http.StatusBadRequest)
				return
			}
			b := make([]byte, 32)
			_, _ = rand.Read(b)
			tok := base64.StdEncoding.EncodeToString(b)
			s.mu.Lock()
			expires[tok] = time.Now().Add(time.Duration(ttl) * time.Second)
			s.tokens = append(s.tokens, tok)
			s.mu.Unlock()
			w.Header().Set(awsTTLHeader, strconv.Itoa(ttl))
			_, _ = w.Write([]byte(tok))
			return
		}
		if r.Method != http.MethodGet {
			http.Error(w, "", http.StatusMethodNotAllowed)
			return
		}
		tok := r.Header.Get(awsTokenHeader)
		s.mu.Lock()
		exp, known := expires[tok]
		s.mu.Unlock()
		switch {
		case tok == "" && a.Tokens == TokensRequired,
			tok != "" && (!known || time.Now().After(exp)):
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/latest/dynamic/instance-identity/document":
			writeJSON(w, map[string]any{
				"accountId": "123456789012", "architecture": "x86_64", "availabilityZone": a.AvailabilityZone,
				"imageId": "ami-0123456789abcdef0", "instanceId": a.InstanceID, "instanceType": "m5.xlarge",
				"pendingTime": "2026-01-01T00:00:00Z", "privateIp": "10.0.0.10", "region": a.Region, "version": "2017-09-30",
			})
		case "/latest/meta-data/outpost-arn":
			if a.OutpostARN == "" {
				http.NotFound(w, r)
				return
			}
			_, _ = w.Write([]byte(a.OutpostARN))
		default:
			http.NotFound(w, r)
		}
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
