package selftest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/internal/filelock"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/journal"
	"github.com/wincsi/csi-windows-node/pkg/plugin"
	"github.com/wincsi/csi-windows-node/pkg/sweep"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// Prefix begins the name of everything selftest makes: directories,
// VHDX files, volume IDs, shares, local users. A run adds its ID
// ("csiwn-st-1a2b3c4d"); a user name stays within Windows' 20 characters.
const Prefix = "csiwn-st-"

// DriverName is the driver name of the plugin selftest builds: its
// staging paths carry it, and it is not a deployed driver's.
const DriverName = "selftest.csi.wincsi.io"

// Backends selftest can run, in the order it runs them.
const (
	BackendDisk  = "disk"
	BackendSMB   = "smb"
	BackendISCSI = "iscsi"
)

// AllBackends lists them.
var AllBackends = []string{BackendDisk, BackendSMB, BackendISCSI}

// Step results.
const (
	Pass = "pass"
	Fail = "fail"
	Skip = "skip"
)

// Node is the machine selftest runs on.
type Node struct {
	Host  host.Host
	Admin host.Admin
	// Style is the path grammar of the host's paths.
	Style winpath.Style
	// RoundTrips returns the host round trips made so far (WMI round trips
	// on Windows); nil when they are not counted.
	RoundTrips func() int
}

// SMBTarget is the share the smb backend maps: a share the operator names
// (Source and its credentials) or, with Local, one selftest makes on the
// node itself.
type SMBTarget struct {
	Source   string // \\server\share or //server/share
	User     string // DOMAIN\user, user@domain or user
	Password host.Secret
	Local    bool
}

// ISCSITarget is the target the iscsi backend logs in to; CHAP when
// CHAPUser is set.
type ISCSITarget struct {
	Portal     string // host[:port]
	IQN        string
	LUN        uint32
	CHAPUser   string
	CHAPSecret host.Secret
}

// Config configures a run.
type Config struct {
	// Backends to run (AllBackends order); at least one.
	Backends []string
	// WorkDir is an absolute host path that selftest owns: each run makes
	// its directory <WorkDir>\<Prefix><run> there.
	WorkDir string
	// LocalDir is where the run's stage journal and the lock against a
	// second selftest live, on the machine selftest runs on (it is read
	// with the os package); "" means WorkDir.
	LocalDir string
	// Run is the run's ID (lower-case hex, 8 characters); random when
	// empty. A replay passes the recorded one.
	Run string
	// Plugin is the plugin's configuration as its flags give it; selftest
	// sets the driver name, node ID, kubelet and state directories and
	// turns the orphan sweep off.
	Plugin plugin.Options
	SMB    SMBTarget
	ISCSI  ISCSITarget
	// LocalPassword is the local SMB user's password; random when zero.
	LocalPassword host.Secret
	// DiskSize and GrowTo are the VHDX's size and the size it grows to
	// (3 GiB and 4 GiB when zero: room for ReFS's metadata).
	DiskSize, GrowTo uint64
	// Progress, when set, is told each step as it ends.
	Progress func(Step)
	// CleanupTimeout bounds the removal of what the run made once it ended
	// or was interrupted (2 minutes when zero).
	CleanupTimeout time.Duration
}

// Step is one step's outcome.
type Step struct {
	Backend    string  `json:"backend"`
	Name       string  `json:"step"`
	Result     string  `json:"result"`
	Detail     string  `json:"detail,omitempty"`
	DurationMs float64 `json:"durationMs"`
	RoundTrips int     `json:"roundTrips"`
}

// Report is a run's outcome.
type Report struct {
	Run     string      `json:"run"`
	Windows host.OSInfo `json:"windows"`
	// Leftovers lists what killed runs had left and this run removed
	// first.
	Leftovers []string `json:"leftovers,omitempty"`
	Steps     []Step   `json:"steps"`
	// NotRemoved lists what this run made and could not remove.
	NotRemoved []string `json:"notRemoved,omitempty"`
	// Interrupted is set when the run's context ended before it finished.
	Interrupted bool `json:"interrupted,omitempty"`
}

// Passed reports whether every step passed or was skipped because the
// node does not offer it, and everything was removed.
func (r *Report) Passed() bool {
	for _, s := range r.Steps {
		if s.Result == Fail {
			return false
		}
	}
	return len(r.NotRemoved) == 0 && !r.Interrupted
}

// Outcome is what a recording keeps of a report to compare a replay with:
// the Windows found, every step with its result and detail, what was not
// removed; no duration or round-trip count.
func (r *Report) Outcome() []string {
	out := make([]string, 0, 1+len(r.Steps)+len(r.NotRemoved))
	out = append(out, fmt.Sprintf("windows: %s %s.%d %s %s", r.Windows.Caption, r.Windows.Version, r.Windows.UBR,
		r.Windows.DisplayVersion, r.Windows.ComputerName))
	for _, s := range r.Steps {
		out = append(out, s.Backend+" "+s.Name+": "+s.Result+": "+s.Detail)
	}
	for _, n := range r.NotRemoved {
		out = append(out, "not removed: "+n)
	}
	return out
}

// ErrBusy is returned when another selftest runs on the node.
var ErrBusy = errors.New("another selftest runs on this node")

var runID = regexp.MustCompile(`^[0-9a-f]{8}$`)

// NewRunID returns a random run ID.
func NewRunID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

// NewPassword returns a random password that meets Windows' default
// complexity rules (upper and lower case, a digit, a symbol).
func NewPassword() host.Secret {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return host.NewSecret("Aa1!" + hex.EncodeToString(b))
}

// Run runs the backends' steps and removes what they made. It first
// removes what earlier, killed runs left under the work directory and
// says so in the report. A step that fails ends its backend's steps (the
// rest are skipped); the other backends still run. Run returns an error
// only when it could not start (a bad configuration, another selftest
// running, the work directory unusable); failed steps are in the report.
func Run(ctx context.Context, n Node, cfg Config) (*Report, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if cfg.LocalPassword.IsZero() {
		cfg.LocalPassword = NewPassword()
	}
	work, err := winpath.NewRoot(cfg.WorkDir, n.Style)
	if err != nil {
		return nil, fmt.Errorf("work directory: %w", err)
	}
	if err := protectWorkDir(cfg.LocalDir); err != nil {
		if errors.Is(err, journal.ErrUntrustedOwner) {
			return nil, fmt.Errorf("--work-dir: %w: remove it or choose another --work-dir", err)
		}
		return nil, fmt.Errorf("--work-dir: %w", err)
	}
	unlock, err := filelock.TryLock(filepath.Join(cfg.LocalDir, ".selftest.lock"))
	if errors.Is(err, filelock.ErrLocked) {
		return nil, fmt.Errorf("%w (it holds %s)", ErrBusy, filepath.Join(cfg.LocalDir, ".selftest.lock"))
	}
	if err != nil {
		return nil, fmt.Errorf("work directory: %w", err)
	}
	defer unlock()

	r := &runner{n: n, cfg: cfg, work: work, rep: &Report{Run: cfg.Run}}
	info, err := n.Admin.System.OS(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the Windows version: %w", err)
	}
	r.rep.Windows = info
	if err := n.Host.Files.MakeDir(ctx, cfg.WorkDir); err != nil {
		return nil, fmt.Errorf("work directory %s: %w", cfg.WorkDir, err)
	}
	if err := r.removeLeftovers(ctx); err != nil {
		return r.rep, fmt.Errorf("remove what an earlier run left in %s: %w", cfg.WorkDir, err)
	}
	r.run(ctx)
	return r.rep, nil
}

// protectWorkDir makes the local work directory and gives it the
// protection of the plugin's state directory (journal.ProtectDir): it
// would otherwise inherit C:\ProgramData's ACL, under which any user may
// create directories, and the leftover sweep detaches and deletes the
// VHDX files it finds there. Tests replace it.
var protectWorkDir = journal.ProtectDir

// withDefaults fills in what a zero field means: a random run ID, the
// disk sizes, the cleanup bound, the local directory.
func (c Config) withDefaults() Config {
	if c.Run == "" {
		c.Run = NewRunID()
	}
	if c.DiskSize == 0 {
		c.DiskSize = 3 << 30
	}
	if c.GrowTo == 0 {
		c.GrowTo = c.DiskSize + 1<<30
	}
	if c.CleanupTimeout == 0 {
		c.CleanupTimeout = 2 * time.Minute
	}
	if c.LocalDir == "" {
		c.LocalDir = c.WorkDir
	}
	return c
}

func (c *Config) check() error {
	if len(c.Backends) == 0 {
		return errors.New("no backend to test")
	}
	for _, b := range c.Backends {
		if !slices.Contains(AllBackends, b) {
			return fmt.Errorf("unknown backend %q (want %s)", b, strings.Join(AllBackends, ", "))
		}
	}
	if c.Run != "" && !runID.MatchString(c.Run) {
		return fmt.Errorf("run ID %q is not 8 lower-case hex digits", c.Run)
	}
	if slices.Contains(c.Backends, BackendSMB) && !c.SMB.Local && c.SMB.Source == "" {
		return errors.New("the smb backend needs a share (or a local one)")
	}
	if slices.Contains(c.Backends, BackendISCSI) && (c.ISCSI.Portal == "" || c.ISCSI.IQN == "") {
		return errors.New("the iscsi backend needs a portal and an IQN")
	}
	return nil
}

// runner is one run.
type runner struct {
	n    Node
	cfg  Config
	work *winpath.Root
	rep  *Report
	p    *plugin.Plugin
	kub  *winpath.Root // the run's kubelet directory

	backend string
	failed  bool // a step of the current backend failed
	undo    []undo
}

// undo is what removes something the run made; key names it so that the
// step that removes it in the normal course can drop it.
type undo struct {
	key, what string
	fn        func(ctx context.Context) error
}

func (r *runner) push(key, what string, fn func(ctx context.Context) error) {
	r.undo = append(r.undo, undo{key: key, what: what, fn: fn})
}

// done drops an undo: the step removed the thing itself.
func (r *runner) done(key string) {
	r.undo = slices.DeleteFunc(r.undo, func(u undo) bool { return u.key == key })
}

// unwind runs the undos in reverse order with a context of its own (the
// run's may have ended); what it cannot remove goes into the report.
func (r *runner) unwind(ctx context.Context) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.CleanupTimeout)
	defer cancel()
	for i := len(r.undo) - 1; i >= 0; i-- {
		u := r.undo[i]
		if err := u.fn(cctx); err != nil {
			r.rep.NotRemoved = append(r.rep.NotRemoved, fmt.Sprintf("%s: %s", u.what, describe(err)))
			klog.FromContext(ctx).Error(err, "Selftest could not remove what it made", "object", u.what)
		}
	}
	r.undo = nil
}

// unknownOutcome notes a creation whose call the run stopped waiting for
// when its context ended: Windows may complete it afterwards, so what it
// made cannot be removed now. The note keeps the run's directory (as
// anything not removed does), and the next run removes the object by the
// run's ID (removeLeftoverShares); a definite failure made nothing and
// notes nothing.
func (r *runner) unknownOutcome(err error, what string) {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		r.rep.NotRemoved = append(r.rep.NotRemoved, what+": its creation was interrupted and may still complete; the next run removes it")
	}
}

// runDir is the run's directory, and name a name carrying the run's ID.
func (r *runner) runDir() string            { return r.work.Join(Prefix + r.cfg.Run) }
func (r *runner) name(suffix string) string { return Prefix + r.cfg.Run + suffix }

// step runs one step unless an earlier one of the backend failed, and
// records it.
func (r *runner) step(ctx context.Context, name string, fn func(ctx context.Context) (string, error)) {
	s := Step{Backend: r.backend, Name: name}
	switch {
	case r.failed:
		s.Result, s.Detail = Skip, "an earlier step failed"
	case ctx.Err() != nil:
		s.Result, s.Detail = Skip, "interrupted"
	default:
		start, trips := time.Now(), r.roundTrips()
		detail, err := fn(ctx)
		s.DurationMs = float64(time.Since(start).Microseconds()) / 1000
		s.RoundTrips = r.roundTrips() - trips
		s.Result, s.Detail = Pass, detail
		if err != nil {
			s.Result, s.Detail, r.failed = Fail, describe(err), true
		}
	}
	r.rep.Steps = append(r.rep.Steps, s)
	if r.cfg.Progress != nil {
		r.cfg.Progress(s)
	}
}

// skip records a step that does not apply on this node.
func (r *runner) skip(name, why string) {
	s := Step{Backend: r.backend, Name: name, Result: Skip, Detail: why}
	r.rep.Steps = append(r.rep.Steps, s)
	if r.cfg.Progress != nil {
		r.cfg.Progress(s)
	}
}

func (r *runner) roundTrips() int {
	if r.n.RoundTrips == nil {
		return 0
	}
	return r.n.RoundTrips()
}

// describe renders an error for a report line: a gRPC status as its code
// and message.
func describe(err error) string {
	if s, ok := status.FromError(err); ok {
		return s.Code().String() + ": " + s.Message()
	}
	return err.Error()
}

// run makes the run's directory and plugin, runs each backend and removes
// everything it made.
func (r *runner) run(ctx context.Context) {
	defer func() {
		r.unwind(ctx)
		if ctx.Err() != nil {
			r.rep.Interrupted = true
		}
	}()
	r.backend = "setup"
	r.step(ctx, "wire the plugin", func(ctx context.Context) (string, error) {
		if err := r.n.Host.Files.MakeDir(ctx, r.runDir()); err != nil {
			return "", err
		}
		r.push("run-dir", "directory "+r.runDir(), r.removeRunDir)
		p, kub, err := r.newPlugin(r.cfg.Run)
		if err != nil {
			return "", err
		}
		r.p, r.kub = p, kub
		if err := r.n.Host.Files.MakeDir(ctx, kub.Dir()); err != nil {
			return "", err
		}
		return "kubelet directory " + kub.Dir(), nil
	})
	if r.failed {
		return
	}
	for _, b := range AllBackends {
		if !slices.Contains(r.cfg.Backends, b) {
			continue
		}
		r.backend, r.failed = b, false
		switch b {
		case BackendDisk:
			r.disk(ctx, "NTFS")
			r.refs(ctx)
		case BackendSMB:
			r.smb(ctx)
		case BackendISCSI:
			r.iscsi(ctx)
		}
	}
}

// removeRunDir removes the run's directory, its journal with it, once
// everything else the run made is gone. When something could not be
// removed, the directory and the journal stay, so that the next run finds
// the volumes still staged and unstages them.
func (r *runner) removeRunDir(ctx context.Context) error {
	if len(r.rep.NotRemoved) > 0 {
		return fmt.Errorf("kept for the next run to finish removing")
	}
	if err := r.removeTree(ctx, r.runDir()); err != nil {
		return err
	}
	return os.RemoveAll(filepath.Join(r.cfg.LocalDir, Prefix+r.cfg.Run))
}

// newPlugin wires the plugin for a run: its kubelet directory under the
// run's directory, its journal in the run's local directory, the flags'
// configuration otherwise, the orphan sweep off (selftest removes what it
// made itself).
func (r *runner) newPlugin(run string) (*plugin.Plugin, *winpath.Root, error) {
	o := r.cfg.Plugin
	o.DriverName = DriverName
	o.NodeID = r.rep.Windows.ComputerName
	if o.NodeID == "" {
		o.NodeID = "selftest"
	}
	o.PathStyle = r.n.Style
	o.KubeletDir = r.work.Join(Prefix+run, "kubelet")
	o.StateDir = filepath.Join(r.cfg.LocalDir, Prefix+run, "state")
	o.OrphanSweep = sweep.Off
	o.HTTPEndpoint = ""
	kub, err := winpath.NewRoot(o.KubeletDir, r.n.Style)
	if err != nil {
		return nil, nil, err
	}
	p, err := plugin.New(o, plugin.Host{Host: r.n.Host})
	if err != nil {
		return nil, nil, err
	}
	return p, kub, nil
}
