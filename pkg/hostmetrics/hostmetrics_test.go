package hostmetrics

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/host/hosttest"
)

const (
	fullName     = Namespace + "_" + Name
	durationName = Namespace + "_" + DurationName
)

// counts gathers the counter's series as "area/operation/result" -> value.
func counts(t *testing.T, reg metrics.KubeRegistry) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, m := range gather(t, reg, fullName) {
		out[key(m, LabelArea, LabelOperation, LabelResult)] = m.GetCounter().GetValue()
	}
	return out
}

// observations gathers the histogram's sample counts as "area/operation" ->
// count.
func observations(t *testing.T, reg metrics.KubeRegistry) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	for _, m := range gather(t, reg, durationName) {
		out[key(m, LabelArea, LabelOperation)] = m.GetHistogram().GetSampleCount()
	}
	return out
}

func gather(t *testing.T, reg metrics.KubeRegistry, name string) []*dto.Metric {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()
		}
	}
	return nil
}

func key(m *dto.Metric, names ...string) string {
	l := map[string]string{}
	for _, p := range m.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	vals := make([]string, len(names))
	for i, n := range names {
		vals[i] = l[n]
	}
	return strings.Join(vals, "/")
}

func newMetrics(t *testing.T) (*Metrics, metrics.KubeRegistry) {
	t.Helper()
	reg := metrics.NewKubeRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	return m, reg
}

// TestWrapCountsEveryMethod calls every method of every host area through
// the decorator (over a host that implements nothing) and expects exactly
// one series per method, named after the area field and the method.
func TestWrapCountsEveryMethod(t *testing.T) {
	m, reg := newMetrics(t)
	wrapped := reflect.ValueOf(m.Wrap(hosttest.Unimplemented()))
	want := map[string]float64{}
	wantObs := map[string]uint64{}
	for i := range wrapped.NumField() {
		area := strings.ToLower(wrapped.Type().Field(i).Name)
		iface := wrapped.Field(i)
		for j := range iface.NumMethod() {
			method := iface.Type().Method(j)
			fn := iface.Method(j)
			args := make([]reflect.Value, fn.Type().NumIn())
			args[0] = reflect.ValueOf(context.Background())
			for k := 1; k < len(args); k++ {
				args[k] = reflect.Zero(fn.Type().In(k))
			}
			out := fn.Call(args)
			err, _ := out[len(out)-1].Interface().(error)
			if !errors.Is(err, host.ErrNotImplemented) {
				t.Errorf("%s.%s: error %v, want the inner host's ErrNotImplemented passed through", area, method.Name, err)
			}
			want[area+"/"+method.Name+"/notimplemented"] = 1
			wantObs[area+"/"+method.Name] = 1
		}
	}
	if got := counts(t, reg); !reflect.DeepEqual(got, want) {
		t.Errorf("counter series:\n got  %v\n want %v", got, want)
	}
	if got := observations(t, reg); !reflect.DeepEqual(got, wantObs) {
		t.Errorf("histogram series:\n got  %v\n want %v", got, wantObs)
	}
	if len(want) < 39 {
		t.Errorf("only %d methods found; the host interfaces have at least 39", len(want))
	}
}

func TestResult(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, "ok"},
		{"sentinel", host.ErrNotFound, "notfound"},
		{"wrapped sentinel", fmt.Errorf("disk 3: %w", host.ErrAccessDenied), "accessdenied"},
		{"deadline", fmt.Errorf("disks.List: host call interrupted: %w", context.DeadlineExceeded), "deadlineexceeded"},
		{"canceled", fmt.Errorf("call: %w", ctx.Err()), "canceled"},
		{"sentinel before context", errors.Join(host.ErrBusy, context.Canceled), "busy"},
		{"other", errors.New("boom"), "error"},
		{"os error", os.ErrPermission, "error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Result(tt.err); got != tt.want {
				t.Errorf("Result(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

// fakeFiles answers Stat with a fixed result and records its arguments.
type fakeFiles struct {
	host.Files
	gotPath string
	gotCtx  context.Context
}

func (f *fakeFiles) Stat(ctx context.Context, path string) (host.PathInfo, error) {
	f.gotPath, f.gotCtx = path, ctx
	if path == "/missing" {
		return host.PathInfo{}, fmt.Errorf("path %s: %w", path, host.ErrNotFound)
	}
	return host.PathInfo{Kind: host.PathMountPoint, Target: `\\?\Volume{x}\`}, nil
}

type ctxKey struct{}

func TestWrapPassesThrough(t *testing.T) {
	m, reg := newMetrics(t)
	inner := hosttest.Unimplemented()
	ff := &fakeFiles{Files: inner.Files}
	inner.Files = ff
	h := m.Wrap(inner)

	ctx := context.WithValue(context.Background(), ctxKey{}, "v")
	info, err := h.Files.Stat(ctx, "/staged")
	if err != nil || info.Kind != host.PathMountPoint || info.Target != `\\?\Volume{x}\` {
		t.Errorf("Stat = %+v, %v; want the inner result", info, err)
	}
	if ff.gotPath != "/staged" || ff.gotCtx.Value(ctxKey{}) != "v" {
		t.Errorf("inner Stat got path %q and a context without the caller's value", ff.gotPath)
	}
	if _, err := h.Files.Stat(ctx, "/missing"); !errors.Is(err, host.ErrNotFound) {
		t.Errorf("Stat(/missing) error %v, want ErrNotFound", err)
	}
	if _, err := h.Files.Stat(ctx, "/staged"); err != nil {
		t.Fatal(err)
	}
	got := counts(t, reg)
	want := map[string]float64{"files/Stat/ok": 2, "files/Stat/notfound": 1}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("counter series %v, want %v", got, want)
	}
	if obs := observations(t, reg); !reflect.DeepEqual(obs, map[string]uint64{"files/Stat": 3}) {
		t.Errorf("histogram series %v, want 3 observations of files/Stat", obs)
	}
}

// BenchmarkWrappedCall measures what the decorator adds to one host call
// (the inner call returns at once).
func BenchmarkWrappedCall(b *testing.B) {
	inner := hosttest.Unimplemented()
	inner.Files = &fakeFiles{Files: inner.Files}
	ctx := context.Background()
	for _, c := range []struct {
		name string
		h    func(*testing.B) host.Host
	}{
		{"direct", func(*testing.B) host.Host { return inner }},
		{"wrapped", func(b *testing.B) host.Host {
			m, err := New(metrics.NewKubeRegistry())
			if err != nil {
				b.Fatal(err)
			}
			return m.Wrap(inner)
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			h := c.h(b)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := h.Files.Stat(ctx, "/staged"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestNewRejectsSecondRegistration(t *testing.T) {
	reg := metrics.NewKubeRegistry()
	if _, err := New(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := New(reg); err == nil {
		t.Error("second New on the same registry succeeded; want a registration error")
	}
}
