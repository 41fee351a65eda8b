package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"

	"github.com/wincsi/csi-windows-node/pkg/config"
)

// subcommand is what diagnose, preflight and selftest share: a flag set
// holding the plugin's own flags and the logging flags besides the
// subcommand's, the parsing, and the one-line messages with their exit
// statuses.
type subcommand struct {
	name    string
	fs      *flag.FlagSet
	opts    *config.Options
	logging *config.Logging
	stderr  io.Writer
}

// newSubcommand makes the flag set; the caller adds its own flags to fs.
func newSubcommand(name, usage string, stderr io.Writer) *subcommand {
	fs := flag.NewFlagSet("csi-windows-node "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	s := &subcommand{name: name, fs: fs, logging: config.RegisterLogging(fs), opts: config.Register(fs, runtime.GOOS), stderr: stderr}
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	return s
}

// parse parses the arguments and checks them with check (the
// subcommand's own rules), then applies the logging flags. When it
// returns false, the subcommand ends with the exit status it gives: --help
// (printed by the flag package) is exitOK, a bad flag exitFlagError.
func (s *subcommand) parse(args []string, check func() error) (int, bool) {
	if err := s.fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK, false
		}
		return exitFlagError, false
	}
	if s.fs.NArg() > 0 {
		return s.usageError("unexpected argument %q", s.fs.Arg(0)), false
	}
	if err := check(); err != nil {
		return s.usageError("invalid flags:\n%v", err), false
	}
	if err := s.logging.Apply(); err != nil {
		return s.usageError("invalid flags:\n%v", err), false
	}
	return 0, true
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
