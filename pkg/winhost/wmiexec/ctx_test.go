package wmiexec

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"slices"
	"testing"
)

// boundedBy are the calls that end when their context does: the worker
// pools (win32Call and win32Do go through comworker.Call, which returns at
// the deadline or cancellation and leaves the hung call to its worker) and
// the resolver, which takes a context itself. logCall takes one too, only
// to log, so it does not count.
var boundedBy = map[string]bool{
	"win32Call": true, "win32Do": true, "comworker.Call": true, "net.DefaultResolver.LookupNetIP": true,
}

// TestEveryCallHonoursItsContext reads the Windows executor's source (it
// cannot run here) and fails unless every exported method of Executor
// takes a context first and hands it to a call that ends with it: every
// host call, the operator's (preflight, selftest) included, honours the
// caller's deadline, and nothing blocks forever.
func TestEveryCallHonoursItsContext(t *testing.T) {
	files, err := filepath.Glob("*_windows.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	methods := 0
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || !fd.Name.IsExported() || recvName(fd) != "Executor" {
				continue
			}
			methods++
			params := fd.Type.Params.List
			if len(params) == 0 || exprName(params[0].Type) != "context.Context" || len(params[0].Names) != 1 {
				t.Errorf("%s: Executor.%s does not take a context first", fset.Position(fd.Pos()), fd.Name.Name)
				continue
			}
			ctx := params[0].Names[0].Name
			bounded := false
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				c, ok := n.(*ast.CallExpr)
				if !ok || len(c.Args) == 0 {
					return true
				}
				if id, ok := c.Args[0].(*ast.Ident); ok && id.Name == ctx && boundedBy[exprName(c.Fun)] {
					bounded = true
				}
				return true
			})
			if !bounded {
				t.Errorf("%s: Executor.%s hands its context to none of %v", fset.Position(fd.Pos()), fd.Name.Name, slices.Sorted(maps.Keys(boundedBy)))
			}
		}
	}
	if methods < 40 {
		t.Fatalf("read %d methods of Executor in %v: the test no longer finds them", methods, files)
	}
}

func recvName(fd *ast.FuncDecl) string {
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	return exprName(t)
}
