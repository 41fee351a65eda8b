package main

import (
	"context"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/config"
	"github.com/wincsi/csi-windows-node/pkg/host"
)

// windowsHost returns the Windows host. Areas whose executor has not been
// built answer ErrNotImplemented (gRPC Unimplemented), never fake success.
func windowsHost(ctx context.Context, _ *config.Options) (host.Host, func(), error) {
	klog.FromContext(ctx).Info("Windows host: disk, SMB and iSCSI executors are not built yet; host calls return Unimplemented")
	return host.Unimplemented(), func() {}, nil
}
