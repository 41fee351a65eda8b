package winhost_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"reflect"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/scripted"
)

// The reads of a stock-take (pkg/inventory) that cost the same number of
// round trips however many volumes and sessions the node has. Association
// instances carry their two references as object paths
// (MSFT_iSCSISessionToiSCSIConnection: iSCSISession, iSCSIConnection;
// MSFT_iSCSISessionToDisk: iSCSISession, Disk; microsoft/wmi v0.43.0
// server2019/root/microsoft/windows/storage). Whether a reference carries
// the \\server\namespace: prefix __PATH has is not documented; the replies
// below use both forms.

// only returns in with every property but props set to null, as a query
// selecting props returns it.
func only(in winhost.Instance, props ...string) winhost.Instance {
	out := winhost.Instance{Path: in.Path, Class: in.Class, Props: map[string]any{}}
	for k := range in.Props {
		out.Props[k] = nil
	}
	for _, p := range props {
		out.Props[p] = in.Props[p]
	}
	return out
}

// relative drops the \\server\namespace: prefix of an object path.
func relative(path string) string {
	for i := 0; i < len(path); i++ {
		if path[i] == ':' {
			return path[i+1:]
		}
	}
	return path
}

const (
	wqlVolumeList     = wqlVolumes
	wqlPartitionPaths = "SELECT ObjectId, DiskNumber, PartitionNumber, AccessPaths FROM MSFT_Partition"
	wqlConnections    = "SELECT ConnectionIdentifier, TargetAddress, TargetPortNumber FROM MSFT_iSCSIConnection"
	wqlSessionConns   = "SELECT * FROM MSFT_iSCSISessionToiSCSIConnection"
	wqlSessionDisks   = "SELECT * FROM MSFT_iSCSISessionToDisk"
	wqlDiskNumbers    = "SELECT ObjectId, Number FROM MSFT_Disk"
	wqlSessionIDs     = "SELECT SessionIdentifier FROM MSFT_iSCSISession"
)

func TestVolumesList(t *testing.T) {
	parts := []winhost.Instance{
		only(partInst(partSpec{Disk: 0, Number: 1, Size: 1 << 30, GptType: host.GptTypeBasicData,
			AccessPaths: []any{`C:\`, guidA}}), "ObjectId", "DiskNumber", "PartitionNumber", "AccessPaths"),
		// A partition without access paths (NULL) holds no volume.
		only(partInst(partSpec{Disk: 3, Number: 1, Size: msrSize, GptType: host.GptTypeMSR}),
			"ObjectId", "DiskNumber", "PartitionNumber", "AccessPaths"),
	}
	e := scripted.New(t)
	e.ExpectQuery(ns, wqlVolumeList, scripted.Reply{Instances: []winhost.Instance{
		volInst(guidA, "NTFS", 14, 1<<30), volInst(guidB, "ReFS", 15, 2<<30)}}).
		ExpectQuery(ns, wqlPartitionPaths, scripted.Reply{Instances: parts})
	got, err := volumesOf(e).List(context.Background())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(got) != 2 || got[0].GUIDPath != guidA || !got[0].OnDisk || got[0].DiskNumber != 0 ||
		got[1].GUIDPath != guidB || got[1].OnDisk || got[1].FileSystem != "ReFS" {
		t.Fatalf("List = %+v; want %s on disk 0 and %s placed on no disk", got, guidA, guidB)
	}
	if n := e.WMIRoundTrips(); n != 2 {
		t.Errorf("%d WMI round trips, want 2 whatever the number of volumes", n)
	}
}

// sessionToConn is an instance of MSFT_iSCSISessionToiSCSIConnection.
func sessionToConn(session, conn string) winhost.Instance {
	return winhost.Instance{Path: `\\NODE\ROOT\Microsoft\Windows\Storage:MSFT_iSCSISessionToiSCSIConnection.iSCSIConnection="x",iSCSISession="y"`,
		Class: "MSFT_iSCSISessionToiSCSIConnection", Props: map[string]any{"iSCSISession": session, "iSCSIConnection": conn}}
}

func connInst(id, addr string, port int64) winhost.Instance {
	in := iscConnInst(addr, port)
	in.Path = `\\NODE\ROOT\Microsoft\Windows\Storage:MSFT_iSCSIConnection.ConnectionIdentifier="` + id + `"`
	in.Props["ConnectionIdentifier"] = id
	return only(in, "ConnectionIdentifier", "TargetAddress", "TargetPortNumber")
}

// TestAllSessions: Sessions("") reads every session's connection in two
// round trips (the connections, the association), joined on the object
// paths the association's references hold, with or without the
// \\server\namespace: prefix; a session the association does not list (no
// connection at the moment, or an enumeration the provider refuses) is
// asked for alone.
func TestAllSessions(t *testing.T) {
	s1, s2, s3 := iscSessionPath, iscSessionPath+"2", iscSessionPath+"3"
	sessions := scripted.Reply{Instances: []winhost.Instance{
		iscSessionInst(s1, iscSessionID, iscIQN, true),
		iscSessionInst(s2, "ffffe0001234a010-4000013700000003", iscIQN, false),
		iscSessionInst(s3, "ffffe0001234a010-4000013700000004", "iqn.2024-01.test.array:vol2", false)}}
	c1 := connInst("ffffe0001234a010-1", "10.0.0.1", 3260)
	c2 := connInst("ffffe0001234a010-2", "10.0.0.2", 3260)
	want := []host.Portal{{Address: "10.0.0.1", Port: 3260}, {Address: "10.0.0.2", Port: 3260}, {}}

	t.Run("association enumerated", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectQuery(iscNS, wqlSessions, sessions).
			ExpectQuery(iscNS, wqlConnections, scripted.Reply{Instances: []winhost.Instance{c1, c2}}).
			ExpectQuery(iscNS, wqlSessionConns, scripted.Reply{Instances: []winhost.Instance{
				sessionToConn(s1, c1.Path), sessionToConn(relative(s2), relative(c2.Path))}}).
			// The third session has no connection now: asked for alone.
			ExpectAssociators(iscNS, s3, "MSFT_iSCSISessionToiSCSIConnection", "MSFT_iSCSIConnection", scripted.Reply{})
		got, err := winhost.NewISCSI(e).Sessions(context.Background(), "")
		if err != nil {
			t.Fatalf("Sessions: %v", err)
		}
		if len(got) != 3 {
			t.Fatalf("Sessions = %+v, want 3", got)
		}
		for i, s := range got {
			if s.TargetPortal != want[i] {
				t.Errorf("session %s: portal %v, want %v", s.SessionID, s.TargetPortal, want[i])
			}
		}
	})
	t.Run("association refused", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectQuery(iscNS, wqlSessions, sessions).
			ExpectQuery(iscNS, wqlConnections, scripted.Reply{Instances: []winhost.Instance{c1, c2}}).
			ExpectQuery(iscNS, wqlSessionConns, scripted.Reply{Err: &winhost.COMError{Op: "ExecQuery", HResult: 0x8004100C}}) // WBEM_E_NOT_SUPPORTED
		for i, p := range []string{s1, s2, s3} {
			var r scripted.Reply
			if want[i] != (host.Portal{}) {
				r.Instances = []winhost.Instance{iscConnInst(want[i].Address, int64(want[i].Port))}
			}
			e.ExpectAssociators(iscNS, p, "MSFT_iSCSISessionToiSCSIConnection", "MSFT_iSCSIConnection", r)
		}
		got, err := winhost.NewISCSI(e).Sessions(context.Background(), "")
		if err != nil {
			t.Fatalf("Sessions: %v", err)
		}
		for i, s := range got {
			if s.TargetPortal != want[i] {
				t.Errorf("session %s: portal %v, want %v", s.SessionID, s.TargetPortal, want[i])
			}
		}
	})
}

// sessionToDisk is an instance of MSFT_iSCSISessionToDisk.
func sessionToDisk(session, disk string) winhost.Instance {
	return winhost.Instance{Path: `\\NODE\ROOT\Microsoft\Windows\Storage:MSFT_iSCSISessionToDisk.Disk="x",iSCSISession="y"`,
		Class: "MSFT_iSCSISessionToDisk", Props: map[string]any{"iSCSISession": session, "Disk": disk}}
}

func TestDisksBySession(t *testing.T) {
	s1, s2 := iscSessionPath, iscSessionPath+"2"
	id2 := "ffffe0001234a010-4000013700000003"
	disks := scripted.Reply{Instances: []winhost.Instance{
		only(diskInst(diskSpec{Number: 0}), "ObjectId", "Number"),
		only(diskInst(diskSpec{Number: 4}), "ObjectId", "Number"),
		only(diskInst(diskSpec{Number: 5}), "ObjectId", "Number")}}
	ids := scripted.Reply{Instances: []winhost.Instance{
		only(iscSessionInst(s1, iscSessionID, iscIQN, true), "SessionIdentifier"),
		only(iscSessionInst(s2, id2, iscIQN, false), "SessionIdentifier")}}
	want := map[string][]uint32{iscSessionID: {4, 5}, id2: {4}}

	t.Run("association enumerated", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectQuery(iscNS, wqlSessionDisks, scripted.Reply{Instances: []winhost.Instance{
			sessionToDisk(s1, diskRef(4)), sessionToDisk(s1, relative(diskRef(5))), sessionToDisk(relative(s2), diskRef(4))}}).
			ExpectQuery(iscNS, wqlDiskNumbers, disks).
			ExpectQuery(iscNS, wqlSessionIDs, ids)
		got, err := winhost.NewISCSI(e).DisksBySession(context.Background())
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("DisksBySession = %v, %v; want %v", got, err, want)
		}
		if n := e.WMIRoundTrips(); n != 3 {
			t.Errorf("%d WMI round trips, want 3 whatever the number of sessions", n)
		}
	})
	t.Run("association refused", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectQuery(iscNS, wqlSessionDisks, scripted.Reply{Err: &winhost.COMError{Op: "ExecQuery", HResult: 0x8004100C}}).
			ExpectQuery(iscNS, wqlSessions, scripted.Reply{Instances: []winhost.Instance{
				iscSessionInst(s1, iscSessionID, iscIQN, true), iscSessionInst(s2, id2, iscIQN, false)}}).
			ExpectQuery(iscNS, wqlConnections, scripted.Reply{}).
			ExpectQuery(iscNS, wqlSessionConns, scripted.Reply{}).
			ExpectAssociators(iscNS, s1, "MSFT_iSCSISessionToiSCSIConnection", "MSFT_iSCSIConnection", scripted.Reply{}).
			ExpectAssociators(iscNS, s2, "MSFT_iSCSISessionToiSCSIConnection", "MSFT_iSCSIConnection", scripted.Reply{}).
			ExpectAssociators(iscNS, s1, "MSFT_iSCSISessionToDisk", "MSFT_Disk", scripted.Reply{Instances: []winhost.Instance{
				diskInst(diskSpec{Number: 4}), diskInst(diskSpec{Number: 5})}}).
			ExpectAssociators(iscNS, s2, "MSFT_iSCSISessionToDisk", "MSFT_Disk", scripted.Reply{Instances: []winhost.Instance{
				diskInst(diskSpec{Number: 4})}})
		got, err := winhost.NewISCSI(e).DisksBySession(context.Background())
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("DisksBySession = %v, %v; want %v", got, err, want)
		}
	})
	t.Run("no session reaches a disk", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectQuery(iscNS, wqlSessionDisks, scripted.Reply{})
		got, err := winhost.NewISCSI(e).DisksBySession(context.Background())
		if err != nil || len(got) != 0 {
			t.Fatalf("DisksBySession = %v, %v; want none", got, err)
		}
	})
}

// TestResolvePortal: an IP address is itself (no call); a host name is
// resolved by the executor; a name that does not resolve is ErrNotFound,
// a resolver that does not answer ErrUnreachable.
func TestResolvePortal(t *testing.T) {
	x := func(e *scripted.Executor) *winhost.ISCSI { return winhost.NewISCSI(e) }
	ctx := context.Background()
	e := scripted.New(t)
	got, err := x(e).ResolvePortal(ctx, host.Portal{Address: "::ffff:10.0.0.1", Port: 3260})
	if err != nil || len(got) != 1 || got[0] != netip.MustParseAddr("10.0.0.1") {
		t.Fatalf("ResolvePortal of an IPv4-mapped address = %v, %v", got, err)
	}
	e.ExpectWin32("LookupHost", []any{"array.example.com"}, scripted.Reply{Strings: []string{"10.0.0.7", "fd00::7"}})
	got, err = x(e).ResolvePortal(ctx, host.Portal{Address: "array.example.com", Port: 3260})
	if err != nil || len(got) != 2 || got[1] != netip.MustParseAddr("fd00::7") {
		t.Fatalf("ResolvePortal of a host name = %v, %v", got, err)
	}
	e.ExpectWin32("LookupHost", []any{"gone.example.com"}, scripted.Reply{Err: &net.DNSError{Err: "no such host", Name: "gone.example.com", IsNotFound: true}})
	if _, err := x(e).ResolvePortal(ctx, host.Portal{Address: "gone.example.com"}); !errors.Is(err, host.ErrNotFound) {
		t.Fatalf("ResolvePortal of a name that does not resolve = %v, want ErrNotFound", err)
	}
	e.ExpectWin32("LookupHost", []any{"slow.example.com"}, scripted.Reply{Err: &net.DNSError{Err: "i/o timeout", Name: "slow.example.com", IsTimeout: true}})
	if _, err := x(e).ResolvePortal(ctx, host.Portal{Address: "slow.example.com"}); !errors.Is(err, host.ErrUnreachable) {
		t.Fatalf("ResolvePortal with a resolver that does not answer = %v, want ErrUnreachable", err)
	}
}
