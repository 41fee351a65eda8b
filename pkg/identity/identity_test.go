package identity

import (
	"context"
	"errors"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
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

func TestProbeFollowsHealthCheck(t *testing.T) {
	s := New("a.b", "v", false)
	s.SetReady(true)
	var err error
	s.SetHealthCheck(func() error { return err })
	p, _ := s.Probe(context.Background(), &csi.ProbeRequest{})
	if !p.GetReady().GetValue() {
		t.Fatal("healthy host reported not ready")
	}
	err = errors.New("4 wmi workers are stuck")
	p, _ = s.Probe(context.Background(), &csi.ProbeRequest{})
	if p.GetReady().GetValue() || s.Ready() {
		t.Fatal("wedged host reported ready")
	}
}
