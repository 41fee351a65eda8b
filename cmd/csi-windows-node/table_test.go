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
	want := "VOLUMES (0)\nnone\n\nPROBLEMS (0)\nnone\n\nPUBLICATIONS (0)\nnone\n\nSHARED RESOURCES (0)\nnone\n\nUNEXPLAINED (0)\nnone\n"
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
