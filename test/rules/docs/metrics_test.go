package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/test/harness/doctable"
)

const (
	repoRoot   = "../../.."
	metricsDoc = repoRoot + "/docs/metrics.md"
)

// sourceDirs hold the product code whose metrics and log keys are
// documented.
var sourceDirs = []string{repoRoot + "/cmd", repoRoot + "/pkg"}

// libraryMetrics are registered by kubernetes-csi/csi-lib-utils' metrics
// manager (metrics.NewCSIMetricsManagerForPlugin), not by our code.
var libraryMetrics = []string{"csi_plugin_operations_seconds", "process_start_time_seconds"}

// keyArgs says where the key/value pairs start in the calls that log:
// logr's Info(msg, kv...), Error(err, msg, kv...) and WithValues(kv...),
// and the Windows host executor's helpers that pass kv... on to Info.
var keyArgs = map[string]int{
	"Info":       1,
	"Error":      2,
	"WithValues": 0,
	"logCall":    4,
	"win32Call":  4,
	"win32Do":    4,
}

// goFile is one parsed non-test Go file of the product code.
type goFile struct {
	path string
	dir  string
	fset *token.FileSet
	file *ast.File
}

func parseSources(t *testing.T) []goFile {
	t.Helper()
	var files []goFile
	for _, root := range sourceDirs {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			files = append(files, goFile{path: path, dir: filepath.Dir(path), fset: fset, file: f})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(files) == 0 {
		t.Fatal("no Go sources found")
	}
	return files
}

func callName(c *ast.CallExpr) string {
	switch f := c.Fun.(type) {
	case *ast.SelectorExpr:
		return f.Sel.Name
	case *ast.Ident:
		return f.Name
	case *ast.IndexExpr: // a generic call such as win32Call[T](...)
		if id, ok := f.X.(*ast.Ident); ok {
			return id.Name
		}
	}
	return ""
}

func stringLit(e ast.Expr) (string, bool) {
	bl, ok := e.(*ast.BasicLit)
	if !ok || bl.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(bl.Value)
	return s, err == nil
}

// loggedKeys returns the literal keys passed to the logging calls, with
// one place each is used.
func loggedKeys(files []goFile) map[string]string {
	keys := map[string]string{}
	for _, f := range files {
		ast.Inspect(f.file, func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			start, ok := keyArgs[callName(c)]
			if !ok {
				return true
			}
			for i := start; i < len(c.Args); i += 2 {
				if k, ok := stringLit(c.Args[i]); ok {
					if _, seen := keys[k]; !seen {
						keys[k] = f.fset.Position(c.Args[i].Pos()).String()
					}
				}
			}
			return true
		})
	}
	return keys
}

// stringLiterals returns every string literal of the product code.
func stringLiterals(files []goFile) map[string]bool {
	out := map[string]bool{}
	for _, f := range files {
		ast.Inspect(f.file, func(n ast.Node) bool {
			if s, ok := stringLit(exprOrNil(n)); ok {
				out[s] = true
			}
			return true
		})
	}
	return out
}

func exprOrNil(n ast.Node) ast.Expr {
	e, _ := n.(ast.Expr)
	return e
}

// registeredMetrics returns the full names of the metrics the code
// declares with k8s.io/component-base or Prometheus option structs
// (CounterOpts, HistogramOpts, GaugeOpts, SummaryOpts): Namespace,
// Subsystem and Name joined by "_", each a string literal or a string
// constant of the same package.
func registeredMetrics(t *testing.T, files []goFile) map[string]string {
	t.Helper()
	consts := map[string]map[string]string{} // dir -> name -> value
	for _, f := range files {
		for _, d := range f.file.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i < len(vs.Values) {
						if v, ok := stringLit(vs.Values[i]); ok {
							if consts[f.dir] == nil {
								consts[f.dir] = map[string]string{}
							}
							consts[f.dir][n.Name] = v
						}
					}
				}
			}
		}
	}
	out := map[string]string{}
	for _, f := range files {
		ast.Inspect(f.file, func(n ast.Node) bool {
			cl, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			sel, ok := cl.Type.(*ast.SelectorExpr)
			if !ok || !strings.HasSuffix(sel.Sel.Name, "Opts") || !strings.ContainsAny(sel.Sel.Name[:1], "CHGS") {
				return true
			}
			parts := map[string]string{}
			for _, e := range cl.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				key, ok := kv.Key.(*ast.Ident)
				if !ok || (key.Name != "Namespace" && key.Name != "Subsystem" && key.Name != "Name") {
					continue
				}
				switch v := kv.Value.(type) {
				case *ast.BasicLit:
					parts[key.Name], _ = stringLit(v)
				case *ast.Ident:
					c, ok := consts[f.dir][v.Name]
					if !ok {
						t.Errorf("%s: metric %s %s is not a string constant of the package", f.fset.Position(v.Pos()), key.Name, v.Name)
					}
					parts[key.Name] = c
				default:
					t.Errorf("%s: metric %s is not a literal or constant", f.fset.Position(kv.Pos()), key.Name)
				}
			}
			if parts["Name"] == "" {
				return true
			}
			var name []string
			for _, p := range []string{parts["Namespace"], parts["Subsystem"], parts["Name"]} {
				if p != "" {
					name = append(name, p)
				}
			}
			out[strings.Join(name, "_")] = f.fset.Position(cl.Pos()).String()
			return true
		})
	}
	return out
}

// TestMetricsDocumented: docs/metrics.md lists exactly the metrics the
// code and csi-lib-utils register.
func TestMetricsDocumented(t *testing.T) {
	files := parseSources(t)
	want := registeredMetrics(t, files)
	for _, m := range libraryMetrics {
		want[m] = "csi-lib-utils"
	}
	documented := doctable.FirstColumn(t, metricsDoc, "metric")
	for _, m := range slices.Sorted(maps.Keys(want)) {
		if _, ok := documented[m]; !ok {
			t.Errorf("metric %s (%s) is not in the metrics table of %s", m, want[m], metricsDoc)
		}
	}
	for _, m := range slices.Sorted(maps.Keys(documented)) {
		if _, ok := want[m]; !ok {
			t.Errorf("%s:%d: metric %s is documented but nothing registers it", metricsDoc, documented[m], m)
		}
	}
}

// TestLogKeysDocumented: docs/metrics.md lists every key the code logs,
// and every key it lists is a string in the code.
func TestLogKeysDocumented(t *testing.T) {
	files := parseSources(t)
	logged := loggedKeys(files)
	if len(logged) < 10 {
		t.Fatalf("found only %d log keys; the scan is broken", len(logged))
	}
	documented := doctable.FirstColumn(t, metricsDoc, "key")
	for _, k := range slices.Sorted(maps.Keys(logged)) {
		if _, ok := documented[k]; !ok {
			t.Errorf("log key %q (%s) is not in the log key table of %s", k, logged[k], metricsDoc)
		}
	}
	literals := stringLiterals(files)
	for _, k := range slices.Sorted(maps.Keys(documented)) {
		if !literals[k] {
			t.Errorf("%s:%d: log key %q is documented but the code never uses it", metricsDoc, documented[k], k)
		}
	}
}
