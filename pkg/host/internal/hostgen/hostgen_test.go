package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedFilesAreFresh: the checked-in files are what hostgen writes
// from today's interfaces (make verify checks the same with go generate).
func TestGeneratedFilesAreFresh(t *testing.T) {
	m, err := load("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct{ kind, out string }{
		{"wrap", "../../../hostmetrics/wrap.go"},
		{"unimplemented", "../../hosttest/unimplemented.go"},
	} {
		if err := emit(m, f.kind, f.out, true); err != nil {
			t.Errorf("%s: %v", f.kind, err)
		}
	}
}

// TestShapes generates both files for a fixture with unnamed, variadic and
// clashing parameters and results of every kind of type.
func TestShapes(t *testing.T) {
	m, err := load("testdata/ok")
	if err != nil {
		t.Fatal(err)
	}
	w, err := wrap(m)
	if err != nil {
		t.Fatal(err)
	}
	u, err := unimplemented(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"AreaThings = \"things\"",
		"Other:  other{next: h.Other, m: m},",
		"func (w things) Apply(ctx context.Context, a1 host.Kind, a2 ...string) error {\n\tstart := time.Now()\n\terr := w.next.Apply(ctx, a1, a2...)\n\tw.m.observe(AreaThings, \"Apply\", start, err)\n\treturn err\n}",
		"func (w things) Get(ctx context.Context, start_ string, w_ *host.Thing) (host.Thing, host.Kind, bool, []byte, error) {",
		"r0, r1, r2, r3, err := w.next.Get(ctx, start_, w_)",
	} {
		if !strings.Contains(string(w), want) {
			t.Errorf("wrap lacks\n%s\nin\n%s", want, w)
		}
	}
	if strings.Index(string(w), ") Count(") > strings.Index(string(w), ") Apply(") {
		t.Error("wrap does not keep the interface's order of methods")
	}
	for _, want := range []string{
		"Things: unimplementedThings{},",
		"func (unimplementedThings) Count(context.Context) (int, error) {\n\treturn 0, notImpl(\"things.Count\")\n}",
		"func (unimplementedThings) Apply(context.Context, host.Kind, ...string) error {\n\treturn notImpl(\"things.Apply\")\n}",
		"return host.Thing{}, 0, false, nil, notImpl(\"things.Get\")",
		"return \"\", notImpl(\"other.Name\")",
	} {
		if !strings.Contains(string(u), want) {
			t.Errorf("unimplemented lacks\n%s\nin\n%s", want, u)
		}
	}
}

// TestRefusesMethodsOutsideTheContract: a method without a context first
// or an error last is refused, naming it.
func TestRefusesMethodsOutsideTheContract(t *testing.T) {
	for dir, want := range map[string]string{
		"testdata/noctx": "things.Count: the first parameter must be a context.Context",
		"testdata/noerr": "things.Count: the last result must be an error",
	} {
		if _, err := load(dir); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", dir, err, want)
		}
	}
}

// TestCheckFailsOnAStaleFile: in check mode a file that differs from what
// hostgen writes is an error and stays as it was.
func TestCheckFailsOnAStaleFile(t *testing.T) {
	m, err := load("testdata/ok")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "wrap.go")
	if err := os.WriteFile(out, []byte("package hostmetrics\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := emit(m, "wrap", out, true); err == nil || !strings.Contains(err.Error(), "stale") {
		t.Fatalf("check of a stale file: %v", err)
	}
	if b, _ := os.ReadFile(out); string(b) != "package hostmetrics\n" {
		t.Fatal("check mode wrote the file")
	}
	if err := emit(m, "wrap", out, false); err != nil {
		t.Fatal(err)
	}
	if err := emit(m, "wrap", out, true); err != nil {
		t.Fatalf("check after writing: %v", err)
	}
}
