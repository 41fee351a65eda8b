package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/sim"
)

// The driver name testbin starts the plugin with.
const driverName = "sim.csi.wincsi.io"

// Sizes the controller double gives volumes. Disks are attached at
// diskSize and grown to expandedSize before the plugin starts; the sim
// shows the new size after the next rescan, which only NodeExpandVolume
// does, so expansion really grows the partition.
const (
	diskSize     = 1 << 30
	expandedSize = 2 << 30
)

// SMB and iSCSI fixtures.
const (
	smbServer   = "fileserver"
	smbUser     = "svc-k8s"
	smbPassword = "Correct-Horse-9"
	iscsiIQN    = "iqn.2024-01.io.wincsi.sim:bench"
	iscsiPortal = "10.0.0.1"
)

// volume is one volume as kubelet sees it: its ID, where kubelet stages
// and publishes it, and what the controller put in its contexts.
type volume struct {
	id      string
	staging string
	target  string
	vctx    map[string]string
	secrets map[string]string

	// For setup.
	share string // SMB share name
	iqn   string // iSCSI target
	lun   uint32 // iSCSI LUN
}

// backend describes one volume kind.
type backend struct {
	name string
	// expand reports whether NodeExpandVolume is measured and whether it
	// grows the volume (false: the volume already fills its device).
	expand, grows bool
	// expandTo is the required_bytes of NodeExpandVolume.
	expandTo int64
	// newVolume makes volume i of a set; shares spreads SMB volumes over
	// that many shares of the set's own (iSCSI volumes are LUNs of one
	// target of the set's own).
	newVolume func(kubelet, set string, i, shares int) volume
	// setup prepares the sim for the volumes (with the sim closed to the
	// plugin).
	setup func(s *sim.Sim, vols []volume) error
}

var backends = map[string]backend{
	"disk":  {name: "disk", expand: true, grows: true, expandTo: expandedSize, newVolume: diskVolume, setup: setupGrownDisks},
	"smb":   {name: "smb", newVolume: smbVolume, setup: setupShares},
	"iscsi": {name: "iscsi", expand: true, expandTo: diskSize, newVolume: iscsiVolume, setup: setupTarget},
}

// paths returns kubelet's staging and publish paths for a volume ID, as
// kubelet 1.2x lays them out.
func paths(kubelet, id string) (staging, target string) {
	sum := sha256.Sum256([]byte(id))
	staging = filepath.Join(kubelet, "plugins", "kubernetes.io", "csi", driverName, hex.EncodeToString(sum[:]), "globalmount")
	target = filepath.Join(kubelet, "pods", "pod-"+hex.EncodeToString(sum[:8]), "volumes", "kubernetes.io~csi", id, "mount")
	return staging, target
}

func diskVolume(kubelet, set string, i, _ int) volume {
	id := fmt.Sprintf("bench-%s-%04d", set, i)
	staging, target := paths(kubelet, id)
	return volume{id: id, staging: staging, target: target, vctx: map[string]string{"diskSerial": id}}
}

func smbVolume(kubelet, set string, i, shares int) volume {
	id := fmt.Sprintf("bench-%s-%04d", set, i)
	staging, target := paths(kubelet, id)
	share := fmt.Sprintf("%s%02d", set, i%max(shares, 1))
	return volume{id: id, staging: staging, target: target, share: share,
		vctx:    map[string]string{"source": "//" + smbServer + "/" + share, "subDir": id},
		secrets: map[string]string{"username": smbUser, "password": smbPassword}}
}

func iscsiVolume(kubelet, set string, i, _ int) volume {
	id := fmt.Sprintf("bench-%s-%04d", set, i)
	staging, target := paths(kubelet, id)
	iqn := iscsiIQN + "-" + strings.Trim(set, "-")
	return volume{id: id, staging: staging, target: target, iqn: iqn,
		vctx: map[string]string{"targetPortal": iscsiPortal + ":3260", "iqn": iqn}}
}

// setupGrownDisks attaches the volumes' disks and grows each to
// expandedSize, visible after the next rescan.
func setupGrownDisks(s *sim.Sim, vols []volume) error { return attachDisks(s, vols, true) }

// setupDisks attaches the volumes' disks.
func setupDisks(s *sim.Sim, vols []volume) error { return attachDisks(s, vols, false) }

// attachDisks attaches one blank, offline disk per volume, its serial the
// volume ID: what a controller's ControllerPublishVolume does before
// kubelet calls NodeStageVolume.
func attachDisks(s *sim.Sim, vols []volume, grow bool) error {
	for i, v := range vols {
		n, err := s.AttachDisk(sim.DiskSpec{Serial: v.id, Adapter: 1, Target: uint32(i / 256), LUN: uint32(i % 256),
			Size: diskSize, Offline: true})
		if err != nil {
			return fmt.Errorf("attach the disk of %s: %w", v.id, err)
		}
		if !grow {
			continue
		}
		if err := s.ResizeDisk(n, expandedSize); err != nil {
			return fmt.Errorf("grow the disk of %s: %w", v.id, err)
		}
	}
	return nil
}

// setupShares adds the shares the volumes use and makes each volume's
// directory on its share (as SMB controllers do on CreateVolume).
func setupShares(s *sim.Sim, vols []volume) error {
	seen := map[string]bool{}
	for _, v := range vols {
		if !seen[v.share] {
			seen[v.share] = true
			if err := s.AddShare(sim.ShareSpec{Server: smbServer, Share: v.share, Users: map[string]string{smbUser: smbPassword}}); err != nil {
				return err
			}
		}
		if err := os.MkdirAll(filepath.Join(s.Dir(), "smb", smbServer, v.share, v.id), 0o750); err != nil {
			return err
		}
	}
	return nil
}

// setupTarget adds the volumes' targets (one per set) with a LUN per
// volume, numbered from 1 on each target, and sets each volume's lun key.
func setupTarget(s *sim.Sim, vols []volume) error {
	luns := map[string][]sim.LUNSpec{}
	var iqns []string
	for i := range vols {
		iqn := vols[i].iqn
		if _, ok := luns[iqn]; !ok {
			iqns = append(iqns, iqn)
		}
		n := uint32(len(luns[iqn]) + 1)
		vols[i].lun = n
		vols[i].vctx["lun"] = strconv.Itoa(int(n))
		luns[iqn] = append(luns[iqn], sim.LUNSpec{LUN: n, Size: diskSize})
	}
	for _, iqn := range iqns {
		if err := s.AddTarget(sim.TargetSpec{IQN: iqn, Portals: []host.Portal{{Address: iscsiPortal, Port: 3260}}, LUNs: luns[iqn]}); err != nil {
			return err
		}
	}
	return nil
}

// prepare sets up the sim in dir for vols and creates the directories
// kubelet makes before it calls the plugin: the staging directory and the
// parent of the publish path.
func prepare(b backend, dir string, vols []volume) error {
	s, err := sim.New(sim.Config{Dir: filepath.Join(dir, "sim")})
	if err != nil {
		return err
	}
	serr := b.setup(s, vols)
	if err := s.Close(); err != nil && serr == nil {
		serr = err
	}
	if serr != nil {
		return fmt.Errorf("set up the %s host: %w", b.name, serr)
	}
	for _, v := range vols {
		if err := os.MkdirAll(v.staging, 0o750); err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(v.target), 0o750); err != nil {
			return err
		}
	}
	return nil
}

// volumeSet makes n volumes of set named set.
func volumeSet(b backend, kubelet, set string, n, shares int) []volume {
	vols := make([]volume, n)
	for i := range vols {
		vols[i] = b.newVolume(kubelet, set, i, shares)
	}
	return vols
}

var mountCap = &csi.VolumeCapability{
	AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: "ntfs"}},
	AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
}

func (v volume) stage() *csi.NodeStageVolumeRequest {
	return &csi.NodeStageVolumeRequest{VolumeId: v.id, StagingTargetPath: v.staging, VolumeCapability: mountCap,
		VolumeContext: v.vctx, Secrets: v.secrets}
}

func (v volume) publish() *csi.NodePublishVolumeRequest {
	return &csi.NodePublishVolumeRequest{VolumeId: v.id, StagingTargetPath: v.staging, TargetPath: v.target,
		VolumeCapability: mountCap, VolumeContext: v.vctx}
}

func (v volume) stats() *csi.NodeGetVolumeStatsRequest {
	return &csi.NodeGetVolumeStatsRequest{VolumeId: v.id, VolumePath: v.target, StagingTargetPath: v.staging}
}

func (v volume) expand(required int64) *csi.NodeExpandVolumeRequest {
	return &csi.NodeExpandVolumeRequest{VolumeId: v.id, VolumePath: v.target, StagingTargetPath: v.staging,
		VolumeCapability: mountCap, CapacityRange: &csi.CapacityRange{RequiredBytes: required}}
}

func (v volume) unpublish() *csi.NodeUnpublishVolumeRequest {
	return &csi.NodeUnpublishVolumeRequest{VolumeId: v.id, TargetPath: v.target}
}

func (v volume) unstage() *csi.NodeUnstageVolumeRequest {
	return &csi.NodeUnstageVolumeRequest{VolumeId: v.id, StagingTargetPath: v.staging}
}
