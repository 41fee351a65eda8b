package config_test

import (
	"flag"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/config"
)

const flagsDoc = "../../docs/flags.md"

// docsNamingFlags are the pages that mention the plugin's flags; every
// --flag they name must exist (in the plugin, its logging flags, or in
// otherFlags).
var docsNamingFlags = []string{
	"../../docs/flags.md",
	"../../docs/install.md",
	"../../docs/vendor-integration.md",
	"../../docs/troubleshooting.md",
	"../../docs/metrics.md",
	"../../docs/sim-config.md",
	"../../docs/reliability.md",
	"../../docs/selftest.md",
	"../../docs/windows.md",
	"../../README.md",
}

// otherFlags are flags of other programs the pages above use: the
// sidecars, kubelet, kubectl, kustomize, helm, docker and csc.
var otherFlags = map[string]bool{
	// the flag package's own, on every Go program
	"help": true,
	// node-driver-registrar and livenessprobe
	"csi-address": true, "kubelet-registration-path": true, "plugin-registration-path": true,
	"probe-timeout": true, "health-port": true,
	// kubelet
	"root-dir": true,
	// kubectl, helm, docker buildx
	"use": true, "name": true, "namespace": true, "set": true, "values": true, "platform": true, "push": true, "build-arg": true,
	"previous": true, "tail": true, "selector": true, "timeout": true, "wait": true, "all-containers": true,
	"extra-create-metadata": true, "reuse-values": true, "output": true,
	// csc (the CSI client of the Linux quick start)
	"vol-context": true, "pub-context": true, "staging-target-path": true, "target-path": true, "cap": true, "req-bytes": true,
}

// pluginFlags registers the plugin's flags as cmd/csi-windows-node does
// on Windows, without the logging flags.
func pluginFlags() *flag.FlagSet {
	fs := flag.NewFlagSet("csi-windows-node", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	config.Register(fs, "windows")
	return fs
}

// loggingFlags registers the logging flags as cmd/csi-windows-node does.
func loggingFlags() *flag.FlagSet {
	fs := flag.NewFlagSet("logging", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	config.RegisterLogging(fs)
	return fs
}

// docRow is one row of a markdown table.
type docRow struct {
	line  int
	cells []string
}

// tableRows returns the rows of every table in doc whose header is want.
func tableRows(t *testing.T, doc string, want ...string) []docRow {
	t.Helper()
	lines := strings.Split(doc, "\n")
	var rows []docRow
	for i := 0; i+1 < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "|") || strings.Join(cells(lines[i]), "|") != strings.Join(want, "|") {
			continue
		}
		for i += 2; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ {
			c := cells(lines[i])
			if len(c) != len(want) {
				t.Errorf("line %d: %d cells, want %d", i+1, len(c), len(want))
				continue
			}
			rows = append(rows, docRow{line: i + 1, cells: c})
		}
	}
	return rows
}

// cells splits a table row on pipes that are not escaped or inside code.
func cells(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(strings.TrimSuffix(line, "|"), "|")
	var out []string
	var cur strings.Builder
	code := false
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case c == '`':
			code = !code
			cur.WriteByte(c)
		case c == '|' && !code:
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	return append(out, strings.TrimSpace(cur.String()))
}

var flagCell = regexp.MustCompile("^`--([a-z0-9_-]+)`$")

// checkTable compares a table of flags with a flag set: every flag of the
// set is a row, every row a flag, and each default cell shows the flag's
// default value in backticks when it has one.
func checkTable(t *testing.T, doc string, header string, fs *flag.FlagSet, all bool) {
	t.Helper()
	rows := tableRows(t, doc, header, "default", "meaning")
	if len(rows) == 0 {
		t.Fatalf("%s: no table with header | %s | default | meaning |", flagsDoc, header)
	}
	documented := map[string]bool{}
	for _, r := range rows {
		m := flagCell.FindStringSubmatch(r.cells[0])
		if m == nil {
			t.Errorf("%s:%d: first cell %q is not a backticked --flag", flagsDoc, r.line, r.cells[0])
			continue
		}
		name := m[1]
		if documented[name] {
			t.Errorf("%s:%d: --%s documented twice", flagsDoc, r.line, name)
		}
		documented[name] = true
		f := fs.Lookup(name)
		if f == nil {
			t.Errorf("%s:%d: --%s is documented but the binary has no such flag", flagsDoc, r.line, name)
			continue
		}
		if f.DefValue != "" && !strings.Contains(r.cells[1], "`"+f.DefValue+"`") {
			t.Errorf("%s:%d: --%s default cell %q does not show the default `%s`", flagsDoc, r.line, name, r.cells[1], f.DefValue)
		}
		if strings.TrimSpace(r.cells[2]) == "" {
			t.Errorf("%s:%d: --%s has no meaning", flagsDoc, r.line, name)
		}
	}
	if !all {
		return
	}
	var missing []string
	fs.VisitAll(func(f *flag.Flag) {
		// -o is --output's short form, documented in its row.
		if !documented[f.Name] && !(f.Name == "o" && documented["output"]) {
			missing = append(missing, "--"+f.Name)
		}
	})
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("%s: flags registered by config.Register but not documented: %v", flagsDoc, missing)
	}
}

// TestFlagsDocumented keeps docs/flags.md and config.Register in step:
// the same flags, with the same defaults.
func TestFlagsDocumented(t *testing.T) {
	b, err := os.ReadFile(flagsDoc)
	if err != nil {
		t.Fatal(err)
	}
	checkTable(t, string(b), "flag", pluginFlags(), true)
	checkTable(t, string(b), "logging flag", loggingFlags(), true)
	checkTable(t, string(b), "preflight flag", preflightFlags(), true)
	checkTable(t, string(b), "selftest flag", selftestFlags(), true)
}

// preflightFlags and selftestFlags register the subcommands' own flags as
// cmd/csi-windows-node does on Windows.
func preflightFlags() *flag.FlagSet {
	fs := flag.NewFlagSet("preflight", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	config.RegisterPreflight(fs)
	return fs
}

func selftestFlags() *flag.FlagSet {
	fs := flag.NewFlagSet("selftest", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	config.RegisterSelftest(fs, "windows", `C:\Windows\Temp`)
	return fs
}

var flagMention = regexp.MustCompile(`(?:^|[^A-Za-z0-9_-])--([a-z][a-z0-9_-]*[a-z0-9])`)

// TestDocsNameRealFlags fails when a page names a --flag that neither the
// plugin (its logging flags included), nor one of the other programs the
// pages show has, such as a misspelt --drivername.
func TestDocsNameRealFlags(t *testing.T) {
	plugin, logging, pre, self := pluginFlags(), loggingFlags(), preflightFlags(), selftestFlags()
	for _, path := range docsNamingFlags {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range flagMention.FindAllStringSubmatchIndex(line, -1) {
				name := line[m[2]:m[3]]
				if m[3] < len(line) && strings.ContainsRune("-*", rune(line[m[3]])) {
					continue // a prefix such as --sim-*
				}
				if plugin.Lookup(name) != nil || logging.Lookup(name) != nil || pre.Lookup(name) != nil || self.Lookup(name) != nil || otherFlags[name] {
					continue
				}
				t.Errorf("%s:%d: --%s is not a flag of csi-windows-node (docs/flags.md) nor of a program the docs use", path, i+1, name)
			}
		}
	}
}
