package wmiexec

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cMemory are the functions whose result is not Go memory (a BSTR from
// SysAllocStringLen lives in the COM heap), so that keeping its address as
// an integer hides nothing from the garbage collector.
var cMemory = map[string]bool{"ole.SysAllocStringLen": true}

// addressesKeptAsIntegers returns the positions in src where a
// uintptr(unsafe.Pointer(x)) conversion is not itself an argument of a
// call: rule 4 of unsafe.Pointer (golang/go src/unsafe/unsafe.go) keeps x
// alive and in place only for a conversion written in the call's argument
// list; one stored in a variable or a struct field is an integer the
// garbage collector does not see, which a moving stack or a collection
// leaves dangling.
func addressesKeptAsIntegers(fset *token.FileSet, f *ast.File) []string {
	var out []string
	var visit func(n ast.Node, asArg bool)
	visit = func(n ast.Node, asArg bool) {
		if n == nil {
			return
		}
		if call, ok := n.(*ast.CallExpr); ok {
			if isAddressToInteger(call) && !asArg {
				out = append(out, fset.Position(call.Pos()).String())
			}
			visit(call.Fun, false)
			for _, a := range call.Args {
				visit(a, !isConversion(call))
			}
			return
		}
		ast.Inspect(n, func(c ast.Node) bool {
			if c == n || c == nil {
				return true
			}
			visit(c, false)
			return false
		})
	}
	visit(f, false)
	return out
}

// isAddressToInteger reports whether call is uintptr(unsafe.Pointer(x))
// with x anything but a call of a cMemory function.
func isAddressToInteger(call *ast.CallExpr) bool {
	if id, ok := call.Fun.(*ast.Ident); !ok || id.Name != "uintptr" || len(call.Args) != 1 {
		return false
	}
	inner, ok := call.Args[0].(*ast.CallExpr)
	if !ok || exprName(inner.Fun) != "unsafe.Pointer" || len(inner.Args) != 1 {
		return false
	}
	if c, ok := inner.Args[0].(*ast.CallExpr); ok && cMemory[exprName(c.Fun)] {
		return false
	}
	return true
}

// isConversion reports whether call converts to a basic integer type: its
// argument is then not an argument of a real call.
func isConversion(call *ast.CallExpr) bool {
	id, ok := call.Fun.(*ast.Ident)
	if !ok {
		return false
	}
	switch id.Name {
	case "uintptr", "int64", "uint64", "int", "uint32", "int32":
		return true
	}
	return false
}

// exprName spells an identifier, a selector, or a generic function's name
// without its type arguments.
func exprName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return exprName(e.X) + "." + e.Sel.Name
	case *ast.IndexExpr:
		return exprName(e.X)
	case *ast.IndexListExpr:
		return exprName(e.X)
	}
	return ""
}

// TestNoGoAddressKeptAsInteger scans the module's product code (every
// non-test Go file outside test/ and testdata/, whatever its GOOS) for a Go
// address converted to an integer anywhere but in a call's argument list.
func TestNoGoAddressKeptAsInteger(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	files := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch name := d.Name(); {
			case p != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata"),
				p == filepath.Join(root, "test"):
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		for _, pos := range addressesKeptAsIntegers(fset, f) {
			t.Errorf("%s: a Go address converted to uintptr outside a call's argument list; use a typed pointer field or pass it in the call", pos)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("scanned %d files below %s; the walk missed the module", files, root)
	}
}

// TestAddressScanFindsPlantedViolations proves that the scan flags the
// pattern putVariant had (an address stored in a struct field, then the
// struct passed to the call) and accepts the allowed forms.
func TestAddressScanFindsPlantedViolations(t *testing.T) {
	const src = `package p

func f() {
	params.rgvarg = uintptr(unsafe.Pointer(v))
	x := uintptr(unsafe.Pointer(&n))
	p := dispParams{rgvarg: uintptr(unsafe.Pointer(v))}
	syscall.SyscallN(fn, uintptr(unsafe.Pointer(&p)), uintptr(unsafe.Pointer(&ex)))
	proc.Call(sa, uintptr(unsafe.Pointer(&idx)))
	_ = ole.NewVariant(ole.VT_BSTR, int64(uintptr(unsafe.Pointer(ole.SysAllocStringLen(s)))))
	_ = ole.NewVariant(ole.VT_BSTR, int64(uintptr(unsafe.Pointer(&s))))
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "planted.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := addressesKeptAsIntegers(fset, f)
	want := []string{"planted.go:4:18", "planted.go:5:7", "planted.go:6:26", "planted.go:10:40"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("flagged %q, want %q", got, want)
	}
}

// moduleRoot returns the directory of the module's go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the test's directory")
		}
		dir = parent
	}
}
