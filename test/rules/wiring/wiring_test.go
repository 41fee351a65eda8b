package wiring

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/wincsi/csi-windows-node"

// constructors are the packages whose New wires part of the plugin, with
// the directories (relative to the module root, '/'-separated) that may
// call it besides pkg/plugin. pkg/winhost's end-to-end tests drive the
// backends over the scripted executor (backend_test.go, messages_test.go).
var constructors = map[string][]string{
	module + "/pkg/node":          nil,
	module + "/pkg/backend/disk":  {"pkg/backend/disk", "pkg/winhost"},
	module + "/pkg/backend/smb":   {"pkg/backend/smb", "pkg/winhost"},
	module + "/pkg/backend/iscsi": {"pkg/backend/iscsi", "pkg/winhost"},
}

// scan returns the calls of the constructors outside the places allowed to
// make them, as "file:line: pkg.New", and the number of files parsed.
func scan(root string) ([]string, int, error) {
	var out []string
	files := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "_output", ".bin", "vendor", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		dir := path.Dir(filepath.ToSlash(rel))
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		// The local names of the constructor packages in this file.
		names := map[string]string{}
		for _, imp := range f.Imports {
			ip, _ := strconv.Unquote(imp.Path.Value)
			if _, ok := constructors[ip]; !ok {
				continue
			}
			name := path.Base(ip)
			if imp.Name != nil {
				name = imp.Name.Name
			}
			names[name] = ip
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "New" {
				return true
			}
			x, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			ip, ok := names[x.Name]
			if !ok || dir == "pkg/plugin" || slices.Contains(constructors[ip], dir) {
				return true
			}
			out = append(out, fmt.Sprintf("%s:%d: %s.New", filepath.ToSlash(rel), fset.Position(call.Pos()).Line, path.Base(ip)))
			return true
		})
		return nil
	})
	return out, files, err
}

func TestOnlyPluginWires(t *testing.T) {
	found, files, err := scan("../../..")
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("only %d Go files scanned; is the module root right?", files)
	}
	for _, v := range found {
		t.Errorf("%s: build the plugin with plugin.New (pkg/plugin) instead of wiring it by hand", v)
	}
}

func TestScanFindsPlantedViolations(t *testing.T) {
	root := t.TempDir()
	plant := func(rel, src string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	plant("test/harness/x/x.go", `package x
import (
	"github.com/wincsi/csi-windows-node/pkg/node"
	dk "github.com/wincsi/csi-windows-node/pkg/backend/disk"
)
var _ = node.New(node.Config{})
var _ = dk.New(h, s, dk.Options{})
`)
	plant("pkg/backend/smb/env_test.go", `//go:build linux

package smb_test
import "github.com/wincsi/csi-windows-node/pkg/backend/iscsi"
var _ = iscsi.New(h, d, s, iscsi.Options{})
`)
	plant("pkg/plugin/plugin.go", `package plugin
import "github.com/wincsi/csi-windows-node/pkg/node"
var _ = node.New(node.Config{})
`)
	plant("pkg/backend/disk/disk_test.go", `package disk_test
import "github.com/wincsi/csi-windows-node/pkg/backend/disk"
var _ = disk.New(h, s, disk.Options{})
`)
	plant("pkg/other/other.go", `package other
import "example.com/node"
var _ = node.New()
`)
	found, _, err := scan(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"pkg/backend/smb/env_test.go:5: iscsi.New",
		"test/harness/x/x.go:6: node.New",
		"test/harness/x/x.go:7: disk.New",
	}
	if !slices.Equal(found, want) {
		t.Errorf("scan found\n%s\nwant\n%s", strings.Join(found, "\n"), strings.Join(want, "\n"))
	}
}
