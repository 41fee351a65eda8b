// Command hostgen writes the code that repeats one shape for every method
// of the host interfaces (pkg/host): the metrics decorator of
// pkg/hostmetrics (wrap.go) and the failing host of pkg/host/hosttest
// (unimplemented.go). It reads the interfaces from the host.Host struct's
// fields with go/types, so a method added to an interface reaches both
// files by running go generate; nobody edits them by hand.
//
// Each of those packages runs it from a go:generate line:
//
//	go run ../host/internal/hostgen -kind wrap -host ../host -o wrap.go
//
// With HOSTGEN_CHECK=1 in the environment it writes nothing and fails when
// the file differs from what it would write; make verify runs go generate
// that way, so a stale file fails the build.
//
// It also checks the rules the generated code relies on and the host
// contract states: every method takes a context.Context first and returns
// an error last.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
)

func main() {
	kind := flag.String("kind", "", "what to write: wrap (pkg/hostmetrics) or unimplemented (pkg/host/hosttest)")
	hostDir := flag.String("host", "", "the directory of package host")
	out := flag.String("o", "", "the file to write")
	flag.Parse()
	if err := run(*kind, *hostDir, *out, os.Getenv("HOSTGEN_CHECK") == "1"); err != nil {
		fmt.Fprintf(os.Stderr, "hostgen: %v\n", err)
		os.Exit(1)
	}
}

func run(kind, hostDir, out string, check bool) error {
	if hostDir == "" || out == "" {
		return fmt.Errorf("-host and -o are required")
	}
	m, err := load(hostDir)
	if err != nil {
		return err
	}
	return emit(m, kind, out, check)
}

// emit writes the file of kind for m to out, or with check compares it.
func emit(m *model, kind, out string, check bool) error {
	var src []byte
	var err error
	switch kind {
	case "wrap":
		src, err = wrap(m)
	case "unimplemented":
		src, err = unimplemented(m)
	default:
		return fmt.Errorf("-kind %q: want wrap or unimplemented", kind)
	}
	if err != nil {
		return err
	}
	if check {
		have, err := os.ReadFile(out)
		if err != nil {
			return err
		}
		// A checkout that turned line ends into CRLF (git's autocrlf on
		// Windows) holds the same file.
		if !bytes.Equal(bytes.ReplaceAll(have, []byte("\r\n"), []byte("\n")), src) {
			return fmt.Errorf("%s is stale: the host interfaces changed; run go generate in its package", out)
		}
		return nil
	}
	return os.WriteFile(out, src, 0o644)
}
