package config

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Backends of the preflight and selftest --backends flags.
var knownBackends = []string{"disk", "smb", "iscsi"}

// PreflightOptions are the flags of csi-windows-node preflight, besides
// the plugin's own (Register), which it reads too.
type PreflightOptions struct {
	Output   string
	Fix      bool
	Backends []string
	Timeout  time.Duration
	Record   string
}

// RegisterPreflight adds preflight's own flags to fs.
func RegisterPreflight(fs *flag.FlagSet) *PreflightOptions {
	o := &PreflightOptions{Backends: slices.Clone(knownBackends)}
	RegisterOutput(fs, &o.Output)
	fs.BoolVar(&o.Fix, "fix", false, "make the one change preflight knows: set the iSCSI initiator service MSiSCSI to start automatically and start it; nothing else is ever changed")
	fs.Var(&backendsFlag{l: &o.Backends}, "backends", "the backends this node must serve: a service only an absent backend needs warns instead of failing")
	fs.DurationVar(&o.Timeout, "timeout", 2*time.Minute, "how long the checks (and the fix) may take")
	fs.StringVar(&o.Record, "record", "", "write every WMI and Win32 call and its answer to this file (JSON lines), to contribute as a test (docs/selftest.md)")
	return o
}

// Finish validates the flags.
func (o *PreflightOptions) Finish() error {
	var errs []error
	errs = append(errs, CheckOutput(o.Output), checkBackends(o.Backends))
	if o.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("--timeout=%s: must be positive", o.Timeout))
	}
	return errors.Join(errs...)
}

// SelftestOptions are the flags of csi-windows-node selftest, besides the
// plugin's own (Register), which it reads too.
type SelftestOptions struct {
	Output   string
	Backends []string
	Record   string
	WorkDir  string
	Timeout  time.Duration

	SMBLocal       bool
	SMBSource      string
	SMBCredentials string

	ISCSIPortal string
	ISCSIIQN    string
	ISCSILUN    uint
	ISCSICHAP   string
}

// RegisterSelftest adds selftest's own flags to fs; goos picks the work
// directory's default.
func RegisterSelftest(fs *flag.FlagSet, goos, tempDir string) *SelftestOptions {
	o := &SelftestOptions{Backends: []string{"disk"}}
	RegisterOutput(fs, &o.Output)
	fs.Var(&backendsFlag{l: &o.Backends}, "backends", "the backends to test: disk, smb (with --smb-local or --smb-source) and iscsi (with --iscsi-portal and --iscsi-iqn)")
	fs.StringVar(&o.Record, "record", "", "write every WMI and Win32 call and its answer to this file (JSON lines; secrets are never written), to contribute as a test (docs/selftest.md)")
	defWork := tempDir + "/csi-windows-node-selftest"
	if goos == "windows" {
		defWork = `C:\ProgramData\csi-windows-node\selftest`
	}
	fs.StringVar(&o.WorkDir, "work-dir", defWork, "directory selftest owns: each run's VHDX, kubelet directory, share and journal, under names that begin with csiwn-st-")
	fs.DurationVar(&o.Timeout, "timeout", 15*time.Minute, "how long the steps may take; what they made is removed after it too")
	fs.BoolVar(&o.SMBLocal, "smb-local", false, "smb: make a temporary local share and local user (random password) and map the share through the node's own name")
	fs.StringVar(&o.SMBSource, "smb-source", "", "smb: the share to map, //server/share or \\\\server\\share")
	fs.StringVar(&o.SMBCredentials, "smb-credentials", "", "smb: file of username=, password= and optionally domain= lines for --smb-source (no file: mapped without credentials, as mapWithoutCredentials=true does)")
	fs.StringVar(&o.ISCSIPortal, "iscsi-portal", "", "iscsi: the target portal, host[:port]")
	fs.StringVar(&o.ISCSIIQN, "iscsi-iqn", "", "iscsi: the target's IQN")
	fs.UintVar(&o.ISCSILUN, "iscsi-lun", 0, "iscsi: the LUN to stage; it is formatted NTFS if it is blank")
	fs.StringVar(&o.ISCSICHAP, "iscsi-chap", "", "iscsi: file of username= and password= lines for session CHAP (no file: no CHAP)")
	return o
}

// Finish validates the flags; set names the flags given (flag.FlagSet.Visit).
func (o *SelftestOptions) Finish(fs *flag.FlagSet) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var errs []error
	errs = append(errs, CheckOutput(o.Output), checkBackends(o.Backends))
	if o.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("--timeout=%s: must be positive", o.Timeout))
	}
	if o.WorkDir == "" {
		errs = append(errs, errors.New("--work-dir must not be empty"))
	}
	smb, iscsi := slices.Contains(o.Backends, "smb"), slices.Contains(o.Backends, "iscsi")
	switch {
	case smb && o.SMBLocal && o.SMBSource != "":
		errs = append(errs, errors.New("--smb-local and --smb-source: give one"))
	case smb && !o.SMBLocal && o.SMBSource == "":
		errs = append(errs, errors.New("--backends=smb needs --smb-local or --smb-source"))
	case o.SMBLocal && o.SMBCredentials != "":
		errs = append(errs, errors.New("--smb-credentials applies to --smb-source; --smb-local makes its own user"))
	}
	if iscsi && (o.ISCSIPortal == "" || o.ISCSIIQN == "") {
		errs = append(errs, errors.New("--backends=iscsi needs --iscsi-portal and --iscsi-iqn"))
	}
	for _, g := range []struct {
		backend string
		flags   []string
		on      bool
	}{
		{"smb", []string{"smb-local", "smb-source", "smb-credentials"}, smb},
		{"iscsi", []string{"iscsi-portal", "iscsi-iqn", "iscsi-lun", "iscsi-chap"}, iscsi},
	} {
		for _, f := range g.flags {
			if set[f] && !g.on {
				errs = append(errs, fmt.Errorf("--%s only applies with --backends including %s", f, g.backend))
			}
		}
	}
	if o.ISCSILUN > 1<<32-1 {
		errs = append(errs, fmt.Errorf("--iscsi-lun=%d: too large", o.ISCSILUN))
	}
	return errors.Join(errs...)
}

// RegisterOutput registers -o and --output, the output format of the
// operator's commands (preflight, selftest, diagnose).
func RegisterOutput(fs *flag.FlagSet, out *string) {
	fs.StringVar(out, "o", "table", "output format: table, or json for scripts")
	fs.StringVar(out, "output", "table", "the same as -o")
}

// CheckOutput fails unless o is an output format RegisterOutput offers.
func CheckOutput(o string) error {
	if o != "table" && o != "json" {
		return fmt.Errorf("-o=%s: want table or json", o)
	}
	return nil
}

func checkBackends(bs []string) error {
	if len(bs) == 0 {
		return errors.New("--backends is empty: want disk, smb or iscsi")
	}
	for _, b := range bs {
		if !slices.Contains(knownBackends, b) {
			return fmt.Errorf("--backends: unknown backend %q (want %s)", b, strings.Join(knownBackends, ", "))
		}
	}
	return nil
}

// backendsFlag is a comma-separated list that replaces its default when
// given.
type backendsFlag struct {
	l   *[]string
	set bool
}

func (f *backendsFlag) String() string {
	if f.l == nil {
		return ""
	}
	return strings.Join(*f.l, ",")
}

func (f *backendsFlag) Set(s string) error {
	if !f.set {
		*f.l, f.set = nil, true
	}
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" && !slices.Contains(*f.l, p) {
			*f.l = append(*f.l, p)
		}
	}
	return nil
}
