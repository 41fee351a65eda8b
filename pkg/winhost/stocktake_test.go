package winhost_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/backend/disk"
	"github.com/wincsi/csi-windows-node/pkg/backend/iscsi"
	"github.com/wincsi/csi-windows-node/pkg/backend/smb"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/journal"
	"github.com/wincsi/csi-windows-node/pkg/plugin"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/scripted"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// A node with n staged volumes of each backend, as the scripted executor
// serves it to a stock-take (plugin.Inventory, what diagnose and the
// orphan sweep run): n disks with one mounted NTFS volume each; n SMB
// volumes, directories of 10 shares with a global mapping each, linked
// from their staging paths; n LUNs of one multipath iSCSI target logged in
// through two portals, each LUN's disk mounted. Every reply follows the
// shapes the other tests of this package use (and the schema check
// verifies).
type stockNode struct {
	n       int
	kubelet string
	driver  string
	stateD  string
	byWQL   map[string][]winhost.Instance
	assoc   map[string][]winhost.Instance // path + "|" + assoc class
	attrs   map[string]uint32             // GetFileAttributes by long path
	reparse map[string][]byte             // ReadReparsePoint by long path
	entries map[string][]string           // DirectoryEntries by long path
	extents map[string]int                // VolumeDiskExtents: disk number by volume name
	rootSD  []byte                        // FileSecurity of every volume's root
}

const (
	stockIQN    = "iqn.2024-01.test.array:stock"
	stockDriver = "wincsi.test"
)

func stockGUID(kind, i int) string {
	return fmt.Sprintf(`\\?\Volume{%08x-0000-4000-8000-%012x}\`, kind, i)
}

func newStockNode(t *testing.T, n int) *stockNode {
	t.Helper()
	s := &stockNode{n: n, kubelet: `C:\var\lib\kubelet`, driver: stockDriver, stateD: t.TempDir(),
		byWQL: map[string][]winhost.Instance{}, assoc: map[string][]winhost.Instance{}, attrs: map[string]uint32{},
		reparse: map[string][]byte{}, entries: map[string][]string{}, extents: map[string]int{}, rootSD: hexBytes(t, serverRoot)}
	jr, err := journal.Open(s.stateD)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	root := func(p string) string { return winpath.LongPath(p) }
	pluginDir := s.kubelet + `\plugins\kubernetes.io\csi\` + s.driver
	s.attrs[root(pluginDir)] = attrDir
	var ids []string
	disks := []winhost.Instance{diskInst(bootDisk)}
	var vols, parts []winhost.Instance
	stage := func(id string, kind contract.Kind, rec backend.Record) string {
		staging := pluginDir + `\` + id + `\globalmount`
		ids = append(ids, id)
		s.attrs[root(pluginDir+`\`+id)] = attrDir
		s.entries[root(pluginDir+`\`+id)] = []string{"globalmount"}
		if err := jr.Put(ctx, journal.Entry{VolumeID: id, StagingPath: staging, Backend: string(kind),
			ResourceKey: rec.Resource(), Attrs: rec.Attrs(), Staged: true}); err != nil {
			t.Fatal(err)
		}
		return staging
	}
	mount := func(staging, guid string, number uint32) {
		s.attrs[root(staging)] = attrDir | attrReparse
		s.reparse[root(staging)] = mountPointReparse(guid)
		s.extents[guid[:len(guid)-1]] = int(number)
		vols = append(vols, volInst(guid, "NTFS", 14, 10<<30))
		p := partInst(partSpec{Disk: number, Number: 2, Offset: dataOffset, Size: 10 << 30, GptType: host.GptTypeBasicData,
			AccessPaths: []any{guid}})
		parts = append(parts, only(p, "ObjectId", "DiskNumber", "PartitionNumber", "AccessPaths"))
		d := only(p, "ObjectId", "DiskNumber", "PartitionNumber", "Offset", "Size", "GptType", "MbrType", "AccessPaths", "IsReadOnly", "IsOffline")
		s.byWQL[wqlPartsOf(number)] = append(s.byWQL[wqlPartsOf(number)], d)
	}
	for i := range n {
		number := uint32(10 + i)
		d := diskSpec{Number: number, Serial: fmt.Sprintf("disk-%d", i), Style: host.PartitionStyleGPT}
		disks = append(disks, diskInst(d))
		s.byWQL[wqlDisk(number)] = []winhost.Instance{diskInst(d)}
		guid := stockGUID(1, i)
		s.byWQL[wqlVolume(guid)] = []winhost.Instance{volInst(guid, "NTFS", 14, 10<<30)}
		rec := disk.RecordOf(&contract.DiskSpec{Selector: contract.DiskSelector{Serial: d.Serial}})
		mount(stage(fmt.Sprintf("disk-%d", i), contract.KindDisk, rec), guid, number)
	}
	var mappings []winhost.Instance
	for i := range n {
		spec := &contract.SMBSpec{Server: fmt.Sprintf("srv%d", i%10), Share: "data", Dir: fmt.Sprintf("vol-%d", i),
			Credential: host.Credential{User: `CORP\alice`}}
		staging := stage(fmt.Sprintf("smb-%d", i), contract.KindSMB, smb.RecordOf(spec))
		unc := spec.UNC()
		s.attrs[root(staging)] = attrDir | attrReparse
		s.reparse[root(staging)] = winhost.BuildReparse(winhost.IOReparseTagSymlink, winpath.UNCLinkTarget(unc), unc, 0)
		s.attrs[root(unc)] = attrDir
		if i < 10 {
			m := mappingInstance(spec.MappingPath(), 0, true)
			mappings = append(mappings, m)
			s.byWQL[wqlMapping(spec.MappingPath())] = []winhost.Instance{m}
			if err := jr.PutNote(ctx, smb.MappingNotePrefix+spec.MappingPath(), spec.Credential.User); err != nil {
				t.Fatal(err)
			}
		}
	}
	s.byWQL[wqlMappings] = mappings

	// The target: two sessions (multipath), each reaching every LUN.
	sp1, sp2 := iscSessionPath, iscSessionPath+"2"
	id1, id2 := "ffffe0001234a010-4000013700000002", "ffffe0001234a010-4000013700000003"
	sessions := []winhost.Instance{iscSessionInst(sp1, id1, stockIQN, true), iscSessionInst(sp2, id2, stockIQN, true)}
	c1, c2 := connInst("ffffe0001234a010-1", "10.0.0.1", 3260), connInst("ffffe0001234a010-2", "10.0.1.1", 3260)
	var lunDisks []winhost.Instance
	var links []winhost.Instance
	for i := range n {
		number := uint32(1000 + i)
		d := diskSpec{Number: number, Serial: fmt.Sprintf("lun-%d", i), Style: host.PartitionStyleGPT,
			Location: fmt.Sprintf("Integrated : Adapter 2 : Port 0 : Target 0 : LUN %d", i)}
		disks = append(disks, diskInst(d))
		lunDisks = append(lunDisks, diskInst(d))
		s.byWQL[wqlDisk(number)] = []winhost.Instance{diskInst(d)}
		links = append(links, sessionToDisk(sp1, diskRef(number)), sessionToDisk(sp2, diskRef(number)))
		guid := stockGUID(2, i)
		s.byWQL[wqlVolume(guid)] = []winhost.Instance{volInst(guid, "NTFS", 14, 10<<30)}
		spec := &contract.ISCSISpec{IQN: stockIQN, LUN: uint32(i), Multipath: true,
			Portals: []host.Portal{{Address: "10.0.0.1", Port: 3260}, {Address: "10.0.1.1", Port: 3260}}}
		mount(stage(fmt.Sprintf("iscsi-%d", i), contract.KindISCSI, iscsi.RecordOf(spec)), guid, number)
	}
	if n > 0 {
		s.byWQL[wqlSessions] = sessions
		s.byWQL[wqlConnections] = []winhost.Instance{c1, c2}
		s.byWQL[wqlSessionConns] = []winhost.Instance{sessionToConn(sp1, c1.Path), sessionToConn(sp2, c2.Path)}
		s.assoc[sp1+"|MSFT_iSCSISessionToiSCSIConnection"] = []winhost.Instance{iscConnInst("10.0.0.1", 3260)}
		s.assoc[sp2+"|MSFT_iSCSISessionToiSCSIConnection"] = []winhost.Instance{iscConnInst("10.0.1.1", 3260)}
		s.assoc[sp1+"|MSFT_iSCSISessionToDisk"] = lunDisks
		s.assoc[sp2+"|MSFT_iSCSISessionToDisk"] = lunDisks
		s.byWQL[wqlSessionDisks] = links
		var numbers []winhost.Instance
		for _, d := range disks {
			numbers = append(numbers, only(d, "ObjectId", "Number"))
		}
		s.byWQL[wqlDiskNumbers] = numbers
		s.byWQL[wqlSessionIDs] = []winhost.Instance{only(sessions[0], "SessionIdentifier"), only(sessions[1], "SessionIdentifier")}
		listed := func(addr string) winhost.Instance {
			in := iscPortalInst(iscPortalPath+addr, addr, 3260)
			in.Props["IsDataDigest"], in.Props["IsHeaderDigest"] = nil, nil
			return in
		}
		s.byWQL[wqlPortalList] = []winhost.Instance{listed("10.0.0.1"), listed("10.0.1.1")}
	}
	s.byWQL[wqlDisks] = disks
	s.byWQL[wqlVolumeList] = vols
	s.byWQL[wqlPartitionPaths] = parts
	s.entries[root(pluginDir)] = ids
	return s
}

// serve answers a call from the node's state; false for a call the state
// does not cover (the test then fails on it).
func (s *stockNode) serve(c scripted.Call) (scripted.Reply, bool) {
	switch c.Kind {
	case scripted.KindQuery:
		in, ok := s.byWQL[c.WQL]
		if !ok && (strings.Contains(c.WQL, "FROM MSFT_iSCSI") || strings.Contains(c.WQL, "FROM MSFT_SmbGlobalMapping")) {
			ok = true // a node with nothing of that kind
		}
		return scripted.Reply{Instances: in}, ok
	case scripted.KindAssociators:
		in, ok := s.assoc[c.Path+"|"+c.Assoc]
		return scripted.Reply{Instances: in}, ok
	case "GetFileAttributes":
		a, ok := s.attrs[c.Args[0].(string)]
		if !ok {
			return scripted.Reply{Err: w32("GetFileAttributes", winhost.ErrorFileNotFound)}, true
		}
		return scripted.Reply{Uint32: a}, true
	case "ReadReparsePoint":
		b, ok := s.reparse[c.Args[0].(string)]
		return scripted.Reply{Bytes: b}, ok
	case "DirectoryEntries":
		names, ok := s.entries[c.Args[0].(string)]
		return scripted.Reply{Strings: names}, ok
	case "VolumeDiskExtents":
		n, ok := s.extents[c.Args[0].(string)]
		return scripted.Reply{Bytes: winhost.BuildVolumeDiskExtents(1, uint32(n))}, ok
	case "ReportIScsiPersistentLogins":
		return scripted.Reply{}, true
	case "FileSecurity":
		// The root of every volume: Format-Volume's DACL (security_test.go).
		return scripted.Reply{Bytes: s.rootSD}, true
	}
	return scripted.Reply{}, false
}

// stockTake runs one stock-take of the node and returns the executor.
func stockTake(t *testing.T, s *stockNode) (*scripted.Executor, int) {
	t.Helper()
	e := scripted.New(t).Serve(s.serve)
	rep, err := plugin.Inventory(context.Background(), plugin.Options{DriverName: s.driver, StateDir: s.stateD,
		KubeletDir: s.kubelet, PathStyle: winpath.Windows}, winhost.New(e))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Incomplete) != 0 || len(rep.Volumes) != 3*s.n {
		t.Fatalf("stock-take of %d volumes of each backend: %d volumes, incomplete %q", s.n, len(rep.Volumes), rep.Incomplete)
	}
	for _, v := range rep.Volumes {
		if v.State != "healthy" {
			t.Fatalf("volume %s: %s %+v", v.VolumeID, v.State, v.Problems)
		}
	}
	return e, e.WMIRoundTrips()
}

// TestStockTakeCost: the WMI round trips of a stock-take (the reads of
// the disks, volumes, SMB and iSCSI classes) are the same for 1, 10, 100
// and 500 staged volumes of each backend; only the file-system checks of
// the staging paths and the volume roots' ACLs (Win32 calls) grow with
// them. Before the stock-take
// read each class once, it made about eight round trips per volume.
func TestStockTakeCost(t *testing.T) {
	sizes := []int{1, 10, 100, 500}
	if testing.Short() {
		sizes = []int{1, 10, 100}
	}
	var first int
	for i, n := range sizes {
		e, trips := stockTake(t, newStockNode(t, n))
		win32 := len(e.Calls()) - trips
		t.Logf("%d volumes of each backend: %d WMI round trips, %d Win32 calls", n, trips, win32)
		if i == 0 {
			first = trips
			continue
		}
		if trips != first {
			t.Errorf("%d volumes of each backend: %d WMI round trips, want %d as for %d", n, trips, first, sizes[0])
		}
	}
}
