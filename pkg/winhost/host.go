package winhost

import "github.com/wincsi/csi-windows-node/pkg/host"

// New returns the Windows host over an executor: disks, volumes, files,
// SMB global mappings, the iSCSI initiator and the access control of
// volume roots.
func New(e Executor) host.Host {
	return host.Host{
		Disks:    NewDisks(e),
		Volumes:  NewVolumes(e),
		Files:    NewFiles(e),
		SMB:      NewSMB(e),
		ISCSI:    NewISCSI(e),
		Security: NewSecurity(e),
	}
}
