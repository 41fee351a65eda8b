package preflight_test

import (
	"reflect"
	"sort"
	"testing"

	"k8s.io/component-base/metrics"

	"github.com/wincsi/csi-windows-node/pkg/preflight"
)

func TestGauge(t *testing.T) {
	reg := metrics.NewKubeRegistry()
	g, err := preflight.NewGauge(reg)
	if err != nil {
		t.Fatal(err)
	}
	g.Set(preflight.Report{Findings: []preflight.Finding{
		{Check: preflight.CheckISCSIInitiator, Result: preflight.Fail},
		{Check: preflight.CheckWindows, Result: preflight.Pass},
	}})
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fams {
		if f.GetName() != preflight.GaugeName {
			continue
		}
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if m.GetGauge().GetValue() == 1 {
				got = append(got, l["check"]+"="+l["result"])
			} else if m.GetGauge().GetValue() != 0 {
				t.Errorf("%v = %v", l, m.GetGauge().GetValue())
			}
		}
		if n := len(f.GetMetric()); n != 8 {
			t.Errorf("%d series, want 2 checks x 4 results", n)
		}
	}
	sort.Strings(got)
	if want := []string{"iscsi-initiator=fail", "windows=pass"}; !reflect.DeepEqual(got, want) {
		t.Errorf("series at 1: %q, want %q", got, want)
	}
	if _, err := preflight.NewGauge(reg); err == nil {
		t.Error("registering the gauge twice succeeded")
	}
}
