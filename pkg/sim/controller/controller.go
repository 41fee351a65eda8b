package controller

import (
	"context"
	"errors"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"
	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/sim"
)

// keyDiskSerial is the parameter that names a disk volume's disk by
// serial number (docs/parameters.md), which the stand-in sets in
// publish_context as a controller would.
const keyDiskSerial = "diskSerial"

// Options say what the stand-in does besides naming disks.
type Options struct {
	// Attach attaches the disk of a disk volume the simulated host has
	// not seen, and grows it on expansion (--sim-auto-attach).
	Attach bool
	// DiskSize is the size of a blank disk it attaches (--sim-disk-size);
	// 0 means sim.DefaultDiskSize.
	DiskSize uint64
}

// Wrap returns a function that wraps a node service with the stand-in for
// the controller of the simulated host s: the value of
// plugin.Host.Controller, which plugin.New calls with its node service and
// the contract options that service parses volumes with.
func Wrap(s *sim.Sim, o Options) func(csi.NodeServer, contract.Options) csi.NodeServer {
	return func(node csi.NodeServer, c contract.Options) csi.NodeServer {
		return &server{NodeServer: node, sim: s, opts: o, contract: c}
	}
}

// server is the node service with the controller's part in front of it.
type server struct {
	csi.NodeServer
	sim      *sim.Sim
	opts     Options
	contract contract.Options
}

// NodeStageVolume names and attaches a disk volume's disk, then stages.
func (s *server) NodeStageVolume(ctx context.Context, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	req, serial := s.publish(req)
	if serial != "" && s.opts.Attach {
		n, attached, err := s.sim.AttachVolumeDisk(serial, s.opts.DiskSize)
		if err != nil {
			// The node reports the missing disk in its own words.
			klog.FromContext(ctx).Error(err, "Simulating the controller: cannot attach the volume's disk")
		} else if attached {
			klog.FromContext(ctx).V(2).Info("Simulating the controller: attached the volume's disk", "serial", serial, "diskNumber", n)
		}
	}
	return s.NodeServer.NodeStageVolume(ctx, req)
}

// publish returns the request as a controller's ControllerPublishVolume
// would have made it, and the serial of the disk the stand-in attaches for
// it ("" for none): a disk volume that names no disk gets diskSerial, the
// volume ID, in publish_context; a disk volume named by the volume ID's
// serial is the stand-in's to attach. Anything else, a request the
// contract refuses included, is returned as it came.
func (s *server) publish(req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeRequest, string) {
	id := req.GetVolumeId()
	r := contract.Request{
		VolumeID:       id,
		VolumeContext:  req.GetVolumeContext(),
		PublishContext: req.GetPublishContext(),
		Secrets:        req.GetSecrets(),
		FsType:         req.GetVolumeCapability().GetMount().GetFsType(),
	}
	vol, err := contract.Parse(r, s.contract)
	if err != nil {
		// Parsed again as if the volume ID named the disk: if that
		// succeeds, the only fault was a disk volume naming no disk.
		o := s.contract
		o.VolumeIDDisk = contract.VolumeIDDiskSerial
		if vol, err = contract.Parse(r, o); err != nil || vol.Kind != contract.KindDisk {
			return req, ""
		}
		named := proto.Clone(req).(*csi.NodeStageVolumeRequest)
		named.PublishContext = map[string]string{keyDiskSerial: id}
		for k, v := range req.GetPublishContext() {
			named.PublishContext[k] = v
		}
		req = named
	}
	if vol.Kind != contract.KindDisk || !isVolumeIDSerial(vol.Disk.Selector, id) {
		return req, ""
	}
	return req, id
}

// isVolumeIDSerial reports whether sel selects exactly the disk whose
// serial is the volume ID.
func isVolumeIDSerial(sel contract.DiskSelector, id string) bool {
	return sel == contract.DiskSelector{Serial: id}
}

// NodeExpandVolume grows the volume's disk, then expands.
func (s *server) NodeExpandVolume(ctx context.Context, req *csi.NodeExpandVolumeRequest) (*csi.NodeExpandVolumeResponse, error) {
	if required := req.GetCapacityRange().GetRequiredBytes(); s.opts.Attach && required > 0 && req.GetVolumeId() != "" {
		n, from, to, err := s.sim.GrowVolumeDisk(req.GetVolumeId(), uint64(required))
		switch {
		case errors.Is(err, host.ErrNotFound):
			// Not a disk the stand-in attached (an smb or iscsi volume).
		case err != nil:
			klog.FromContext(ctx).Error(err, "Simulating the controller: cannot grow the volume's disk")
		case to > from:
			klog.FromContext(ctx).Info("Simulating the controller's expansion: growing the volume's disk before the node rescans",
				"diskNumber", n, "from", from, "to", to)
		}
	}
	return s.NodeServer.NodeExpandVolume(ctx, req)
}
