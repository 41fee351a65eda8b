package winhost_test

import (
	"bytes"
	"context"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/plugin"
	"github.com/wincsi/csi-windows-node/pkg/selftest"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/recording"
	"github.com/wincsi/csi-windows-node/pkg/winhost/scripted"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// selftest over the scripted executor: the complete, ordered script of the
// calls csi-windows-node selftest --backends=disk makes on a Windows Server
// 2022 node, answered as Windows answers (the replies of this package's
// other tests, whose sources they cite). It is recorded, and the recording
// is the one committed as testdata/recordings/selftest-disk.scripted.jsonl,
// which the replay test runs again (replay_test.go). Run with -update after
// a change of the calls selftest makes, and read the diff.

var update = flag.Bool("update", false, "rewrite testdata/recordings/selftest-disk.scripted.jsonl from the scripted selftest")

const scriptedRecording = "testdata/recordings/selftest-disk.scripted.jsonl"

// The scripted node and run.
const (
	stWork     = `C:\ProgramData\csi-windows-node\selftest`
	stRun      = "5c1f7e3a"
	stRunDir   = stWork + `\csiwn-st-` + stRun
	stKubelet  = stRunDir + `\kubelet`
	stComputer = "NODE1"
)

// missingFS is the file system the node service checks request paths
// with in a scripted run: nothing exists on the machine running the test
// (the paths are the scripted Windows host's).
type missingFS struct{}

func (missingFS) Lstat(name string) (fs.FileInfo, error) { return nil, fs.ErrNotExist }
func (missingFS) Readlink(string) (string, error)        { return "", fs.ErrNotExist }

// selftestConfig is the configuration of the scripted run (and of its
// replay, which reads the same from the recording's header).
func selftestConfig(localDir string) selftest.Config {
	return selftest.Config{
		Backends: []string{selftest.BackendDisk},
		WorkDir:  stWork,
		LocalDir: localDir,
		Run:      stRun,
		Plugin:   selftestPluginOptions(plugin.Options{OfflineDiskOnUnstage: true}),
	}
}

// selftestPluginOptions adds what a test run needs and a recording does
// not say: the node service's file system and quick waits.
func selftestPluginOptions(o plugin.Options) plugin.Options {
	o.FS = missingFS{}
	o.Backoff = backend.Backoff{Initial: time.Millisecond, Max: time.Millisecond, Attempts: 3}
	return o
}

func runSelftest(t *testing.T, e winhost.AdminExecutor, cfg selftest.Config) *selftest.Report {
	t.Helper()
	rep, err := selftest.Run(context.Background(), selftest.Node{Host: winhost.New(e), Admin: winhost.NewAdmin(e), Style: winpath.Windows}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestScriptedSelftestRecording(t *testing.T) {
	e := scripted.New(t)
	scriptSelftestDisk(e)
	cfg := selftestConfig(t.TempDir())
	var buf bytes.Buffer
	rec, err := recording.NewRecorder(e, &buf, recording.Header{Source: recording.SourceScripted, Scenario: recording.ScenarioSelftest,
		Params: cfg.Params(), Windows: "Microsoft Windows Server 2022 Datacenter 10.0.20348.2849"})
	if err != nil {
		t.Fatal(err)
	}
	rep := runSelftest(t, rec, cfg)
	if t.Failed() && os.Getenv("SELFTEST_CALLS") != "" {
		for i, c := range e.Calls() {
			t.Logf("%d %s %s %s %s %v", i+1, c.Kind, c.WQL, c.Method.Class+"."+c.Method.Name, c.Path, c.Args)
		}
	}
	for _, s := range rep.Steps {
		if s.Result != selftest.Pass {
			t.Errorf("%s %s: %s %s", s.Backend, s.Name, s.Result, s.Detail)
		}
	}
	if err := rec.WriteResult(rep.Outcome()); err != nil {
		t.Fatal(err)
	}
	got := zeroDurations(t, buf.Bytes())
	if *update {
		if err := os.MkdirAll(filepath.Dir(scriptedRecording), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(scriptedRecording, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(scriptedRecording)
	if err != nil {
		t.Fatal(err)
	}
	// A checkout on Windows may have turned the line ends into CRLF.
	if !bytes.Equal(got, bytes.ReplaceAll(want, []byte("\r\n"), []byte("\n"))) {
		t.Errorf("%s is not what the scripted selftest records now; run go test ./pkg/winhost -run TestScriptedSelftestRecording -update and read the diff", scriptedRecording)
	}
}

// zeroDurations makes a recording reproducible: the durations of a
// scripted run are the test's own.
func zeroDurations(t *testing.T, b []byte) []byte {
	t.Helper()
	f, err := recording.Read(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w, err := recording.NewWriter(&out, f.Header)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range f.Lines {
		l.DurationMs = 0
		if err := w.Line(l); err != nil {
			t.Fatal(err)
		}
	}
	if f.Result != nil {
		if err := w.Raw(f.Result); err != nil {
			t.Fatal(err)
		}
	}
	return out.Bytes()
}

// st lays out a scripted selftest: helpers for the calls winhost makes for
// each host operation, answered as the tests of that operation answer.
type st struct{ e *scripted.Executor }

// dir: GetFileAttributes of a plain directory.
func (s st) dir(p string) {
	s.e.ExpectWin32("GetFileAttributes", []any{long(p)}, scripted.Reply{Uint32: attrDir})
}

// gone: GetFileAttributes of a missing path.
func (s st) gone(p string) {
	s.e.ExpectWin32("GetFileAttributes", []any{long(p)}, scripted.Reply{Err: w32("GetFileAttributes", winhost.ErrorFileNotFound)})
}

// mounted: Stat of a volume mount point.
func (s st) mounted(p, guid string) {
	s.e.ExpectWin32("GetFileAttributes", []any{long(p)}, scripted.Reply{Uint32: attrDir | attrReparse})
	s.e.ExpectWin32("ReadReparsePoint", []any{long(p)}, scripted.Reply{Bytes: mountPointReparse(guid)})
}

// linked: Stat of a directory symbolic link to target (CreateSymbolicLink
// stores \??\ plus the target as the substitute name).
func (s st) linked(p, target string) {
	s.e.ExpectWin32("GetFileAttributes", []any{long(p)}, scripted.Reply{Uint32: attrDir | attrReparse})
	s.e.ExpectWin32("ReadReparsePoint", []any{long(p)}, scripted.Reply{Bytes: winhost.BuildReparse(winhost.IOReparseTagSymlink, `\??\`+target, target, 0)})
}

// mkdirs: MakeDir of p whose ancestors up to (not including) exists are
// missing: ERROR_PATH_NOT_FOUND up the chain, then created down.
func (s st) mkdirs(p, exists string) {
	var chain []string
	for cur := p; cur != exists; cur = cur[:strings.LastIndex(cur, `\`)] {
		chain = append(chain, cur)
	}
	for _, c := range chain[:len(chain)-1] {
		s.e.ExpectWin32("CreateDirectory", []any{long(c)}, scripted.Reply{Err: w32("CreateDirectory", winhost.ErrorPathNotFound)})
	}
	for i := len(chain) - 1; i >= 0; i-- {
		s.e.ExpectWin32("CreateDirectory", []any{long(chain[i])}, ok())
	}
}

// mkdirExisting: MakeDir of a directory that exists (ERROR_ALREADY_EXISTS,
// then its attributes).
func (s st) mkdirExisting(p string) {
	s.e.ExpectWin32("CreateDirectory", []any{long(p)}, scripted.Reply{Err: w32("CreateDirectory", winhost.ErrorAlreadyExists)})
	s.dir(p)
}

// listing: ReadDir of a plain directory.
func (s st) listing(p string, names ...string) {
	s.dir(p)
	s.e.ExpectWin32("DirectoryEntries", []any{long(p)}, scripted.Reply{Strings: names})
}

// rmdir: Files.Remove of an empty plain directory.
func (s st) rmdir(p string) {
	s.dir(p)
	s.e.ExpectWin32("RemoveDirectory", []any{long(p)}, ok())
}

// tree is a directory tree for rmTree: a name and its subdirectories.
type tree struct {
	name string
	sub  []tree
}

// rmTree: selftest's removal of a tree of empty directories: Stat, ReadDir,
// the subtrees, Remove.
func (s st) rmTree(parent string, t tree) {
	p := parent + `\` + t.name
	s.dir(p)
	var names []string
	for _, c := range t.sub {
		names = append(names, c.name)
	}
	s.listing(p, names...)
	for _, c := range t.sub {
		s.rmTree(p, c)
	}
	s.rmdir(p)
}

// The VHDX as MSFT_Disk reports it once attached: File Backed Virtual
// (BusType 15, MSFT_Disk page), online under the OfflineShared SAN policy
// (it is not on a shared bus: VDS_SAN_POLICY), no location (NULL for VHD
// disks, MSFT_Disk page). Its serial number and unique ID are not
// documented for a loopback-attached VHDX: the first Windows recording
// will tell (docs/selftest.md).
func vhdxDisk(size uint64, style host.PartitionStyle, offline bool) winhost.Instance {
	in := diskInst(diskSpec{Number: 1, Location: nil, Size: size, Style: style, Offline: offline, OfflineReason: host.OfflineReasonPolicy})
	in.Props["BusType"] = int64(host.BusTypeFileBacked)
	in.Props["SerialNumber"] = ""
	return in
}

// scriptSelftestDisk lays out the calls of the scripted run.
func scriptSelftestDisk(e *scripted.Executor) {
	s := st{e}
	// Run: the Windows version, the work directory (its parent made too),
	// what an earlier run left (nothing), the node's shares, mappings and
	// users.
	e.ExpectQuery(nsCIMV2, wqlOS, scripted.Reply{Instances: []winhost.Instance{osInst("20348")}})
	e.ExpectWin32("RegistryValue", []any{keyCurVer, "UBR"}, scripted.Reply{Value: uint32(2849)})
	e.ExpectWin32("RegistryValue", []any{keyCurVer, "DisplayVersion"}, scripted.Reply{Value: "21H2"})
	s.mkdirs(stWork, `C:\ProgramData`)
	s.listing(stWork)
	e.ExpectQuery(winhost.NamespaceSMB, wqlShares, scripted.Reply{Instances: []winhost.Instance{
		shareInst("ADMIN$", `C:\Windows`), shareInst("C$", `C:\`), shareInst("IPC$", "")}})
	e.ExpectQuery(winhost.NamespaceSMB, "SELECT * FROM MSFT_SmbGlobalMapping", scripted.Reply{})
	e.ExpectQuery(nsCIMV2, wqlUsers, scripted.Reply{Instances: []winhost.Instance{userInst("Administrator"), userInst("DefaultAccount"), userInst("Guest")}})

	// wire the plugin: the run's directory and kubelet directory.
	s.mkdirs(stRunDir, stWork)
	s.mkdirs(stKubelet, stRunDir)

	scriptDiskPass(s, "-disk", "NTFS", 14, guidA, true)
	scriptDiskPass(s, "-refs", "ReFS", 15, guidB, false)

	// The run's directory goes: the kubelet tree kubelet would have made.
	vol := func(id string) tree { return tree{name: id, sub: []tree{{name: "globalmount"}}} }
	s.dir(stRunDir)
	s.listing(stRunDir, "kubelet")
	s.rmTree(stRunDir, tree{name: "kubelet", sub: []tree{
		{name: "plugins", sub: []tree{{name: "kubernetes.io", sub: []tree{{name: "csi", sub: []tree{{name: selftest.DriverName, sub: []tree{
			vol("csiwn-st-" + stRun + "-disk"), vol("csiwn-st-" + stRun + "-refs")}}}}}}}},
		{name: "pods", sub: []tree{{name: "csiwn-st-" + stRun, sub: []tree{{name: "volumes", sub: []tree{{name: "kubernetes.io~csi", sub: []tree{
			{name: "csiwn-st-" + stRun + "-disk"}, {name: "csiwn-st-" + stRun + "-refs"}}}}}}}}},
	}})
	s.rmdir(stRunDir)
}

func userInst(name string) winhost.Instance {
	return winhost.Instance{Path: `\\NODE1\root\cimv2:Win32_UserAccount.Domain="NODE1",Name="` + name + `"`, Class: "Win32_UserAccount",
		Props: map[string]any{"Name": name}}
}

// scriptDiskPass lays out one disk pass: a 3 GiB VHDX attached as disk 1,
// staged (GPT, one partition, format), published, written and read, its
// stats, grown to 4 GiB and expanded, its health, unpublished, unstaged
// (offline), staged and published again, read, unpublished, unstaged,
// detached and deleted.
func scriptDiskPass(s st, suffix, fs string, fsType int64, guid string, firstPass bool) {
	e := s.e
	id := "csiwn-st-" + stRun + suffix
	vhdx := stRunDir + `\` + id + ".vhdx"
	staging := stKubelet + `\plugins\kubernetes.io\csi\` + selftest.DriverName + `\` + id + `\globalmount`
	targetParent := stKubelet + `\pods\csiwn-st-` + stRun + `\volumes\kubernetes.io~csi\` + id
	target := targetParent + `\mount`
	file := target + `\csiwn-st-` + stRun + ".txt"
	data := []byte("csi-windows-node selftest " + stRun + " " + id + "\n")
	const size, grown = 3 << 30, 4 << 30
	dataSize := uint64(size - 17<<20)
	grownSize := uint64(grown - 17<<20 - 1<<20)
	msr := partSpec{Disk: 1, Number: 1, Offset: msrOffset, Size: msrSize, GptType: host.GptTypeMSR}
	part := partSpec{Disk: 1, Number: 2, Offset: dataOffset, Size: dataSize, GptType: host.GptTypeBasicData}
	bigPart := part
	bigPart.Size = grownSize

	// create and attach.
	e.ExpectWin32("CreateVirtualDisk", []any{vhdx, uint64(size)}, ok())
	e.ExpectWin32("AttachVirtualDisk", []any{vhdx}, scripted.Reply{String: `\\.\PhysicalDrive1`})

	// stage: kubelet's staging directory, then the disk backend on a
	// fresh RAW disk (TestBackendStageFreshDisk, online this time).
	if firstPass {
		s.mkdirs(staging, stKubelet)
	} else {
		s.mkdirs(staging, stKubelet+`\plugins\kubernetes.io\csi\`+selftest.DriverName)
	}
	s.dir(staging)
	e.ExpectQuery(ns, wqlDisks, scripted.Reply{Instances: []winhost.Instance{diskInst(bootDisk), vhdxDisk(size, host.PartitionStyleRAW, false)}})
	// Read again before the first write: still the disk chosen.
	e.ExpectQuery(ns, wqlDisk(1), scripted.Reply{Instances: []winhost.Instance{vhdxDisk(size, host.PartitionStyleRAW, false)}})
	e.ExpectCall(ns, winhost.Method{Class: "MSFT_Disk", Path: diskRef(1), Name: "Initialize",
		In: []winhost.Param{{Name: "PartitionStyle", Value: uint16(2)}}}, rv(0))
	e.ExpectCall(ns, winhost.Method{Class: "MSFT_Disk", Path: diskRef(1), Name: "CreatePartition", In: []winhost.Param{
		{Name: "UseMaximumSize", Value: true}, {Name: "AssignDriveLetter", Value: false},
		{Name: "GptType", Value: host.GptTypeBasicData}}},
		scripted.Reply{Result: winhost.Result{Out: createdPartition(partInst(part))}})
	e.ExpectAssociators(ns, partRef(1, 2), "MSFT_PartitionToVolume", "MSFT_Volume",
		scripted.Reply{Instances: []winhost.Instance{volInst(guid, "", 0, dataSize)}})
	e.ExpectCall(ns, format(guid, formatParams(fs, "", 0)...),
		scripted.Reply{Result: winhost.Result{Out: map[string]any{"FormattedVolume": volInst(guid, fs, fsType, dataSize)}}})
	e.ExpectWin32("SetVolumeMountPoint", []any{staging + `\`, guid}, ok())

	// publish: the pod's volume directory (kubelet's), then the link.
	publish := func(first bool) {
		if first && firstPass {
			s.mkdirs(targetParent, stKubelet)
		} else if first {
			s.mkdirs(targetParent, stKubelet+`\pods\csiwn-st-`+stRun+`\volumes\kubernetes.io~csi`)
		} else {
			s.mkdirExisting(targetParent)
		}
		s.mounted(staging, guid)
		s.gone(target)
		e.ExpectWin32("CreateSymbolicLink", []any{long(target), staging, uint32(3)}, ok())
	}
	publish(true)

	// write and read back through the link.
	e.ExpectWin32("WriteFile", []any{file, data}, ok())
	e.ExpectWin32("ReadFile", []any{file}, scripted.Reply{Bytes: data})

	// stats: the publication is checked, then GetDiskFreeSpaceEx.
	stats := func(total uint64) {
		s.linked(target, staging)
		e.ExpectWin32("GetDiskFreeSpaceEx", []any{target + `\`}, scripted.Reply{Space: [3]uint64{total - 80<<20, total, total - 80<<20}})
	}
	stats(dataSize)

	// grow and expand (TestBackendExpand).
	e.ExpectWin32("ResizeVirtualDisk", []any{vhdx, uint64(grown)}, ok())
	s.linked(target, staging)
	s.mounted(staging, guid)
	e.ExpectWin32("VolumeDiskExtents", []any{guid[:len(guid)-1]}, scripted.Reply{Bytes: winhost.BuildVolumeDiskExtents(1, 1)})
	e.ExpectCall(ns, winhost.Method{Class: "MSFT_StorageSetting", Name: "UpdateHostStorageCache"}, rv(0))
	grownDisk := vhdxDisk(grown, host.PartitionStyleGPT, false)
	e.ExpectQuery(ns, wqlDisk(1), scripted.Reply{Instances: []winhost.Instance{grownDisk}})
	e.ExpectQuery(ns, wqlPartsOf(1), scripted.Reply{Instances: []winhost.Instance{partInst(msr), partInst(part)}})
	e.ExpectCall(ns, winhost.Method{Class: "MSFT_Partition", Path: partRef(1, 2), Name: "GetSupportedSize"},
		scripted.Reply{Result: winhost.Result{Out: map[string]any{"SizeMin": "104857600", "SizeMax": itoa64(grownSize)}}})
	// Read again before the resize: the same disk, still holding the volume.
	e.ExpectQuery(ns, wqlDisk(1), scripted.Reply{Instances: []winhost.Instance{grownDisk}})
	e.ExpectWin32("VolumeDiskExtents", []any{guid[:len(guid)-1]}, scripted.Reply{Bytes: winhost.BuildVolumeDiskExtents(1, 1)})
	e.ExpectCall(ns, winhost.Method{Class: "MSFT_Partition", Path: partRef(1, 2), Name: "Resize",
		In: []winhost.Param{{Name: "Size", Value: itoa64(grownSize)}}}, rv(0))
	e.ExpectQuery(ns, wqlVolume(guid), scripted.Reply{Instances: []winhost.Instance{volInst(guid, fs, fsType, grownSize)}})
	stats(grownSize)

	// health.
	s.linked(target, staging)
	s.mounted(staging, guid)
	e.ExpectWin32("VolumeDiskExtents", []any{guid[:len(guid)-1]}, scripted.Reply{Bytes: winhost.BuildVolumeDiskExtents(1, 1)})
	e.ExpectQuery(ns, wqlDisk(1), scripted.Reply{Instances: []winhost.Instance{grownDisk}})
	e.ExpectQuery(ns, wqlVolume(guid), scripted.Reply{Instances: []winhost.Instance{volInst(guid, fs, fsType, grownSize)}})

	// unpublish: the link goes.
	unpublish := func() {
		s.linked(target, staging)
		s.linked(target, staging)
		e.ExpectWin32("RemoveDirectory", []any{long(target)}, ok())
	}
	unpublish()

	// unstage: flush, unmount, offline (--offline-disk-on-unstage).
	unstage := func(check bool) {
		s.mounted(staging, guid)
		e.ExpectWin32("VolumeDiskExtents", []any{guid[:len(guid)-1]}, scripted.Reply{Bytes: winhost.BuildVolumeDiskExtents(1, 1)})
		e.ExpectWin32("FlushVolume", []any{guid[:len(guid)-1]}, ok())
		e.ExpectQuery(ns, wqlDisk(1), scripted.Reply{Instances: []winhost.Instance{grownDisk}})
		e.ExpectWin32("DeleteVolumeMountPoint", []any{staging + `\`}, ok())
		e.ExpectWin32("VolumeDiskExtents", []any{guid[:len(guid)-1]}, scripted.Reply{Bytes: winhost.BuildVolumeDiskExtents(1, 1)})
		e.ExpectCall(ns, winhost.Method{Class: "MSFT_Disk", Path: diskRef(1), Name: "Offline"}, rv(0))
		if check {
			e.ExpectQuery(ns, wqlDisk(1), scripted.Reply{Instances: []winhost.Instance{vhdxDisk(grown, host.PartitionStyleGPT, true)}})
		}
	}
	unstage(true)

	// stage again: the disk is offline with its volume; it comes online
	// and the volume is mounted again, not formatted.
	s.mkdirExisting(staging)
	s.dir(staging)
	e.ExpectQuery(ns, wqlDisks, scripted.Reply{Instances: []winhost.Instance{diskInst(bootDisk), vhdxDisk(grown, host.PartitionStyleGPT, true)}})
	// Read again before its volume comes online: still the disk chosen.
	e.ExpectQuery(ns, wqlDisk(1), scripted.Reply{Instances: []winhost.Instance{vhdxDisk(grown, host.PartitionStyleGPT, true)}})
	e.ExpectCall(ns, winhost.Method{Class: "MSFT_Disk", Path: diskRef(1), Name: "Online"}, rv(0))
	e.ExpectQuery(ns, wqlPartsOf(1), scripted.Reply{Instances: []winhost.Instance{partInst(msr), partInst(bigPart)}})
	e.ExpectAssociators(ns, partRef(1, 2), "MSFT_PartitionToVolume", "MSFT_Volume",
		scripted.Reply{Instances: []winhost.Instance{volInst(guid, fs, fsType, grownSize)}})
	// The partition already fills the disk: nothing to grow.
	e.ExpectCall(ns, winhost.Method{Class: "MSFT_Partition", Path: partRef(1, 2), Name: "GetSupportedSize"},
		scripted.Reply{Result: winhost.Result{Out: map[string]any{"SizeMin": "104857600", "SizeMax": itoa64(grownSize)}}})
	e.ExpectWin32("SetVolumeMountPoint", []any{staging + `\`, guid}, ok())
	publish(false)
	e.ExpectWin32("ReadFile", []any{file}, scripted.Reply{Bytes: data})
	unpublish()
	unstage(false)

	// detach: the disk is gone; delete the file.
	e.ExpectWin32("DetachVirtualDisk", []any{vhdx}, ok())
	e.ExpectQuery(ns, wqlDisk(1), scripted.Reply{})
	e.ExpectWin32("DeleteFile", []any{vhdx}, ok())
}
