package server

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
)

// TestRequestLogHidesSecretsAndMountFlags logs each request that carries a
// volume capability at the request body's level, and checks that neither
// its secrets nor its mount flags (CSI spec v1.13.0: mount_flags "MAY
// contain sensitive information") reach the log, while the handler still
// gets the request as sent.
func TestRequestLogHidesSecretsAndMountFlags(t *testing.T) {
	const flag, secret = "password=flag-value-1", "secret-value-2"
	mountCap := func() *csi.VolumeCapability {
		return &csi.VolumeCapability{
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: "ntfs", MountFlags: []string{"ro", flag}}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		}
	}
	tests := []struct {
		method string
		req    interface {
			proto.Message
			GetVolumeCapability() *csi.VolumeCapability
		}
	}{
		{"NodeStageVolume", &csi.NodeStageVolumeRequest{VolumeId: "vol-1", StagingTargetPath: "/k/staging-path-3",
			VolumeCapability: mountCap(), Secrets: map[string]string{"password": secret}}},
		{"NodePublishVolume", &csi.NodePublishVolumeRequest{VolumeId: "vol-1", TargetPath: "/k/staging-path-3",
			VolumeCapability: mountCap(), Secrets: map[string]string{"password": secret}}},
		{"NodeExpandVolume", &csi.NodeExpandVolumeRequest{VolumeId: "vol-1", VolumePath: "/k/staging-path-3",
			VolumeCapability: mountCap(), Secrets: map[string]string{"password": secret}}},
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			var buf bytes.Buffer
			logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(5), textlogger.Output(&buf)))
			ctx := klog.NewContext(context.Background(), logger)
			var got []string
			_, err := logRPC(ctx, tt.req, &grpc.UnaryServerInfo{FullMethod: "/csi.v1.Node/" + tt.method},
				func(_ context.Context, req any) (any, error) {
					got = req.(interface {
						GetVolumeCapability() *csi.VolumeCapability
					}).GetVolumeCapability().GetMount().GetMountFlags()
					return nil, nil
				})
			if err != nil {
				t.Fatal(err)
			}
			log := buf.String()
			if !strings.Contains(log, "staging-path-3") || !strings.Contains(log, "***stripped***") {
				t.Fatalf("the request was not logged with its fields: the check would prove nothing:\n%s", log)
			}
			for _, leak := range []string{"flag-value-1", secret} {
				if strings.Contains(log, leak) {
					t.Errorf("%q reached the log:\n%s", leak, log)
				}
			}
			if !slices.Equal(got, []string{"ro", flag}) {
				t.Errorf("the handler got mount flags %q, want the request's", got)
			}
		})
	}
}
