package windowsci

import (
	"flag"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/config"
)

const repoRoot = "../../.."

// workflowSelection is how the workflow's unit step picks the packages it
// tests on Windows: every package outside test/. The check below walks the
// same set; if the workflow changes its selection, this test says so.
const workflowSelection = `go list ./... | grep -v /test/`

// simOnly are the packages that run only on Linux: the simulated host
// (POSIX paths, Linux symlinks as mount points) and the harnesses built on
// it. A test file that imports one, or that tests the simulated host
// itself, cannot work on Windows.
var simOnly = []string{
	"github.com/wincsi/csi-windows-node/pkg/sim",
	"github.com/wincsi/csi-windows-node/pkg/sim/controller",
	"github.com/wincsi/csi-windows-node/test/harness/simnode",
	"github.com/wincsi/csi-windows-node/test/harness/sanitytest",
	"github.com/wincsi/csi-windows-node/test/harness/testbin",
	"github.com/wincsi/csi-windows-node/test/harness/nodestates",
}

func TestWorkflowSelection(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, ".github/workflows/windows.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), workflowSelection) {
		t.Fatalf("windows.yml no longer selects its unit-test packages with %q; update this check to walk what it runs", workflowSelection)
	}
}

// TestUnitTestsAreTheWorkflows: make test-unit, the inner loop, runs the
// packages the Windows workflow runs, so that a unit test is one that runs
// on both systems.
func TestUnitTestsAreTheWorkflows(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	_, recipe, ok := strings.Cut(string(b), "\ntest-unit:")
	if !ok {
		t.Fatal("the Makefile has no test-unit target")
	}
	if end := strings.Index(recipe, "\n\n"); end >= 0 {
		recipe = recipe[:end]
	}
	if !strings.Contains(recipe, workflowSelection) {
		t.Errorf("make test-unit no longer selects its packages with %q, as windows.yml does:%s", workflowSelection, recipe)
	}
}

// TestSimTestsLimitedToLinux: every test file the Windows workflow would
// run that needs the simulated host carries a build constraint excluding
// Windows and a comment stating why ("Linux only: ..."). Files that use
// helpers of such a file must carry it too, which make verify enforces by
// building every test binary for Windows.
func TestSimTestsLimitedToLinux(t *testing.T) {
	var checked, limited int
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch {
			case rel == "test", strings.HasPrefix(rel, ".") && rel != ".", rel == "_output", rel == "deploy":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		checked++
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.ImportsOnly)
		if err != nil {
			return err
		}
		why := ""
		if strings.HasPrefix(rel, "pkg/sim/") {
			why = "tests the simulated host"
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			for _, s := range simOnly {
				if p == s {
					why = "imports " + p
				}
			}
		}
		if why == "" {
			return nil
		}
		limited++
		if !excludesWindows(string(src)) {
			t.Errorf("%s %s, which runs only on Linux, but has no build constraint excluding windows", rel, why)
			return nil
		}
		if !strings.Contains(header(string(src)), "Linux only:") && !strings.Contains(header(string(src)), "Unix only:") {
			t.Errorf("%s is limited to Linux without a stated reason: add a comment \"// Linux only: <why>\" after its //go:build line", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 || limited < 10 {
		t.Fatalf("walked %d test files, %d limited to Linux: the walk is broken", checked, limited)
	}
}

// excludesWindows reports whether the file's //go:build line is false for
// GOOS=windows.
func excludesWindows(src string) bool {
	for _, line := range strings.Split(header(src), "\n") {
		if constraint.IsGoBuild(line) {
			expr, err := constraint.Parse(line)
			if err != nil {
				return false
			}
			return !expr.Eval(func(tag string) bool { return tag == "windows" || tag == "amd64" || tag == "gc" })
		}
	}
	return false
}

// header is the text before the package clause.
func header(src string) string {
	if i := strings.Index(src, "\npackage "); i >= 0 {
		return src[:i]
	}
	return ""
}

// The check flags what it must: a file that imports the simulated host
// without a constraint, and one with a constraint but no reason.
func TestCheckFlagsViolations(t *testing.T) {
	bare := "package x\n\nimport _ \"github.com/wincsi/csi-windows-node/pkg/sim\"\n"
	if excludesWindows(bare) {
		t.Error("a file without a build line counts as excluding windows")
	}
	if !excludesWindows("//go:build linux\n\n// Linux only: reason.\n\npackage x\n") {
		t.Error("//go:build linux does not count as excluding windows")
	}
	if excludesWindows("//go:build linux || windows\n\npackage x\n") {
		t.Error("//go:build linux || windows counts as excluding windows")
	}
}

// TestWorkflowChecksTheNode: the workflow runs the binary as an operator
// would on both images: preflight with its fix and a kubelet directory it
// makes, selftest of the disk backend and of a local share with a
// recording, uploaded. Every --flag it passes to a subcommand exists (the
// workflow runs only on Windows, so a renamed flag would otherwise be
// found there first).
func TestWorkflowChecksTheNode(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, ".github/workflows/windows.yml"))
	if err != nil {
		t.Fatal(err)
	}
	wf := string(b)
	job := wf[strings.Index(wf, "\n  node-check:"):]
	if i := strings.Index(job[1:], "\n  integration:"); i >= 0 {
		job = job[:i+1]
	}
	for _, want := range []string{
		"os: [windows-2025, windows-2022]",
		"New-Item -ItemType Directory -Force -Path C:\\var\\lib\\kubelet",
		"./csi-windows-node.exe preflight --fix --kubelet-dir=C:\\var\\lib\\kubelet",
		"./csi-windows-node.exe selftest --backends=disk,smb --smb-local --record=",
		"uses: actions/upload-artifact@v4",
		"*.jsonl",
	} {
		if !strings.Contains(job, want) {
			t.Errorf("the node-check job lacks %q", want)
		}
	}
	flags := map[string]*flag.FlagSet{"preflight": flag.NewFlagSet("preflight", flag.ContinueOnError),
		"selftest": flag.NewFlagSet("selftest", flag.ContinueOnError)}
	config.RegisterPreflight(flags["preflight"])
	config.RegisterSelftest(flags["selftest"], "windows", `C:\Windows\Temp`)
	for _, fs := range flags {
		config.Register(fs, "windows")
		config.RegisterLogging(fs)
	}
	checked := 0
	for _, line := range strings.Split(strings.ReplaceAll(job, "`\n", " "), "\n") {
		for cmd, fs := range flags {
			i := strings.Index(line, "csi-windows-node.exe "+cmd)
			if i < 0 {
				continue
			}
			for _, f := range strings.Fields(line[i:]) {
				name, ok := strings.CutPrefix(f, "--")
				if !ok {
					if name, ok = strings.CutPrefix(f, "-"); !ok {
						continue
					}
				}
				name, _, _ = strings.Cut(name, "=")
				checked++
				if fs.Lookup(name) == nil {
					t.Errorf("the workflow passes %s a flag it does not have: %s", cmd, f)
				}
			}
		}
	}
	if checked < 6 {
		t.Fatalf("checked %d flags: the parse of the workflow is broken", checked)
	}
}
