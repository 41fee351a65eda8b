package wmischema

import (
	"strings"
	"sync"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/winhost"
)

const (
	storage = winhost.NamespaceStorage
	smb     = winhost.NamespaceSMB
)

var (
	loadOnce sync.Once
	loaded   *Schema
	loadErr  error
)

func schema(t *testing.T) *Schema {
	t.Helper()
	loadOnce.Do(func() {
		var dir string
		if dir, loadErr = ModuleDir(); loadErr == nil {
			loaded, loadErr = Load(dir)
		}
	})
	if loadErr != nil {
		t.Fatal(loadErr)
	}
	return loaded
}

const diskPath = `\\NODE1\ROOT\Microsoft\Windows\Storage:MSFT_Disk.ObjectId="{1}\\\\NODE1\\disk"`

// The checker accepts calls that fit both trees, and each mutation the
// issue names (a misspelt parameter, a wrong integer width, a class in the
// wrong namespace, a misspelt property) and a few more make it fail.
func TestChecker(t *testing.T) {
	s := schema(t)
	disk := winhost.Instance{Path: diskPath, Class: "MSFT_Disk", Props: map[string]any{
		"ObjectId": "{1}", "Number": int64(3), "SerialNumber": "abc", "Size": "1073741824", "IsOffline": false}}
	part := winhost.Instance{Path: `x:MSFT_Partition.ObjectId="p"`, Class: "MSFT_Partition", Props: map[string]any{
		"PartitionNumber": int64(2), "Offset": "16777216", "GptType": "{ebd0a0a2-b9e5-4433-87c0-68b6b72699c7}"}}
	tests := []struct {
		name  string
		check func() []error
		want  string // "" when the call fits; else a fragment of an error
	}{
		{"query", func() []error {
			return s.CheckQuery(storage, "SELECT ObjectId, Number, SerialNumber, Size, IsOffline FROM MSFT_Disk WHERE Number = 3", []winhost.Instance{disk})
		}, ""},
		{"delete a share", func() []error {
			return s.CheckDelete(`Root\Microsoft\Windows\SMB`, `\\NODE1\ROOT\Microsoft\Windows\SMB:MSFT_SmbShare.Name="x",ScopeName="*"`)
		}, ""},
		{"delete an object of a class the namespace lacks", func() []error {
			return s.CheckDelete(`Root\Microsoft\Windows\SMB`, `\\NODE1\ROOT\Microsoft\Windows\SMB:MSFT_SmbShar.Name="x"`)
		}, "MSFT_SmbShar"},
		{"delete through a path without a class", func() []error {
			return s.CheckDelete(`Root\Microsoft\Windows\SMB`, `nothing`)
		}, "names no class"},
		{"query with a string literal", func() []error {
			return s.CheckQuery(storage, `SELECT * FROM MSFT_Volume WHERE Path = '\\\\?\\Volume{x}\\'`, nil)
		}, ""},
		{"misspelt property in SELECT", func() []error {
			return s.CheckQuery(storage, "SELECT Numbr FROM MSFT_Disk", nil)
		}, "MSFT_Disk has no property Numbr"},
		{"misspelt property in WHERE", func() []error {
			return s.CheckQuery(storage, "SELECT * FROM MSFT_Disk WHERE Numbr = 3", nil)
		}, "MSFT_Disk has no property Numbr"},
		{"misspelt property in a reply", func() []error {
			bad := winhost.Instance{Path: diskPath, Class: "MSFT_Disk", Props: map[string]any{"SerialNumbr": "abc"}}
			return s.CheckQuery(storage, "SELECT * FROM MSFT_Disk", []winhost.Instance{bad})
		}, "MSFT_Disk has no property SerialNumbr"},
		{"unselected property with a value", func() []error {
			return s.CheckQuery(storage, "SELECT Number FROM MSFT_Disk", []winhost.Instance{disk})
		}, "does not select"},
		{"string literal for an integer", func() []error {
			return s.CheckQuery(storage, "SELECT * FROM MSFT_Disk WHERE Number = '3'", nil)
		}, "does not fit"},
		{"class in the wrong namespace (query)", func() []error {
			return s.CheckQuery(storage, "SELECT * FROM MSFT_SmbGlobalMapping", nil)
		}, "class MSFT_SmbGlobalMapping does not exist in namespace"},
		{"method", func() []error {
			return s.CheckCall(storage, winhost.Method{Class: "MSFT_Disk", Path: diskPath, Name: "Initialize",
				In: []winhost.Param{{Name: "PartitionStyle", Value: uint16(2)}}}, winhost.Result{})
		}, ""},
		{"misspelt parameter", func() []error {
			return s.CheckCall(storage, winhost.Method{Class: "MSFT_Disk", Path: diskPath, Name: "SetAttributes",
				In: []winhost.Param{{Name: "IsReadOnyl", Value: false}}}, winhost.Result{})
		}, "no IN parameter IsReadOnyl"},
		{"wrong integer width", func() []error {
			return s.CheckCall(storage, winhost.Method{Class: "MSFT_Disk", Path: diskPath, Name: "Initialize",
				In: []winhost.Param{{Name: "PartitionStyle", Value: uint32(2)}}}, winhost.Result{})
		}, "want uint16"},
		{"uint64 not as a decimal string", func() []error {
			return s.CheckCall(storage, winhost.Method{Class: "MSFT_Partition", Path: part.Path, Name: "Resize",
				In: []winhost.Param{{Name: "Size", Value: uint64(1 << 30)}}}, winhost.Result{})
		}, "decimal string"},
		{"class in the wrong namespace (method)", func() []error {
			return s.CheckCall(storage, winhost.Method{Class: "MSFT_SmbGlobalMapping", Name: "Create",
				In: []winhost.Param{{Name: "RemotePath", Value: `\\srv\share`}}}, winhost.Result{})
		}, "does not exist in namespace"},
		{"SMB create in its namespace", func() []error {
			return s.CheckCall(smb, winhost.Method{Class: "MSFT_SmbGlobalMapping", Name: "Create",
				In: []winhost.Param{{Name: "RemotePath", Value: `\\srv\share`}, {Name: "RequirePrivacy", Value: true},
					{Name: "Persistent", Value: false}}}, winhost.Result{})
		}, ""},
		{"unknown method", func() []error {
			return s.CheckCall(storage, winhost.Method{Class: "MSFT_Disk", Path: diskPath, Name: "Onlien"}, winhost.Result{})
		}, "MSFT_Disk has no method Onlien"},
		{"an OUT parameter passed in", func() []error {
			return s.CheckCall(storage, winhost.Method{Class: "MSFT_Disk", Path: diskPath, Name: "CreatePartition",
				In: []winhost.Param{{Name: "CreatedPartition", Value: "x"}}}, winhost.Result{})
		}, "no IN parameter CreatedPartition"},
		{"output", func() []error {
			return s.CheckCall(storage, winhost.Method{Class: "MSFT_Disk", Path: diskPath, Name: "CreatePartition",
				In: []winhost.Param{{Name: "UseMaximumSize", Value: true}}},
				winhost.Result{Out: map[string]any{"CreatedPartition": part, "ExtendedStatus": nil}})
		}, ""},
		{"misspelt output", func() []error {
			return s.CheckCall(storage, winhost.Method{Class: "MSFT_Disk", Path: diskPath, Name: "CreatePartition"},
				winhost.Result{Out: map[string]any{"CreatedPartitoin": part}})
		}, "no OUT parameter CreatedPartitoin"},
		{"output of the wrong shape", func() []error {
			return s.CheckCall(storage, winhost.Method{Class: "MSFT_Partition", Path: part.Path, Name: "GetSupportedSize"},
				winhost.Result{Out: map[string]any{"SizeMax": int64(5)}})
		}, "not what the executor makes of a uint64"},
		{"method on an object of another class", func() []error {
			return s.CheckCall(storage, winhost.Method{Class: "MSFT_Volume", Path: diskPath, Name: "Format"}, winhost.Result{})
		}, "invoked on an object of class MSFT_Disk"},
		{"association", func() []error {
			return s.CheckAssociators(storage, part.Path, "MSFT_PartitionToVolume", "MSFT_Volume", nil)
		}, ""},
		{"association that does not link the object", func() []error {
			return s.CheckAssociators(storage, diskPath, "MSFT_PartitionToVolume", "MSFT_Volume", nil)
		}, "does not link MSFT_Disk"},
		{"error object", func() []error {
			return s.CheckInstance(smb, winhost.Instance{Class: "MSFT_WmiError", Props: map[string]any{
				"error_Code": int64(1219), "error_Type": "WIN32", "MessageID": "Windows System Error 1219"}})
		}, ""},
		{"instance without a class", func() []error {
			return s.CheckInstance(storage, winhost.Instance{Props: map[string]any{"Number": int64(1)}})
		}, "names no class"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := tt.check()
			if tt.want == "" {
				for _, err := range errs {
					t.Error(err)
				}
				return
			}
			if len(errs) == 0 {
				t.Fatalf("no error, want one saying %q", tt.want)
			}
			for _, err := range errs {
				if strings.Contains(err.Error(), tt.want) {
					return
				}
			}
			t.Fatalf("errors %v, want one saying %q", errs, tt.want)
		})
	}
}

// Both trees are checked: an error names each tree in which it occurs.
func TestCheckerChecksBothTrees(t *testing.T) {
	s := schema(t)
	errs := s.CheckQuery(storage, "SELECT Numbr FROM MSFT_Disk", nil)
	got := map[string]bool{}
	for _, err := range errs {
		got[strings.SplitN(err.Error(), ":", 2)[0]] = true
	}
	for _, tree := range Trees {
		if !got[tree] {
			t.Errorf("no error from tree %s: %v", tree, errs)
		}
	}
}

func TestParseWQL(t *testing.T) {
	q, err := parseWQL(`SELECT a, b FROM C WHERE x = 'it\'s \\ AND' AND y = 3 AND z = TRUE`)
	if err != nil {
		t.Fatal(err)
	}
	if q.class != "C" || len(q.props) != 2 || len(q.conds) != 3 || q.conds[0].lit != `it's \ AND` || q.conds[1].lit != int64(3) || q.conds[2].lit != true {
		t.Fatalf("parsed %+v", q)
	}
	for _, bad := range []string{"DELETE FROM C", "SELECT a FROM", "SELECT a FROM C WHERE x", "SELECT a FROM C WHERE x = 'open", "SELECT a FROM C WHERE x = 1 OR y = 2"} {
		if _, err := parseWQL(bad); err == nil {
			t.Errorf("parsed %q", bad)
		}
	}
}

// A namespace a tree does not generate (Ungenerated) is checked against
// the other trees: the iSCSI initiator's Root\WMI class fits Server 23H2's
// MOF, a misspelt property there still fails, and a namespace no tree
// lists as ungenerated stays an error in the tree that lacks it.
func TestCheckerUngeneratedNamespace(t *testing.T) {
	s := schema(t)
	const ns = winhost.NamespaceWMI
	path := `\\NODE\root\wmi:MSiSCSIInitiator_SessionClass.InstanceName="x"`
	m := winhost.Method{Class: "MSiSCSIInitiator_SessionClass", Path: path, Name: "SendScsiReportLuns"}
	out := winhost.Result{Out: map[string]any{"ScsiStatus": int64(0), "ResponseBuffer": []any{int64(0)}, "SenseBuffer": []any{}}}
	if errs := s.CheckCall(ns, m, out); len(errs) != 0 {
		t.Errorf("SendScsiReportLuns: %v", errs)
	}
	if errs := s.CheckQuery(ns, "SELECT TargetNodeName FROM MSiSCSIInitiator_SessionClass", nil); len(errs) != 0 {
		t.Errorf("query: %v", errs)
	}
	errs := s.CheckQuery(ns, "SELECT TargetNodName FROM MSiSCSIInitiator_SessionClass", nil)
	if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), "server23h2: ") {
		t.Errorf("misspelt property: %v, want one error from server23h2", errs)
	}
	errs = s.CheckQuery(`Root\Microsoft\Windows\Nowhere`, "SELECT * FROM MSFT_Disk", nil)
	if len(errs) != len(Trees) {
		t.Errorf("a namespace no tree has: %v, want an error per tree", errs)
	}
}
