package config_test

import (
	"flag"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/config"
)

// helpFlags registers the flags as the binary does: the logging flags,
// then ours.
func helpFlags() *flag.FlagSet {
	fs := flag.NewFlagSet("csi-windows-node", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	config.RegisterLogging(fs)
	config.Register(fs, "windows")
	return fs
}

// TestEveryFlagHasAGroup: every flag Register adds is in a group other
// than logging, so --help never files a plugin flag under logging.
func TestEveryFlagHasAGroup(t *testing.T) {
	pluginFlags().VisitAll(func(f *flag.Flag) {
		if config.GroupOf(f.Name) == config.GroupLogging {
			t.Errorf("--%s has no group: add it to groupFlags (pkg/config/usage.go)", f.Name)
		}
	})
	loggingFlags().VisitAll(func(f *flag.Flag) {
		if g := config.GroupOf(f.Name); g != config.GroupLogging {
			t.Errorf("logging flag --%s is in group %q", f.Name, g)
		}
	})
}

func TestUsage(t *testing.T) {
	fs := helpFlags()
	var b strings.Builder
	config.Usage(&b, fs)
	out := b.String()
	if !strings.HasPrefix(out, "Usage: csi-windows-node ") {
		t.Errorf("--help does not start with a usage line:\n%s", out)
	}
	if !strings.Contains(out, "docs/flags.md") {
		t.Errorf("--help does not point at docs/flags.md:\n%s", out)
	}
	// The groups, in order, each listing exactly its flags.
	pos := -1
	for _, g := range config.Groups {
		i := strings.Index(out, "\n"+string(g)+":\n")
		if i < pos {
			t.Fatalf("group %q missing or out of order:\n%s", g, out)
		}
		pos = i
	}
	group := config.Group("")
	seen := map[string]int{}
	for _, line := range strings.Split(out, "\n") {
		if g := strings.TrimSuffix(line, ":"); g != line && !strings.HasPrefix(line, " ") {
			group = config.Group(g)
			continue
		}
		name, ok := strings.CutPrefix(line, "  --")
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(name, " ")
		seen[name]++
		if want := config.GroupOf(name); group != want {
			t.Errorf("--%s is listed under %q, want %q", name, group, want)
		}
	}
	fs.VisitAll(func(f *flag.Flag) {
		if seen[f.Name] != 1 {
			t.Errorf("--%s is listed %d times", f.Name, seen[f.Name])
		}
	})
}

// TestSubcommandUsage: a subcommand's --help explains its own flags in
// full (a one-letter flag with one dash) and names every plugin flag once,
// under its group, without explaining it again.
func TestSubcommandUsage(t *testing.T) {
	fs := helpFlags()
	plugin := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { plugin[f.Name] = true })
	fs.String("o", "table", "output format")
	fs.Bool("fix", false, "make the one change")
	var b strings.Builder
	config.SubcommandUsage(&b, fs, func(name string) bool { return !plugin[name] })
	own, rest, ok := strings.Cut(b.String(), "\nThe plugin's flags are accepted too")
	if !ok {
		t.Fatalf("no plugin flags section:\n%s", b.String())
	}
	if own != "  --fix\n    \tmake the one change\n  -o string\n    \toutput format (default \"table\")\n" {
		t.Errorf("own flags:\n%s", own)
	}
	if strings.Contains(rest, "\t") {
		t.Errorf("the plugin's flags are explained again:\n%s", rest)
	}
	seen := map[string]int{}
	group := config.Group("")
	for _, line := range strings.Split(rest, "\n")[1:] { // after the heading
		if g, names, ok := strings.Cut(line, ":"); ok && strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "   ") {
			group, line = config.Group(strings.TrimSpace(g)), names
		}
		for _, w := range strings.Fields(line) {
			if name, ok := strings.CutPrefix(strings.TrimSuffix(w, ","), "--"); ok {
				seen[name]++
				if want := config.GroupOf(name); group != want {
					t.Errorf("--%s is named under %q, want %q", name, group, want)
				}
			}
		}
	}
	for name := range plugin {
		if seen[name] != 1 {
			t.Errorf("--%s is named %d times:\n%s", name, seen[name], rest)
		}
	}
	if seen["fix"]+seen["o"] != 0 {
		t.Errorf("an own flag is among the plugin's:\n%s", rest)
	}
}

// TestFlagsDocGroupedAsHelp: docs/flags.md has one section per group of
// --help, holding the flags of that group.
func TestFlagsDocGroupedAsHelp(t *testing.T) {
	b, err := os.ReadFile(flagsDoc)
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]string{}
	for _, sec := range strings.Split(string(b), "\n## ")[1:] {
		title, body, _ := strings.Cut(sec, "\n")
		sections[title] = body
	}
	fs := pluginFlags()
	for _, g := range config.Groups {
		title, _, _ := strings.Cut(string(g), " (")
		body, ok := sections[title]
		if !ok {
			t.Errorf("%s has no section %q", flagsDoc, "## "+title)
			continue
		}
		if g == config.GroupLogging {
			continue // TestFlagsDocumented checks that its flags are klog's
		}
		documented := map[string]bool{}
		for _, r := range tableRows(t, body, "flag", "default", "meaning") {
			name := strings.Trim(r.cells[0], "`-")
			documented[name] = true
			if config.GroupOf(name) != g {
				t.Errorf("%s: --%s is in section %q, but --help lists it under %q", flagsDoc, name, title, config.GroupOf(name))
			}
		}
		fs.VisitAll(func(f *flag.Flag) {
			if config.GroupOf(f.Name) == g && !documented[f.Name] {
				t.Errorf("%s: --%s is not in section %q", flagsDoc, f.Name, title)
			}
		})
	}
}
