package winhost_test

import (
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/scripted"
	"github.com/wincsi/csi-windows-node/test/harness/wmischema"
)

// TestMain runs the suite with every scripted executor recording the calls
// it answers, then, when the whole suite ran and passed, checks every
// recorded WMI call against Microsoft's MOF as github.com/microsoft/wmi
// v0.43.0 ships it (Windows Server 2019 and 23H2; test/harness/wmischema):
// the query, association or method, its inputs, and the replies the tests
// scripted for it (the instances, the output parameters, the error
// objects), so a reply that Windows could not give fails too.
//
// Why the check is complete. Every WMI call of this package reaches
// Windows through the executor's Query, Associators or Call, the only WMI
// entry points there are (Executor, executor.go; the package cannot reach
// COM otherwise: wmiexec's confine test forbids importing go-ole or
// microsoft/wmi anywhere else). checkCallSites finds in this package's
// source every call of those three methods and, transitively, every call
// of a function that contains one (storage.query, SMB.find, ISCSI.Sessions,
// Disks.Get, ...): each such call site must appear in the stack of at
// least one recorded call. So a new call site, or a new wrapper and its
// callers, fails the suite until a test drives it through the scripted
// executor, and then its call is checked. What the parsers read is
// covered too: Props reports a property missing from an instance or from
// a method's outputs as an error (props.go), so a property the code reads
// must be in the scripted reply, where the check finds it.
//
// The checks are skipped when only part of the suite runs (-run, -skip,
// -list, -fuzz): coverage needs every test.
func TestMain(m *testing.M) {
	scripted.RecordAll()
	code := m.Run()
	if code == 0 && wholeSuite() {
		if errs := checkRecordedCalls(); len(errs) > 0 {
			fmt.Fprintln(os.Stderr, "--- FAIL: WMI schema conformance of the recorded calls (schema_test.go)")
			for _, err := range errs {
				fmt.Fprintln(os.Stderr, "    "+err.Error())
			}
			fmt.Println("FAIL")
			code = 1
		}
		if errs := checkRecordingShapes(scripted.Recorded()); len(errs) > 0 {
			fmt.Fprintln(os.Stderr, "--- FAIL: scripted replies against Windows recordings (shape_test.go)")
			for _, err := range errs {
				fmt.Fprintln(os.Stderr, "    "+err.Error())
			}
			fmt.Println("FAIL")
			code = 1
		}
	}
	os.Exit(code)
}

func wholeSuite() bool {
	for _, f := range []string{"test.run", "test.skip", "test.list", "test.fuzz"} {
		if fl := flag.Lookup(f); fl != nil && fl.Value.String() != "" {
			return false
		}
	}
	return true
}

func checkRecordedCalls() []error {
	dir, err := wmischema.ModuleDir()
	if err != nil {
		return []error{err}
	}
	s, err := wmischema.Load(dir)
	if err != nil {
		return []error{err}
	}
	recs := scripted.Recorded()
	errs := checkCallSites(recs)
	seen := map[string]bool{}
	for _, r := range recs {
		var found []error
		c := r.Call
		switch c.Kind {
		case scripted.KindQuery:
			found = s.CheckQuery(c.Namespace, c.WQL, r.Reply.Instances)
		case scripted.KindAssociators:
			found = s.CheckAssociators(c.Namespace, c.Path, c.Assoc, c.Result, r.Reply.Instances)
		case scripted.KindCall:
			found = s.CheckCall(c.Namespace, c.Method, r.Reply.Result)
		case scripted.KindDeleteInstance:
			found = s.CheckDelete(c.Namespace, c.Path)
		default:
			continue // Win32
		}
		var ce *winhost.COMError
		if errors.As(r.Reply.Err, &ce) && ce.ErrorObject != nil {
			found = append(found, s.CheckInstance(c.Namespace, *ce.ErrorObject)...)
		}
		for _, err := range found {
			msg := fmt.Sprintf("%v (called from %s)", err, firstFrame(r.Stack))
			if !seen[msg] {
				seen[msg] = true
				errs = append(errs, errors.New(msg))
			}
		}
	}
	return errs
}

// firstFrame is the innermost frame of this package's product code.
func firstFrame(stack []string) string {
	for _, f := range stack {
		file := f[:strings.LastIndex(f, ":")]
		if isProductFile(file) && filepath.Base(file) != "wmicall.go" {
			return filepath.Base(filepath.FromSlash(f))
		}
	}
	return "?"
}

var pkgDir = func() string {
	d, err := filepath.Abs(".")
	if err != nil {
		panic(err)
	}
	return normPath(d)
}()

// normPath makes the paths of stack frames (forward slashes on every OS)
// and of the file system comparable.
func normPath(p string) string {
	p = filepath.Clean(filepath.FromSlash(p))
	if runtime.GOOS == "windows" {
		p = strings.ToLower(p)
	}
	return p
}

func isProductFile(path string) bool {
	path = normPath(path)
	return filepath.Dir(path) == pkgDir && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go")
}

// wmiEntryPoints are the executor's WMI methods (Executor, executor.go,
// and AdminCalls' DeleteInstance, admin.go).
var wmiEntryPoints = map[string]bool{"Query": true, "Associators": true, "Call": true, "DeleteInstance": true}

// wmiKinds are the kinds of the scripted calls that reach WMI.
var wmiKinds = map[string]bool{scripted.KindQuery: true, scripted.KindAssociators: true, scripted.KindCall: true,
	scripted.KindDeleteInstance: true}

// callSite is a call expression in the product source, by file and lines.
type callSite struct {
	file       string
	start, end int
	callee     string
}

// checkCallSites fails for every WMI call site (see TestMain) that no
// recorded call went through.
func checkCallSites(recs []scripted.Record) []error {
	sites, err := wmiCallSites()
	if err != nil {
		return []error{err}
	}
	lines := map[string]map[int]bool{}
	for _, r := range recs {
		if !wmiKinds[r.Call.Kind] {
			continue
		}
		for _, f := range r.Stack {
			i := strings.LastIndex(f, ":")
			n, err := strconv.Atoi(f[i+1:])
			if err != nil {
				continue
			}
			file := normPath(f[:i])
			if lines[file] == nil {
				lines[file] = map[int]bool{}
			}
			lines[file][n] = true
		}
	}
	var errs []error
	for _, s := range sites {
		covered := false
		for l := s.start; l <= s.end && !covered; l++ {
			covered = lines[normPath(s.file)][l]
		}
		if !covered {
			errs = append(errs, fmt.Errorf("%s:%d: the call of %s reaches WMI, but no test drives it through the scripted executor, so its WMI call is not checked",
				filepath.Base(s.file), s.start, s.callee))
		}
	}
	return errs
}

// wmiCallSites returns every call in the product source that reaches an
// executor WMI method: calls of Query, Associators and Call, and,
// transitively, calls of any function or method whose body holds such a
// call. Matching is by name, which can only over-approximate: a
// same-named function that does not reach WMI would have to be covered
// too.
func wmiCallSites() ([]callSite, error) {
	fset := token.NewFileSet()
	paths, err := filepath.Glob(filepath.Join(pkgDir, "*.go"))
	if err != nil {
		return nil, err
	}
	type fn struct {
		name  string
		calls []callSite
	}
	var fns []fn
	for _, p := range paths {
		if !isProductFile(p) {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			x := fn{name: fd.Name.Name}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				ce, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				var name string
				switch f := ce.Fun.(type) {
				case *ast.SelectorExpr:
					name = f.Sel.Name
				case *ast.Ident:
					name = f.Name
				}
				if name != "" {
					x.calls = append(x.calls, callSite{file: p, start: fset.Position(ce.Pos()).Line,
						end: fset.Position(ce.End()).Line, callee: name})
				}
				return true
			})
			fns = append(fns, x)
		}
	}
	reaches := map[string]bool{}
	for k := range wmiEntryPoints {
		reaches[k] = true
	}
	for changed := true; changed; {
		changed = false
		for _, f := range fns {
			if reaches[f.name] {
				continue
			}
			for _, c := range f.calls {
				if reaches[c.callee] {
					reaches[f.name], changed = true, true
					break
				}
			}
		}
	}
	var sites []callSite
	for _, f := range fns {
		for _, c := range f.calls {
			if reaches[c.callee] {
				sites = append(sites, c)
			}
		}
	}
	sort.Slice(sites, func(i, j int) bool {
		if sites[i].file != sites[j].file {
			return sites[i].file < sites[j].file
		}
		return sites[i].start < sites[j].start
	})
	if len(sites) == 0 {
		return nil, errors.New("found no WMI call site in the package source: the search is broken")
	}
	return sites, nil
}

// The coverage search finds the call sites it must: every WMI method of
// the executor is reached from the places the package makes calls, and
// the wrappers' callers are included.
func TestWMICallSitesFound(t *testing.T) {
	sites, err := wmiCallSites()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, s := range sites {
		got[filepath.Base(s.file)+" "+s.callee] = true
	}
	for _, want := range []string{
		"wmicall.go Query", "wmicall.go Associators", "wmicall.go Call", // storage's wrappers
		"smb.go Query", "smb.go Call", // SMB calls the executor itself
		"disks.go query", "disks.go call", "volumes.go associators", "iscsi.go call",
		"smb.go find", "iscsi.go Sessions", "volumes.go Get", "disks.go Partitions",
	} {
		if !got[want] {
			t.Errorf("no call site %q among %v", want, got)
		}
	}
}
