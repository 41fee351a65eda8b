package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/config"
	"github.com/wincsi/csi-windows-node/pkg/plugin"
)

// subcommand is what diagnose, preflight and selftest share: a flag set
// holding the plugin's own flags and the logging flags besides the
// subcommand's, the parsing, and the one-line messages with their exit
// statuses.
type subcommand struct {
	name    string
	usage   string
	fs      *flag.FlagSet
	opts    *config.Options
	logging *config.Logging
	stdout  io.Writer
	stderr  io.Writer
	// plugin names the plugin's and the logging flags, which --help lists
	// after the subcommand's own.
	plugin map[string]bool
}

// newSubcommand makes the flag set; the caller adds its own flags to fs.
// As the plugin's own flags do, --help goes to stdout, and a flag error is
// one line on stderr with where to look, not the whole usage.
func newSubcommand(name, usage string, stdout, stderr io.Writer) *subcommand {
	fs := flag.NewFlagSet("csi-windows-node "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parse reports errors and --help itself
	fs.Usage = func() {}
	s := &subcommand{name: name, usage: usage, fs: fs, logging: config.RegisterLogging(fs), opts: config.Register(fs, runtime.GOOS),
		stdout: stdout, stderr: stderr, plugin: map[string]bool{}}
	fs.VisitAll(func(f *flag.Flag) { s.plugin[f.Name] = true })
	return s
}

// parse parses the arguments and checks them with check (the
// subcommand's own rules), then applies the logging flags. When it
// returns false, the subcommand ends with the exit status it gives:
// --help is exitOK, a bad flag exitFlagError.
func (s *subcommand) parse(args []string, check func() error) (int, bool) {
	if err := s.fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(s.stdout, s.usage)
			config.SubcommandUsage(s.stdout, s.fs, func(name string) bool { return !s.plugin[name] })
			return exitOK, false
		}
		return s.usageError("%v\nRun csi-windows-node %s --help for the flags.", err, s.name), false
	}
	if s.fs.NArg() > 0 {
		return s.usageError("unexpected argument %q: every setting is a --flag\nRun csi-windows-node %s --help for the flags.", s.fs.Arg(0), s.name), false
	}
	if err := check(); err != nil {
		return s.invalid(err), false
	}
	if err := s.logging.Apply(); err != nil {
		return s.invalid(err), false
	}
	return 0, true
}

// invalid reports flags that parse but do not go together, or that name
// something unusable, and returns exitFlagError: one line for one problem,
// one line each after the first for several (errors.Join).
func (s *subcommand) invalid(err error) int {
	if msg := err.Error(); strings.Contains(msg, "\n") {
		return s.usageError("invalid flags:\n%s", msg)
	}
	return s.usageError("invalid flags: %v", err)
}

// pluginOptions finishes the plugin's flags (the host name is only
// --node-id's default) and builds the plugin's options from them. When ok
// is false the subcommand ends with code: the flags were refused.
func (s *subcommand) pluginOptions() (popts plugin.Options, code int, ok bool) {
	hostname, _ := os.Hostname()
	if err := s.opts.Finish(s.fs, runtime.GOOS, hostname); err != nil {
		return plugin.Options{}, s.invalid(err), false
	}
	popts, err := plugin.FromConfig(s.opts, runtime.GOOS)
	if err != nil {
		return plugin.Options{}, s.invalid(err), false
	}
	return popts, 0, true
}

// usageError prints one message about the flags and returns exitFlagError.
func (s *subcommand) usageError(format string, a ...any) int {
	s.printf(format, a...)
	return exitFlagError
}

// failed prints why the subcommand could not do its work and returns
// exitFailed.
func (s *subcommand) failed(err error) int {
	s.printf("%v", err)
	return exitFailed
}

func (s *subcommand) printf(format string, a ...any) {
	fmt.Fprintf(s.stderr, "csi-windows-node %s: "+format+"\n", append([]any{s.name}, a...)...)
}
