package noprocess

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/test/harness/testbin"
)

// bannedImports start processes.
var bannedImports = map[string]bool{
	"os/exec":                    true,
	"golang.org/x/sys/execabs":   true,
	"github.com/go-cmd/cmd":      true,
	"github.com/bitfield/script": true,
}

// bannedCalls are process-creation functions of any package (syscall,
// os, golang.org/x/sys/windows and unix): a reference to one through a
// package name is a violation, called or not.
var bannedCalls = map[string]bool{
	"StartProcess": true, "ForkExec": true, "Exec": true, "CreateProcess": true, "CreateProcessAsUser": true,
	"CreateProcessWithLogonW": true, "CreateProcessWithTokenW": true, "ShellExecute": true, "ShellExecuteEx": true,
	"WinExec": true, "Syscall_Exec": true,
}

// bannedText, in a string literal, names a shell or an interpreter, or a
// process-creation function looked up by name (NewProc("CreateProcessW")).
var bannedText = regexp.MustCompile(`(?i)powershell|pwsh|cmd\.exe|\bcmd\s*/[ck]\b|conhost|wscript|cscript|mshta|rundll32|` +
	`/bin/(ba|z|da)?sh\b|\bbash\b|\bsh\s+-c\b|createprocess|shellexecute|winexec`)

type violation struct {
	pos, what string
}

// scan parses every product Go file below root and returns the violations.
func scan(root string) ([]violation, int, error) {
	var out []violation
	files := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "test", "testdata", ".git", "_output", ".bin", "vendor":
				if p != root {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		files++
		vs, err := scanFile(root, p)
		out = append(out, vs...)
		return err
	})
	sort.Slice(out, func(i, j int) bool { return out[i].pos < out[j].pos })
	return out, files, err
}

func scanFile(root, p string) ([]violation, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	rel, _ := filepath.Rel(root, p) // p is below root
	var out []violation
	add := func(pos token.Pos, format string, args ...any) {
		out = append(out, violation{pos: fmt.Sprintf("%s:%d", rel, fset.Position(pos).Line), what: fmt.Sprintf(format, args...)})
	}
	pkgs := map[string]bool{} // local names of imported packages
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			return nil, err
		}
		if bannedImports[path] {
			add(imp.Pos(), "imports %s", path)
		}
		name := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		pkgs[name] = true
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.SelectorExpr:
			if id, ok := x.X.(*ast.Ident); ok && pkgs[id.Name] && bannedCalls[x.Sel.Name] {
				add(x.Pos(), "uses %s.%s", id.Name, x.Sel.Name)
			}
		case *ast.BasicLit:
			if x.Kind == token.STRING {
				if s, err := strconv.Unquote(x.Value); err == nil && bannedText.MatchString(s) {
					add(x.Pos(), "string literal %s names a shell or process launcher", x.Value)
				}
			}
		}
		return true
	})
	return out, nil
}

// TestProductCodeStartsNoProcess scans the module.
func TestProductCodeStartsNoProcess(t *testing.T) {
	root, err := testbin.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	vs, files, err := scan(root)
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("only %d product files scanned from %s: the scan proves nothing", files, root)
	}
	for _, v := range vs {
		t.Errorf("%s: %s: product code must not start processes (no PowerShell, cmd.exe or shell; host work goes through WMI and Win32)", v.pos, v.what)
	}
	t.Logf("%d product Go files scanned", files)
}

// TestScanFindsPlantedViolations tests the test: a copy of the module's
// product files with violations planted in it must fail the scan, once
// per violation; the unplanted copy must pass.
func TestScanFindsPlantedViolations(t *testing.T) {
	root, err := testbin.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cp := t.TempDir()
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p) // p is below root
		if d.IsDir() {
			if d.Name() == ".git" || d.Name() == "_output" || d.Name() == ".bin" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(cp, rel), 0o755)
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(cp, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	if vs, _, err := scan(cp); err != nil || len(vs) != 0 {
		t.Fatalf("the unplanted copy: %v, %v", vs, err)
	}
	plants := map[string]string{
		"pkg/node/planted_exec.go":        "package node\n\nimport \"os/exec\"\n\nvar _ = exec.Command\n",
		"pkg/backend/planted_os.go":       "package backend\n\nimport \"os\"\n\nvar _ = os.StartProcess\n",
		"pkg/host/planted_windows.go":     "package host\n\nimport w \"golang.org/x/sys/windows\"\n\nfunc f() { _ = w.CreateProcess(nil, nil, nil, nil, false, 0, nil, nil, nil, nil) }\n",
		"cmd/csi-windows-node/planted.go": "package main\n\nconst shell = \"powershell.exe -NoProfile -Command Get-Disk\"\n",
		"pkg/journal/planted.go":          "package journal\n\nvar p = \"C:\\\\Windows\\\\System32\\\\cmd.exe\"\nvar q = `/bin/sh`\nvar r = \"CreateProcessW\"\n",
		"pkg/winpath/planted.go":          "package winpath\n\nimport \"syscall\"\n\nvar _ = syscall.ForkExec\n",
		// Allowed: tests and test/ directories.
		"pkg/node/allowed_test.go": "package node\n\nimport \"os/exec\"\n\nvar _ = exec.Command(\"bash\")\n",
		"test/tools/allowed.go":    "package tools\n\nimport \"os/exec\"\n\nvar _ = exec.Command(\"pwsh\")\n",
	}
	for rel, src := range plants {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(cp, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cp, rel), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	vs, _, err := scan(cp)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, v := range vs {
		got[strings.SplitN(v.pos, ":", 2)[0]]++
	}
	want := map[string]int{
		"pkg/node/planted_exec.go":        1,
		"pkg/backend/planted_os.go":       1,
		"pkg/host/planted_windows.go":     1,
		"cmd/csi-windows-node/planted.go": 1,
		"pkg/journal/planted.go":          3,
		"pkg/winpath/planted.go":          1,
	}
	for f, n := range want {
		if got[filepath.FromSlash(f)] != n {
			t.Errorf("%s: %d violations found, want %d (all: %v)", f, got[filepath.FromSlash(f)], n, vs)
		}
	}
	if len(vs) != 8 {
		t.Errorf("%d violations, want 8 (tests and test/ directories are allowed): %v", len(vs), vs)
	}
}
