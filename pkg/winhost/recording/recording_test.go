package recording_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"reflect"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/recording"
	"github.com/wincsi/csi-windows-node/pkg/winhost/replay"
	"github.com/wincsi/csi-windows-node/pkg/winhost/scripted"
)

const secretValue = "s3cr3t-CHAP-value"

// session makes calls of every shape through an executor and returns what
// each answered, so that a recording can be replayed and the answers
// compared.
func session(ctx context.Context, e winhost.AdminExecutor) []any {
	var out []any
	add := func(vs ...any) { out = append(out, vs...) }
	add(e.Query(ctx, winhost.NamespaceStorage, "SELECT Number, Size FROM MSFT_Disk"))
	add(e.Call(ctx, winhost.NamespaceStorage, winhost.Method{Class: "MSFT_iSCSITarget", Name: "Connect", In: []winhost.Param{
		{Name: "NodeAddress", Value: "iqn.x"}, {Name: "ChapSecret", Value: secretValue, Sensitive: true},
		{Name: "IsPersistent", Value: true}, {Name: "TargetPortalPortNumber", Value: uint16(3260)}}}))
	add(e.Associators(ctx, winhost.NamespaceStorage, `x:MSFT_Disk.ObjectId="1"`, "MSFT_DiskToPartition", "MSFT_Partition"))
	add(e.ReadReparsePoint(ctx, `\\?\C:\k\stage`))
	add(e.GetDiskFreeSpaceEx(ctx, `C:\k`))
	add(e.ProcessToken(ctx))
	add(e.QueryService(ctx, "MSiSCSI"))
	add(e.RegistryValue(ctx, `SOFTWARE\x`, "UBR"))
	add(e.RegistryValue(ctx, `SOFTWARE\x`, "List"))
	add(e.ChangeServiceStartType(ctx, "MSiSCSI", host.StartAuto))
	add(e.NetUserAdd(ctx, "csiwn-st-1", host.NewSecret(secretValue)))
	add(e.DeleteInstance(ctx, winhost.NamespaceSMB, `x:MSFT_SmbShare.Name="s"`))
	add(e.GetFileAttributes(ctx, `C:\missing`))
	add(e.CreateVirtualDisk(ctx, `C:\t\d.vhdx`, uint64(1<<40)))
	add(e.SCSIAddress(ctx, `\\?\scsi#disk#1`))
	add(e.LookupHost(ctx, "san1"))
	add(e.LookupHost(ctx, "nosuch"))
	add(e.ReportIScsiPersistentLogins(ctx))
	add(e.RemoveIScsiPersistentTarget(ctx, "ROOT\\ISCSIPRT\\0000_0", 0xffffffff, "iqn.x", winhost.PortalW{Address: "10.0.0.5", Socket: 3260}))
	add(e.LookupAccountName(ctx, "csiwn-st-1"))
	add(e.FileSecurity(ctx, `C:\state`, uint32(4)))
	// UpdateFileDACL: the descriptor read reaches update, the ACL it
	// returns is written; an open that fails; an update that writes
	// nothing.
	var read [][]byte
	update := func(acl []byte) func([]byte) ([]byte, uint32, error) {
		return func(sd []byte) ([]byte, uint32, error) {
			read = append(read, sd)
			return acl, 0x80000004, nil
		}
	}
	add(e.UpdateFileDACL(ctx, `C:\share`, update([]byte{2, 0, 8, 0, 0, 0, 0, 0})))
	add(e.UpdateFileDACL(ctx, `C:\gone`, update(nil)))
	add(e.UpdateFileDACL(ctx, `C:\same`, update(nil)))
	add(read)
	return out
}

func script(e *scripted.Executor) {
	e.ExpectQuery(winhost.NamespaceStorage, "SELECT Number, Size FROM MSFT_Disk", scripted.Reply{Instances: []winhost.Instance{
		{Path: `x:MSFT_Disk.ObjectId="1"`, Class: "MSFT_Disk", Props: map[string]any{"Number": int64(1), "Size": "18446744073709551615",
			"Location": nil, "Paths": []any{"a", int64(2)}}}}})
	e.ExpectMatching(scripted.KindCall, func(scripted.Call) string { return "" }, scripted.Reply{Result: winhost.Result{ReturnValue: 0,
		Out: map[string]any{"CreatediSCSISession": winhost.Instance{Class: "MSFT_iSCSISession", Props: map[string]any{"SessionIdentifier": "s1"}}}}})
	e.ExpectAssociators(winhost.NamespaceStorage, `x:MSFT_Disk.ObjectId="1"`, "MSFT_DiskToPartition", "MSFT_Partition",
		scripted.Reply{Err: &winhost.COMError{Op: "AssociatorsOf", HResult: 0x80041002, Detail: "Not found",
			ErrorObject: &winhost.Instance{Class: "MSFT_WmiError", Props: map[string]any{"MessageId": "StorageWMI 4", "ErrorType": int64(1)}}}})
	e.ExpectWin32("ReadReparsePoint", []any{`\\?\C:\k\stage`}, scripted.Reply{Bytes: []byte{0, 1, 2, 0xff}})
	e.ExpectWin32("GetDiskFreeSpaceEx", []any{`C:\k`}, scripted.Reply{Space: [3]uint64{1, 1 << 62, 3}})
	e.ExpectWin32("ProcessToken", nil, scripted.Reply{Token: host.Token{User: "S-1-5-18", System: true}})
	e.ExpectWin32("QueryService", []any{"MSiSCSI"}, scripted.Reply{Service: host.Service{State: host.ServiceStopped, StartType: host.StartManual}})
	e.ExpectWin32("RegistryValue", []any{`SOFTWARE\x`, "UBR"}, scripted.Reply{Value: uint32(2849)})
	e.ExpectWin32("RegistryValue", []any{`SOFTWARE\x`, "List"}, scripted.Reply{Value: []string{"a", "b"}})
	e.ExpectWin32("ChangeServiceStartType", []any{"MSiSCSI", host.StartAuto}, scripted.Reply{})
	e.ExpectMatching("NetUserAdd", func(scripted.Call) string { return "" }, scripted.Reply{})
	e.ExpectDeleteInstance(winhost.NamespaceSMB, `x:MSFT_SmbShare.Name="s"`, scripted.Reply{Err: context.DeadlineExceeded})
	e.ExpectWin32("GetFileAttributes", []any{`C:\missing`}, scripted.Reply{Err: &winhost.Win32Error{Call: "GetFileAttributes", Code: 2}})
	e.ExpectWin32("CreateVirtualDisk", []any{`C:\t\d.vhdx`, uint64(1 << 40)}, scripted.Reply{})
	e.ExpectWin32("SCSIAddress", []any{`\\?\scsi#disk#1`}, scripted.Reply{Bytes: []byte{8, 0, 0, 0, 1, 0, 2, 0}})
	e.ExpectWin32("LookupHost", []any{"san1"}, scripted.Reply{Strings: []string{"10.0.0.5", "fd00::5"}})
	e.ExpectWin32("LookupHost", []any{"nosuch"}, scripted.Reply{Err: &net.DNSError{Err: "no such host", Name: "nosuch", IsNotFound: true}})
	e.ExpectWin32("ReportIScsiPersistentLogins", nil, scripted.Reply{Count: 1, Bytes: []byte{1, 2, 3, 4}})
	e.ExpectWin32("RemoveIScsiPersistentTarget", []any{"ROOT\\ISCSIPRT\\0000_0", uint32(0xffffffff), "iqn.x",
		winhost.PortalW{Address: "10.0.0.5", Socket: 3260}}, scripted.Reply{})
	e.ExpectWin32("LookupAccountName", []any{"csiwn-st-1"}, scripted.Reply{Bytes: []byte{1, 1, 0, 0, 0, 0, 0, 5, 18, 0, 0, 0}, Uint32: 1})
	e.ExpectWin32("FileSecurity", []any{`C:\state`, uint32(4)}, scripted.Reply{Bytes: []byte{1, 0, 4, 0x80, 9}})
	e.ExpectWin32("UpdateFileDACL", []any{`C:\share`}, scripted.Reply{Bytes: []byte{1, 0, 4, 0x80, 7}})
	e.ExpectWin32("SetSecurityInfo", []any{`C:\share`, uint32(0x80000004), []byte{2, 0, 8, 0, 0, 0, 0, 0}}, scripted.Reply{})
	e.ExpectWin32("UpdateFileDACL", []any{`C:\gone`}, scripted.Reply{Err: &winhost.Win32Error{Call: "CreateFile", Code: 2}})
	e.ExpectWin32("UpdateFileDACL", []any{`C:\same`}, scripted.Reply{Bytes: []byte{1, 0, 4, 0x80, 8}})
}

// A recording replays to the same answers, with the same Go types, and
// holds no secret.
func TestRecordAndReplay(t *testing.T) {
	ctx := context.Background()
	inner := scripted.New(t)
	script(inner)
	var buf bytes.Buffer
	rec, err := recording.NewRecorder(inner, &buf, recording.Header{Source: recording.SourceScripted, Scenario: "test",
		Params: map[string]string{"run": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	want := session(ctx, rec)
	if err := rec.WriteResult(map[string]string{"ok": "yes"}); err != nil {
		t.Fatal(err)
	}
	if rec.Err() != nil || rec.Calls() != 25 {
		t.Fatalf("recorder: %d calls, err %v", rec.Calls(), rec.Err())
	}
	text := buf.String()
	if strings.Contains(text, secretValue) {
		t.Fatalf("the recording holds the secret:\n%s", text)
	}
	for _, frag := range []string{`"sensitive":true`, `{"t":"secret"}`, `"hresult":"0x80041002"`, `{"t":"str","v":"18446744073709551615"}`,
		`"type":"deadline"`, `"type":"win32"`, `"type":"dns"`, `"notFound":true`, `{"t":"logins"`, `{"t":"portal"`, `{"t":"account"`} {
		if !strings.Contains(text, frag) {
			t.Errorf("the recording lacks %s:\n%s", frag, text)
		}
	}

	f, err := recording.Read(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if f.Header.Scenario != "test" || f.Header.Params["run"] != "1" || len(f.Lines) != 25 || f.Result == nil {
		t.Fatalf("read back: %+v", f)
	}
	e, err := replay.New(t, f)
	if err != nil {
		t.Fatal(err)
	}
	got := session(ctx, e)
	if len(got) != len(want) {
		t.Fatalf("%d answers, want %d", len(got), len(want))
	}
	for i := range want {
		werr, isErr := want[i].(error)
		if isErr {
			gerr, _ := got[i].(error)
			var wdns, gdns *net.DNSError
			if errors.As(werr, &wdns) && (!errors.As(gerr, &gdns) || *gdns != *wdns) {
				t.Errorf("answer %d: %#v, want the *net.DNSError %#v", i, got[i], wdns)
			}
			if gerr == nil || gerr.Error() != werr.Error() && !errors.Is(gerr, context.DeadlineExceeded) {
				t.Errorf("answer %d: %v, want %v", i, got[i], want[i])
			}
			continue
		}
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("answer %d: %#v, want %#v", i, got[i], want[i])
		}
	}
}

// A replay fails the test on a call the recording does not have.
func TestReplayRefusesAnotherCall(t *testing.T) {
	var buf bytes.Buffer
	inner := scripted.New(t)
	inner.ExpectWin32("GetFileAttributes", []any{`C:\a`}, scripted.Reply{Uint32: 0x10})
	rec, err := recording.NewRecorder(inner, &buf, recording.Header{Source: recording.SourceScripted, Scenario: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rec.GetFileAttributes(context.Background(), `C:\a`); err != nil {
		t.Fatal(err)
	}
	f, err := recording.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	ft := &fakeT{}
	e, err := replay.New(ft, f)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.GetFileAttributes(context.Background(), `C:\b`); err == nil || len(ft.errs) == 0 {
		t.Errorf("a call with another path: %v, test errors %q; want both", err, ft.errs)
	}
}

type fakeT struct{ errs []string }

func (f *fakeT) Helper()                           {}
func (f *fakeT) Errorf(format string, args ...any) { f.errs = append(f.errs, format) }
func (f *fakeT) Cleanup(func())                    {}

func TestReadRejects(t *testing.T) {
	for name, text := range map[string]string{
		"empty":           "",
		"no header":       `{"seq":1,"kind":"Query","durationMs":1}`,
		"other format":    `{"kind":"header","format":99,"source":"windows","scenario":"plugin"}`,
		"unknown field":   `{"kind":"header","format":1,"source":"windows","scenario":"plugin","x":1}`,
		"call after end":  `{"kind":"header","format":1,"source":"windows","scenario":"plugin"}` + "\n" + `{"kind":"result","outcome":{}}` + "\n" + `{"seq":1,"kind":"Query","durationMs":1}`,
		"two headers":     `{"kind":"header","format":1,"source":"windows","scenario":"plugin"}` + "\n" + `{"kind":"header","format":1,"source":"windows","scenario":"plugin"}`,
		"not JSON at all": "hello",
	} {
		if _, err := recording.Read(strings.NewReader(text)); err == nil {
			t.Errorf("%s: Read succeeded", name)
		}
	}
}
