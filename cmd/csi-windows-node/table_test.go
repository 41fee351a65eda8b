package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/inventory"
)

func TestTableOfAnEmptyNode(t *testing.T) {
	var b strings.Builder
	if err := writeTable(&b, &inventory.Report{}); err != nil {
		t.Fatal(err)
	}
	want := "VOLUMES (0)\nnone\n\nPROBLEMS (0)\nnone\n\nPUBLICATIONS (0)\nnone\n\nROOT ACCESS (0)\nnone\n\nSHARED RESOURCES (0)\nnone\n\nUNEXPLAINED (0)\nnone\n"
	if b.String() != want {
		t.Fatalf("table of an empty node:\n%s\nwant:\n%s", b.String(), want)
	}
}

// A volume ID may hold any character: a tab or a newline in one must not
// shift columns or start a row.
func TestTableKeepsRowsWhole(t *testing.T) {
	rep := &inventory.Report{
		Volumes: []inventory.Volume{{VolumeID: "odd\tid\nx", Backend: "disk", State: inventory.StateHealthy, StagingPath: "/k/s"}},
		Resources: []inventory.Resource{{Kind: inventory.KindSMBMapping, ID: `\\srv\data`, Owner: inventory.OwnerPlugin,
			Kept: true, UsedBy: []string{}}},
		Incomplete: []string{"list SMB global mappings: access denied"},
	}
	var b strings.Builder
	if err := writeTable(&b, rep); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"odd?id?x   disk     healthy  -          /k/s\n", `smb-mapping  \\srv\data  plugin (kept)`,
		"INCOMPLETE (could not be read; the rest stands) (1)\nWHAT\nlist SMB global mappings: access denied\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestTableReportsWriteErrors(t *testing.T) {
	if err := writeTable(failingWriter{}, &inventory.Report{}); err == nil {
		t.Fatal("a failed write was not reported")
	}
}

func TestTableRootAccessAndStateDirectory(t *testing.T) {
	rep := &inventory.Report{
		Volumes: []inventory.Volume{
			{VolumeID: "vol-a", Backend: "disk", State: inventory.StateDegraded, Disk: &inventory.DiskBacking{
				RootACL:    "(A;OICI;0x1f01ff;;;S-1-5-32-544)",
				RootAccess: []inventory.RootGrant{{Entry: "ContainerUser:modify", SID: "S-1-5-93-2-2", Applied: true}},
			}},
			{VolumeID: "vol-b", Backend: "iscsi", State: inventory.StateHealthy, ISCSI: &inventory.ISCSIBacking{Disk: &inventory.DiskBacking{
				RootACL: "(A;OICI;0x1301bf;;;S-1-5-93-2-2)", RootAccess: []inventory.RootGrant{{Entry: "ContainerUser:modify", SID: "S-1-5-93-2-2", Applied: true, OnRoot: true}},
			}}},
			// Staged read-only: the grant is left off on purpose.
			{VolumeID: "vol-d", Backend: "disk", State: inventory.StateHealthy, Disk: &inventory.DiskBacking{
				RootACL:    "(A;OICI;0x1f01ff;;;S-1-5-32-544)",
				RootAccess: []inventory.RootGrant{{Entry: "ContainerUser:modify", SID: "S-1-5-93-2-2", Reason: inventory.ReasonReadOnlyStage}},
			}},
			{VolumeID: "vol-c", Backend: "smb", State: inventory.StateHealthy, SMB: &inventory.SMBBacking{}},
		},
		StateDir: &inventory.StateDir{Path: `C:\state`, ACL: "O:S-1-5-32-544D:P(A;OICI;0x1f01ff;;;S-1-5-18)(A;OICI;0x1f01ff;;;S-1-5-32-544)",
			TokenOwner: "S-1-5-32-544", Refused: []inventory.RefusedFile{{Path: `C:\state\x.json`, Owner: "S-1-5-21-1-2-3-1001", Reason: "owned by neither SYSTEM, Administrators nor the plugin"},
				{Path: `C:\state\y.json`, Reason: "its DACL denies the plugin even its owner"}}},
	}
	var b strings.Builder
	if err := writeTable(&b, rep); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"ROOT ACCESS (3)\nVOLUME ID  VOLUMEROOTACCESS                                     ROOT ACL\n" +
			"vol-a      ContainerUser:modify (MISSING)                       (A;OICI;0x1f01ff;;;S-1-5-32-544)\n" +
			"vol-b      ContainerUser:modify (on root)                       (A;OICI;0x1301bf;;;S-1-5-93-2-2)\n" +
			"vol-d      ContainerUser:modify (read-only stage: not applied)  (A;OICI;0x1f01ff;;;S-1-5-32-544)\n",
		"STATE DIRECTORY (1)\n",
		`C:\state  O:S-1-5-32-544D:P(A;OICI;0x1f01ff;;;S-1-5-18)(A;OICI;0x1f01ff;;;S-1-5-32-544)  S-1-5-32-544    2`,
		"REFUSED JOURNAL FILES (not written by the plugin; never acted on) (2)\nPATH             OWNER                REASON\n" +
			`C:\state\x.json  S-1-5-21-1-2-3-1001  owned by neither SYSTEM, Administrators nor the plugin` + "\n" +
			`C:\state\y.json  -                    its DACL denies the plugin even its owner` + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
