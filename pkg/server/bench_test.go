package server

import (
	"context"
	"flag"
	"io"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-lib-utils/metrics"
	"google.golang.org/grpc"
	"k8s.io/klog/v2"
)

// withKlog sets klog's verbosity for the benchmark and sends its output to
// io.Discard, as deployed (--v=2) but without a terminal's cost.
func withKlog(b *testing.B, v string) {
	b.Helper()
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	if err := fs.Parse([]string{"-v=" + v, "-logtostderr=false", "-alsologtostderr=false", "-stderrthreshold=FATAL"}); err != nil {
		b.Fatal(err)
	}
	klog.SetOutput(io.Discard)
	b.Cleanup(func() {
		if err := fs.Parse([]string{"-v=0", "-logtostderr=true"}); err != nil {
			b.Error(err)
		}
		klog.SetOutput(nil)
	})
}

// BenchmarkInterceptors measures what every RPC pays in this package: the
// chain New installs (logRPC, recordMetrics, recoverPanics) around a
// handler that does nothing, for a quiet RPC and for a mutating one (which
// logs one V(2) line at the deployed verbosity).
func BenchmarkInterceptors(b *testing.B) {
	chain := chainOf(interceptors(metrics.NewCSIMetricsManagerForPlugin("bench.csi.example.com"))...)
	noop := func(context.Context, any) (any, error) { return struct{}{}, nil }
	publish := &csi.NodePublishVolumeRequest{VolumeId: "pvc-4f0c", TargetPath: "/var/lib/kubelet/pods/x/volumes/kubernetes.io~csi/pvc-4f0c/mount"}
	cases := []struct {
		name   string
		v      string
		method string
		req    any
	}{
		{"NodeGetCapabilities/v=2", "2", "/csi.v1.Node/NodeGetCapabilities", &csi.NodeGetCapabilitiesRequest{}},
		{"NodePublishVolume/v=0", "0", "/csi.v1.Node/NodePublishVolume", publish},
		{"NodePublishVolume/v=2", "2", "/csi.v1.Node/NodePublishVolume", publish},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			withKlog(b, c.v)
			info := &grpc.UnaryServerInfo{FullMethod: c.method}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := chain(ctx, c.req, info, noop); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// chainOf composes interceptors the way grpc.ChainUnaryInterceptor does.
func chainOf(ics ...grpc.UnaryServerInterceptor) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		next := h
		for i := len(ics) - 1; i >= 0; i-- {
			ic, inner := ics[i], next
			next = func(ctx context.Context, req any) (any, error) { return ic(ctx, req, info, inner) }
		}
		return next(ctx, req)
	}
}
