package identity

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestIdentity(t *testing.T) {
	ctx := context.Background()
	for _, topo := range []bool{false, true} {
		s := New("disk.csi.example.com", "v1.2.3", topo)
		info, err := s.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
		if err != nil || info.GetName() != "disk.csi.example.com" || info.GetVendorVersion() != "v1.2.3" {
			t.Fatalf("GetPluginInfo = %v, %v", info, err)
		}
		caps, err := s.GetPluginCapabilities(ctx, &csi.GetPluginCapabilitiesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range caps.GetCapabilities() {
			if c.GetService().GetType() == csi.PluginCapability_Service_CONTROLLER_SERVICE {
				t.Fatal("node plugin advertises a controller service")
			}
		}
		hasTopo := len(caps.GetCapabilities()) == 1 &&
			caps.GetCapabilities()[0].GetService().GetType() == csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS
		if hasTopo != topo {
			t.Fatalf("topology=%v: capabilities %v", topo, caps.GetCapabilities())
		}
		p, err := s.Probe(ctx, &csi.ProbeRequest{})
		if err != nil || p.GetReady() == nil || p.GetReady().GetValue() {
			t.Fatalf("Probe before ready = %v, %v; want ready=false", p, err)
		}
		s.SetReady(true)
		p, err = s.Probe(ctx, &csi.ProbeRequest{})
		if err != nil || !p.GetReady().GetValue() {
			t.Fatalf("Probe after ready = %v, %v", p, err)
		}
	}
}

// TestProbeTellsInitialisingFromUnhealthy checks Probe's three cases (CSI
// spec v1.13.0, ProbeResponse and Probe Errors): initialising is OK with
// ready=false, initialised and healthy OK with ready=true, unhealthy
// FAILED_PRECONDITION whatever the readiness flag says about start-up.
func TestProbeTellsInitialisingFromUnhealthy(t *testing.T) {
	wedged := errors.New("4 wmi workers are stuck")
	tests := []struct {
		name      string
		ready     bool
		check     error
		want      codes.Code
		wantReady bool
	}{
		{"initialising", false, nil, codes.OK, false},
		{"initialising, check failing", false, wedged, codes.OK, false},
		{"ready", true, nil, codes.OK, true},
		{"ready, host wedged", true, wedged, codes.FailedPrecondition, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New("a.b", "v", false)
			s.SetReady(tt.ready)
			s.SetHealthCheck(func() error { return tt.check })
			p, err := s.Probe(context.Background(), &csi.ProbeRequest{})
			if status.Code(err) != tt.want {
				t.Fatalf("Probe = %v, %v; want code %v", p, err, tt.want)
			}
			if err != nil {
				if !strings.Contains(status.Convert(err).Message(), wedged.Error()) {
					t.Errorf("Probe error %q does not say why", err)
				}
			} else if p.GetReady() == nil || p.GetReady().GetValue() != tt.wantReady {
				t.Errorf("Probe = %v, want ready=%v", p, tt.wantReady)
			}
			if s.Ready() != tt.wantReady {
				t.Errorf("Ready() = %v, want %v", s.Ready(), tt.wantReady)
			}
		})
	}
}
