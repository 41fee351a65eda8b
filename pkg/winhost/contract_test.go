package winhost_test

import (
	"context"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/host/hosttest"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/scripted"
)

// TestHostContract runs the host contract (pkg/host/hosttest) against the
// Windows host over the scripted executor. Each case's script is the
// exact sequence of calls winhost makes for it, answered as Windows does;
// where an answer stands for Windows output it says where that output is
// documented or seen, and "assumed" where no source says (the integration
// suite runs the same contract on Windows, test/integration). The calls
// are also checked against the WMI schema (schema_test.go).
func TestHostContract(t *testing.T) {
	hosttest.Run(t, scriptedEnv{})
}

type scriptedEnv struct{}

const (
	cDir  = `C:\var\lib\kubelet\plugins\contract\dir`
	lcDir = `\\?\` + cDir
	// ERROR_NOT_A_REPARSE_POINT: what DeleteVolumeMountPoint answers for
	// a plain directory (assumed: its page documents no error codes; the
	// integration run checks it).
	errNotAReparsePoint = 4390
)

func cPath(elem ...string) string {
	p := cDir
	for _, e := range elem {
		p += `\` + e
	}
	return p
}

func long(p string) string { return `\\?\` + p }

func (scriptedEnv) Prepare(t *testing.T, c *hosttest.Case) hosttest.Fixture {
	e := scripted.New(t)
	f := hosttest.Fixture{
		Host:          winhost.New(e),
		Dir:           cDir,
		Path:          cPath,
		MissingDisk:   99,
		MissingVolume: guidB,
		MissingShare:  `\\nosuchserver\share`,
		MissingPortal: ctNoPortal,
		MissingTarget: "iqn.2000-01.invalid:none",
	}
	// The disk a case is about: number 1, as diskInst reports it.
	disk := func(s diskSpec) {
		s.Number = 1
		f.Disk = diskOf(s)
	}
	gpt := host.PartitionStyleGPT
	data := partSpec{Disk: 1, Number: 2, Offset: dataOffset, Size: 10<<30 - 17<<20, GptType: host.GptTypeBasicData}
	volume := func(fs string, fsType int64) {
		f.Partition, _ = parsePart(t, partInst(data))
		v := volInst(guidA, fs, fsType, data.Size)
		f.Volume = host.Volume{Ref: v.Path, GUIDPath: guidA, FileSystem: fs, Size: data.Size, SizeRemaining: data.Size / 2}
	}
	notFound := scripted.Reply{Err: w32("GetFileAttributesW", winhost.ErrorFileNotFound)}

	switch c.Name {
	case "disks/get-missing":
		// No instance: the documented answer of a WQL query that matches
		// nothing (WHERE Clause (WMI)).
		e.ExpectQuery(ns, wqlDisk(99), scripted.Reply{})
	case "disks/identifiers-missing":
		// A disk the fixture names only by number has no device path: no
		// IOCTL is sent.
	case "disks/identifiers":
		disk(diskSpec{Style: gpt})
		// A Hyper-V disk as kubernetes-sigs/azuredisk-csi-driver#2661 shows
		// it: NAA 60022480… (its UniqueId, format "FCPH Name"), at
		// "Adapter 1 : Port 0 : Target 0 : LUN 1".
		e.ExpectWin32("StorageDeviceIDDescriptor", []any{devicePath(1)}, scripted.Reply{Bytes: winhost.BuildDeviceIDDescriptor(
			winhost.StorageID{CodeSet: 1, Type: 3, ID: []byte{0x60, 0x02, 0x24, 0x80, 0xf4, 0x8d, 0x29, 0x4f, 0x40, 0xf1, 0x87, 0x27, 0xdf, 0x9a, 0x63, 0x49}})})
		e.ExpectWin32("SCSIAddress", []any{devicePath(1)}, scripted.Reply{Bytes: []byte{8, 0, 0, 0, 1, 0, 0, 1}})
	case "disks/offline-set-read-only":
		// Uncertain which answer Windows gives (the case accepts both);
		// this script gives the refusal, the next case the success.
		offline := diskSpec{Number: 1, Style: gpt, Offline: true, OfflineReason: host.OfflineReasonPolicy}
		disk(offline)
		// 41003 "the disk is offline" (msft-disk-setattributes).
		e.ExpectCall(ns, setAttributes(1, true), rv(41003))
		e.ExpectQuery(ns, wqlDisk(1), scripted.Reply{Instances: []winhost.Instance{diskInst(offline)}})
	case "disks/offline-blank-clear-read-only":
		disk(diskSpec{ReadOnly: true, Offline: true, OfflineReason: host.OfflineReasonPolicy})
		// Success, the attribute cleared while the disk stays offline: what
		// HPE's common-host-libs relies on (Set-Disk -IsReadOnly $false
		// before -IsOffline $false, hpe-storage/common-host-libs
		// chapi2/multipath/multipath_windows.go at 55e77af) and the VDS
		// Online remarks describe. (41000 "the disk has not been
		// initialized" and 41003 are the refusals, both ErrNotReady:
		// disks_test.go.)
		e.ExpectCall(ns, setAttributes(1, false), rv(0))
		e.ExpectQuery(ns, wqlDisk(1), scripted.Reply{Instances: []winhost.Instance{
			diskInst(diskSpec{Number: 1, Offline: true, OfflineReason: host.OfflineReasonPolicy})}})
	case "disks/offline-initialize":
		disk(diskSpec{ReadOnly: true, Offline: true, OfflineReason: host.OfflineReasonPolicy})
		// 41003 "the disk is offline" (initialize-msft-disk).
		e.ExpectCall(ns, initialize(1), rv(41003))
	case "disks/read-only-initialize":
		disk(diskSpec{ReadOnly: true})
		// 41002 "the disk is read only" (initialize-msft-disk).
		e.ExpectCall(ns, initialize(1), rv(41002))
	case "disks/initialize-twice":
		disk(diskSpec{})
		e.ExpectCall(ns, initialize(1), rv(0))
		e.ExpectQuery(ns, wqlDisk(1), scripted.Reply{Instances: []winhost.Instance{diskInst(diskSpec{Number: 1, Style: gpt})}})
		// 41001 "the disk has already been initialized" (initialize-msft-disk).
		e.ExpectCall(ns, initialize(1), rv(41001))
	case "disks/online-offline-idempotent":
		disk(diskSpec{Style: gpt})
		offline := winhost.Method{Class: "MSFT_Disk", Path: diskRef(1), Name: "Offline"}
		online := winhost.Method{Class: "MSFT_Disk", Path: diskRef(1), Name: "Online"}
		// Success for a disk already in the state asked for: assumed (the
		// Online and Offline pages do not say).
		e.ExpectCall(ns, offline, rv(0)).ExpectCall(ns, offline, rv(0))
		e.ExpectQuery(ns, wqlDisk(1), scripted.Reply{Instances: []winhost.Instance{
			diskInst(diskSpec{Number: 1, Style: gpt, Offline: true, OfflineReason: host.OfflineReasonPolicy})}})
		e.ExpectCall(ns, online, rv(0)).ExpectCall(ns, online, rv(0))
		e.ExpectQuery(ns, wqlDisk(1), scripted.Reply{Instances: []winhost.Instance{diskInst(diskSpec{Number: 1, Style: gpt})}})
	case "disks/set-read-only-idempotent":
		disk(diskSpec{Style: gpt})
		// Setting the attribute it has already: assumed to succeed.
		e.ExpectCall(ns, setAttributes(1, true), rv(0)).ExpectCall(ns, setAttributes(1, true), rv(0))
		e.ExpectQuery(ns, wqlDisk(1), scripted.Reply{Instances: []winhost.Instance{diskInst(diskSpec{Number: 1, Style: gpt, ReadOnly: true})}})
		e.ExpectCall(ns, setAttributes(1, false), rv(0)).ExpectCall(ns, setAttributes(1, false), rv(0))
		e.ExpectQuery(ns, wqlDisk(1), scripted.Reply{Instances: []winhost.Instance{diskInst(diskSpec{Number: 1, Style: gpt})}})
	case "disks/critical-refused":
		f.Disk = diskOf(bootDisk) // refused before any call
	case "disks/resize-to-same-size":
		disk(diskSpec{Style: gpt})
		volume("", 0)
		// SizeMin and SizeMax as decimal strings (CIM uint64,
		// msft-partition-getsupportedsizes).
		e.ExpectCall(ns, winhost.Method{Class: "MSFT_Partition", Path: partRef(1, 2), Name: "GetSupportedSize"},
			scripted.Reply{Result: winhost.Result{Out: map[string]any{
				"SizeMin": "104857600", "SizeMax": itoa64(data.Size), "ExtendedStatus": nil}}})
	case "volumes/missing":
		e.ExpectQuery(ns, wqlVolume(guidB), scripted.Reply{})
		// CreateFile of a volume name no volume has: ERROR_FILE_NOT_FOUND
		// (assumed; ERROR_PATH_NOT_FOUND would read the same).
		e.ExpectWin32("VolumeDiskExtents", []any{guidB[:len(guidB)-1]}, scripted.Reply{Err: w32("CreateFileW", winhost.ErrorFileNotFound)})
	case "volumes/list":
		disk(diskSpec{Style: gpt})
		volume("NTFS", 14)
		d := data
		d.AccessPaths = []any{guidA}
		e.ExpectQuery(ns, wqlVolumeList, scripted.Reply{Instances: []winhost.Instance{volInst(guidA, "NTFS", 14, data.Size)}})
		e.ExpectQuery(ns, wqlPartitionPaths, scripted.Reply{Instances: []winhost.Instance{
			only(partInst(d), "ObjectId", "DiskNumber", "PartitionNumber", "AccessPaths")}})
	case "volumes/format":
		disk(diskSpec{Style: gpt})
		volume("", 0)
		e.ExpectCall(ns, format(guidA, formatParams("NTFS", "", 0)...), scripted.Reply{Result: winhost.Result{Out: map[string]any{
			"FormattedVolume": volInst(guidA, "NTFS", 14, data.Size), "ExtendedStatus": nil}}})
	case "volumes/flush-read-only":
		disk(diskSpec{Style: gpt, ReadOnly: true})
		volume("NTFS", 14)
		// Opening write-protected media for writing: ERROR_WRITE_PROTECT
		// ("The media is write protected", System Error Codes 0-499).
		e.ExpectWin32("FlushVolume", []any{guidA[:len(guidA)-1]}, scripted.Reply{Err: w32("CreateFileW", winhost.ErrorWriteProtect)})
	case "volumes/mount-points":
		disk(diskSpec{Style: gpt})
		volume("NTFS", 14)
		e.ExpectWin32("SetVolumeMountPoint", []any{cDir + `\`, guidA}, ok())
		e.ExpectWin32("GetFileAttributes", []any{lcDir}, scripted.Reply{Uint32: attrDir | attrReparse})
		e.ExpectWin32("ReadReparsePoint", []any{lcDir}, scripted.Reply{Bytes: mountPointReparse(guidA)})
		// SetVolumeMountPoint on a directory that is a mount point:
		// ERROR_DIR_NOT_EMPTY (csi-proxy relies on it, kubernetes-csi/csi-proxy
		// pkg/os/volume; the page lists no codes).
		e.ExpectWin32("SetVolumeMountPoint", []any{cDir + `\`, guidA}, scripted.Reply{Err: w32("SetVolumeMountPointW", winhost.ErrorDirNotEmpty)})
		e.ExpectWin32("GetFileAttributes", []any{lcDir}, scripted.Reply{Uint32: attrDir | attrReparse})
		e.ExpectWin32("ReadReparsePoint", []any{lcDir}, scripted.Reply{Bytes: mountPointReparse(guidA)})
		e.ExpectWin32("VolumeDiskExtents", []any{guidA[:len(guidA)-1]}, scripted.Reply{Bytes: winhost.BuildVolumeDiskExtents(1, 1)})
		e.ExpectWin32("DeleteVolumeMountPoint", []any{cDir + `\`}, ok())
		e.ExpectWin32("GetFileAttributes", []any{lcDir}, scripted.Reply{Uint32: attrDir})
		e.ExpectWin32("GetFileAttributes", []any{lcDir}, scripted.Reply{Uint32: attrDir})
		e.ExpectWin32("DirectoryHasEntries", []any{lcDir}, scripted.Reply{Bool: false})
		e.ExpectWin32("DeleteVolumeMountPoint", []any{cDir + `\`}, scripted.Reply{Err: w32("DeleteVolumeMountPointW", errNotAReparsePoint)})
	case "volumes/mount-non-empty-dir":
		disk(diskSpec{Style: gpt})
		volume("NTFS", 14)
		e.ExpectWin32("SetVolumeMountPoint", []any{cDir + `\`, guidA}, scripted.Reply{Err: w32("SetVolumeMountPointW", winhost.ErrorDirNotEmpty)})
	case "files/missing":
		p := long(cPath("missing"))
		e.ExpectWin32("GetFileAttributes", []any{p}, notFound)
		e.ExpectWin32("GetFileAttributes", []any{p}, notFound)
		e.ExpectWin32("GetFileAttributes", []any{p}, notFound)
	case "files/make-dir":
		a, b := long(cPath("a")), long(cPath("a", "b"))
		e.ExpectWin32("CreateDirectory", []any{b}, scripted.Reply{Err: w32("CreateDirectoryW", winhost.ErrorPathNotFound)})
		e.ExpectWin32("CreateDirectory", []any{a}, ok())
		e.ExpectWin32("CreateDirectory", []any{b}, ok())
		e.ExpectWin32("CreateDirectory", []any{b}, scripted.Reply{Err: w32("CreateDirectoryW", winhost.ErrorAlreadyExists)})
		e.ExpectWin32("GetFileAttributes", []any{b}, scripted.Reply{Uint32: attrDir})
		e.ExpectWin32("GetFileAttributes", []any{b}, scripted.Reply{Uint32: attrDir})
		e.ExpectWin32("GetFileAttributes", []any{b}, scripted.Reply{Uint32: attrDir})
		e.ExpectWin32("DirectoryHasEntries", []any{b}, scripted.Reply{Bool: false})
		e.ExpectWin32("GetFileAttributes", []any{b}, scripted.Reply{Uint32: attrDir})
		e.ExpectWin32("RemoveDirectory", []any{b}, ok())
		e.ExpectWin32("GetFileAttributes", []any{b}, notFound)
	case "files/links":
		target, link, sub := cPath("target"), long(cPath("link")), long(cPath("target", "sub"))
		symlink := winhost.BuildReparse(winhost.IOReparseTagSymlink, `\??\`+target, target, 0)
		e.ExpectWin32("CreateDirectory", []any{long(target)}, ok())
		e.ExpectWin32("CreateSymbolicLink", []any{link, target, uint32(3)}, ok())
		e.ExpectWin32("GetFileAttributes", []any{link}, scripted.Reply{Uint32: attrDir | attrReparse})
		e.ExpectWin32("ReadReparsePoint", []any{link}, scripted.Reply{Bytes: symlink})
		e.ExpectWin32("CreateSymbolicLink", []any{link, target, uint32(3)}, scripted.Reply{Err: w32("CreateSymbolicLinkW", winhost.ErrorAlreadyExists)})
		e.ExpectWin32("CreateDirectory", []any{sub}, ok())
		e.ExpectWin32("GetFileAttributes", []any{long(target)}, scripted.Reply{Uint32: attrDir})
		e.ExpectWin32("RemoveDirectory", []any{long(target)}, scripted.Reply{Err: w32("RemoveDirectoryW", winhost.ErrorDirNotEmpty)})
		e.ExpectWin32("GetFileAttributes", []any{link}, scripted.Reply{Uint32: attrDir | attrReparse})
		e.ExpectWin32("ReadReparsePoint", []any{link}, scripted.Reply{Bytes: symlink})
		e.ExpectWin32("RemoveDirectory", []any{link}, ok())
		e.ExpectWin32("GetFileAttributes", []any{long(target)}, scripted.Reply{Uint32: attrDir})
		e.ExpectWin32("GetFileAttributes", []any{link}, notFound)
	case "files/read-dir":
		target, link := cPath("target"), long(cPath("link"))
		e.ExpectWin32("CreateDirectory", []any{long(target)}, ok())
		e.ExpectWin32("CreateSymbolicLink", []any{link, target, uint32(3)}, ok())
		e.ExpectWin32("GetFileAttributes", []any{lcDir}, scripted.Reply{Uint32: attrDir})
		e.ExpectWin32("DirectoryEntries", []any{lcDir}, scripted.Reply{Strings: []string{"target", "link"}})
		e.ExpectWin32("GetFileAttributes", []any{link}, scripted.Reply{Uint32: attrDir | attrReparse})
		e.ExpectWin32("GetFileAttributes", []any{long(cPath("missing"))}, notFound)
	case "security/missing-volume":
		// Assumed: CreateFileW answers a volume GUID path no volume has
		// with ERROR_FILE_NOT_FOUND (the integration run checks it).
		e.ExpectWin32("FileSecurity", []any{guidB, dacl}, scripted.Reply{Err: w32("CreateFile", winhost.ErrorFileNotFound)})
		e.ExpectWin32("UpdateFileDACL", []any{guidB}, scripted.Reply{Err: w32("CreateFile", winhost.ErrorFileNotFound)})
	case "security/add-root-allow-entries":
		volume("NTFS", 14)
		// The root as the Windows Server dump of kubernetes/kubernetes#131341
		// shows it (security_test.go), then the exact DACL written.
		root, granted := scripted.Reply{Bytes: hexBytes(t, serverRoot)}, scripted.Reply{Bytes: hexBytes(t, serverRootGranted)}
		e.ExpectWin32("FileSecurity", []any{guidA, dacl}, root)
		e.ExpectWin32("UpdateFileDACL", []any{guidA}, root)
		e.ExpectWin32("SetSecurityInfo", []any{guidA, dacl, hexBytes(t, serverRootGrantedACL)}, ok())
		e.ExpectWin32("FileSecurity", []any{guidA, dacl}, granted)
		e.ExpectWin32("UpdateFileDACL", []any{guidA}, granted)
		e.ExpectWin32("FileSecurity", []any{guidA, dacl}, granted)
	case "security/invalid-entry":
		volume("NTFS", 14) // refused before any call
	case "security/unknown-account":
		e.ExpectWin32("LookupAccountName", []any{"csi-windows-node-no-such-account"},
			scripted.Reply{Err: w32("LookupAccountName", winhost.ErrorNoneMapped)})
	case "context/ended":
		// The executor answers an ended context with ctx.Err() (the
		// scripted executor does so once the call matches).
		e.ExpectQuery(ns, wqlDisks, scripted.Reply{})
		e.ExpectQuery(ns, wqlVolume(guidB), scripted.Reply{})
		e.ExpectWin32("GetFileAttributes", []any{lcDir}, scripted.Reply{Uint32: attrDir})
		e.ExpectQuery(nsSMB, wqlMapping(`\\nosuchserver\share`), scripted.Reply{})
		e.ExpectWin32("GetFileAttributes", []any{lcDir}, scripted.Reply{Uint32: attrDir})
		e.ExpectQuery(nsSMB, wqlMappings, scripted.Reply{})
		e.ExpectQuery(iscNS, wqlPortalList, scripted.Reply{})
		e.ExpectWin32("FileSecurity", []any{guidB, dacl}, scripted.Reply{})
	default:
		if !prepareNet(t, c, e, &f) {
			t.Fatalf("no script for case %s", c.Name)
		}
	}
	return f
}

func initialize(n uint32) winhost.Method {
	return winhost.Method{Class: "MSFT_Disk", Path: diskRef(n), Name: "Initialize",
		In: []winhost.Param{{Name: "PartitionStyle", Value: uint16(host.PartitionStyleGPT)}}}
}

// parsePart reads a partition instance as Disks.Partitions would.
func parsePart(t *testing.T, in winhost.Instance) (host.Partition, error) {
	t.Helper()
	e := scripted.New(t)
	e.ExpectQuery(ns, wqlPartsOf(1), scripted.Reply{Instances: []winhost.Instance{in}})
	parts, err := winhost.NewDisks(e).Partitions(context.Background(), host.Disk{Number: 1, Ref: diskRef(1)})
	if err != nil || len(parts) != 1 {
		t.Fatalf("parse partition: %v, %v", parts, err)
	}
	return parts[0], nil
}
