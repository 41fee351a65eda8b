package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// exit ends the process for crash rules. Tests replace it.
var exit = os.Exit

// DefaultExitCode is the exit code of crash rules that set none.
const DefaultExitCode = 86

// AnyOp in Rule.Op matches every op.
const AnyOp = "*"

// errInjected is what Rule.Err "internal" injects: no sentinel.
var errInjected = errors.New("injected internal error")

// errCrashed is returned by a crash-before rule when exit returned (tests).
var errCrashed = errors.New("simulated crash")

// faultErrors maps Rule.Err names to the errors they inject.
var faultErrors = map[string]error{
	"notfound":           host.ErrNotFound,
	"alreadyexists":      host.ErrAlreadyExists,
	"dirnotempty":        host.ErrDirNotEmpty,
	"conflict":           host.ErrConflict,
	"inuse":              host.ErrInUse,
	"logonfailure":       host.ErrLogonFailure,
	"accessdenied":       host.ErrAccessDenied,
	"unreachable":        host.ErrUnreachable,
	"readonly":           host.ErrReadOnly,
	"outofrange":         host.ErrOutOfRange,
	"busy":               host.ErrBusy,
	"invalid":            host.ErrInvalid,
	"credentialconflict": host.ErrCredentialConflict,
	"guestlogonblocked":  host.ErrGuestLogonBlocked,
	"notimplemented":     host.ErrNotImplemented,
	"internal":           errInjected,
}

// Rule is one fault-injection rule. It applies to the calls of Op (or of
// every op when Op is "*"); Nth picks the one call it fires on, counted
// from 1 since the rule was added (0: every call).
type Rule struct {
	Op  string
	Nth int
	// Err names the error to return without doing the work: "notfound",
	// "alreadyexists", "dirnotempty", "conflict", "inuse", "logonfailure",
	// "accessdenied", "unreachable", "readonly", "outofrange", "busy",
	// "invalid", "credentialconflict", "notimplemented" (the host
	// sentinels) or "internal" (an error that is none of them).
	Err string
	// Delay is slept (ctx-aware) before the call goes on.
	Delay time.Duration
	// Hang blocks the call until Faults.Release(Op), Faults.Clear or
	// Sim.Close; the caller gets ctx.Err() at its deadline while the call
	// stays outstanding on its host.Tracker, and the call then completes
	// its effect.
	Hang bool
	// CrashBefore exits the process (code ExitCode) before the call has
	// any effect; CrashAfter exits after the effect is durable.
	CrashBefore bool
	CrashAfter  bool
	ExitCode    int // 0: DefaultExitCode
}

// ruleJSON is Rule's form in faults.json.
type ruleJSON struct {
	Op          string `json:"op"`
	Nth         int    `json:"nth,omitempty"`
	Err         string `json:"err,omitempty"`
	Delay       string `json:"delay,omitempty"` // Go duration: "1.5s"
	Hang        bool   `json:"hang,omitempty"`
	CrashBefore bool   `json:"crashBefore,omitempty"`
	CrashAfter  bool   `json:"crashAfter,omitempty"`
	ExitCode    int    `json:"exitCode,omitempty"`
}

// MarshalJSON writes the faults.json form of the rule.
func (r Rule) MarshalJSON() ([]byte, error) {
	j := ruleJSON{Op: r.Op, Nth: r.Nth, Err: r.Err, Hang: r.Hang,
		CrashBefore: r.CrashBefore, CrashAfter: r.CrashAfter, ExitCode: r.ExitCode}
	if r.Delay != 0 {
		j.Delay = r.Delay.String()
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads the faults.json form of the rule.
func (r *Rule) UnmarshalJSON(data []byte) error {
	var j ruleJSON
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return err
	}
	*r = Rule{Op: j.Op, Nth: j.Nth, Err: j.Err, Hang: j.Hang,
		CrashBefore: j.CrashBefore, CrashAfter: j.CrashAfter, ExitCode: j.ExitCode}
	if j.Delay != "" {
		d, err := time.ParseDuration(j.Delay)
		if err != nil {
			return fmt.Errorf("rule for %s: delay: %w", j.Op, err)
		}
		r.Delay = d
	}
	return nil
}

func (r Rule) validate() error {
	if r.Op != AnyOp && !slices.Contains(AllOps, r.Op) && !slices.Contains(AdminOps, r.Op) {
		return fmt.Errorf("fault rule: unknown op %q", r.Op)
	}
	if r.Nth < 0 {
		return fmt.Errorf("fault rule for %s: nth %d is negative", r.Op, r.Nth)
	}
	if r.Delay < 0 {
		return fmt.Errorf("fault rule for %s: delay %s is negative", r.Op, r.Delay)
	}
	if r.Err != "" {
		if _, ok := faultErrors[r.Err]; !ok {
			return fmt.Errorf("fault rule for %s: unknown err %q", r.Op, r.Err)
		}
	}
	return nil
}

// FaultsFile is the content of <Dir>/faults.json.
type FaultsFile struct {
	Rules []Rule `json:"rules"`
}

// WriteFaultsFile writes <dir>/faults.json with the rules, for tests that
// inject faults into another process (the plugin binary run with
// --sim-dir). The rules take effect when that process opens the sim.
func WriteFaultsFile(dir string, rules ...Rule) error {
	for _, r := range rules {
		if err := r.validate(); err != nil {
			return err
		}
	}
	data, err := json.MarshalIndent(FaultsFile{Rules: rules}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, faultsFile), append(data, '\n'), 0o600)
}

type ruleState struct {
	Rule
	calls int
}

// Faults holds a sim's fault rules and its hung calls.
type Faults struct {
	mu    sync.Mutex
	rules []*ruleState
	hung  map[string][]chan struct{}
	// releases counts Clear and Close: a call whose hang rule fired before
	// one of them does not hang.
	releases int
}

func newFaults() *Faults { return &Faults{hung: make(map[string][]chan struct{})} }

func (f *Faults) loadFile(path string) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sim faults %s: %w", path, err)
	}
	var ff FaultsFile
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ff); err != nil {
		return fmt.Errorf("sim faults %s: %w", path, err)
	}
	for _, r := range ff.Rules {
		if err := f.Add(r); err != nil {
			return fmt.Errorf("sim faults %s: %w", path, err)
		}
	}
	return nil
}

// Add adds a rule; its Nth counts calls from now on.
func (f *Faults) Add(r Rule) error {
	if err := r.validate(); err != nil {
		return err
	}
	if r.ExitCode == 0 {
		r.ExitCode = DefaultExitCode
	}
	f.mu.Lock()
	f.rules = append(f.rules, &ruleState{Rule: r})
	f.mu.Unlock()
	return nil
}

// Rules returns the rules in the order they were added.
func (f *Faults) Rules() []Rule {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Rule, len(f.rules))
	for i, r := range f.rules {
		out[i] = r.Rule
	}
	return out
}

// Clear removes every rule and releases every hung call.
func (f *Faults) Clear() {
	f.mu.Lock()
	f.rules = nil
	f.mu.Unlock()
	f.releaseAll()
}

// Release lets the calls of op that hang now go on; it returns how many
// there were.
func (f *Faults) Release(op string) int {
	f.mu.Lock()
	chs := f.hung[op]
	delete(f.hung, op)
	f.mu.Unlock()
	for _, ch := range chs {
		close(ch)
	}
	return len(chs)
}

// Hung returns the number of calls of op hanging now: calls that are
// blocked and counted on their context's host.Tracker, so that a test
// which sees one may end the caller's context and find the call still
// outstanding.
func (f *Faults) Hung(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.hung[op])
}

func (f *Faults) releaseAll() {
	f.mu.Lock()
	f.releases++
	hung := f.hung
	f.hung = make(map[string][]chan struct{})
	f.mu.Unlock()
	for _, chs := range hung {
		for _, ch := range chs {
			close(ch)
		}
	}
}

// action is what the rules firing on one call ask for.
type action struct {
	delay time.Duration
	err   error
	// hang, when set, is the channel the call blocks on (hangNow);
	// releases is Faults.releases when the rule fired.
	hang        chan struct{}
	releases    int
	crashBefore bool
	crashAfter  bool
	exitCode    int
}

// fire counts the call against every rule of op and merges the rules that
// fire: delays add up, the first error wins.
func (f *Faults) fire(op string) action {
	var a action
	hang := false
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.rules {
		if r.Op != op && r.Op != AnyOp {
			continue
		}
		r.calls++
		if r.Nth != 0 && r.calls != r.Nth {
			continue
		}
		a.delay += r.Delay
		if a.err == nil && r.Err != "" {
			a.err = faultErrors[r.Err]
		}
		hang = hang || r.Hang
		if r.CrashBefore || r.CrashAfter {
			a.crashBefore = a.crashBefore || r.CrashBefore
			a.crashAfter = a.crashAfter || r.CrashAfter
			if a.exitCode == 0 {
				a.exitCode = r.ExitCode
			}
		}
	}
	// An injected error or crash-before ends the call before it could hang.
	if hang && a.err == nil && !a.crashBefore {
		a.hang, a.releases = make(chan struct{}), f.releases
	}
	return a
}

// hangNow registers a call that blocks on a.hang from now on, where
// Release, Clear and Close find it and Hung counts it. A Clear or Close
// since the rule fired has released it already.
func (f *Faults) hangNow(op string, a action) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.releases != a.releases {
		close(a.hang)
		return
	}
	f.hung[op] = append(f.hung[op], a.hang)
}

// crash makes the model durable, flushes the logs and calls exit. The
// simulated host stands for Windows, which outlives the plugin's process:
// what other calls already did stays done. So the crash first stops every
// other call at the sim's mutex and writes the model as it is (a call that
// made a link but whose state was not yet written would otherwise leave
// the links and state.json disagreeing after the restart), under the
// persister's write lock so that no older write lands after it.
func (s *Sim) crash(op string, code int, when string) {
	s.log.Info("injected crash", "method", op, "when", when, "exitCode", code)
	s.p.write.Lock()
	s.mu.Lock()
	var buf bytes.Buffer
	data, err := encodeState(&buf, s.st)
	if err == nil {
		err = writeAtomic(s.dir, data)
	}
	if err != nil {
		s.log.Error(err, "writing sim state before the injected crash", "dir", s.dir)
	}
	klog.Flush()
	exit(code)
	// Only reached when a test replaced exit: the process "died", so its
	// directory lock goes too, letting the test open the sim again as a
	// restarted process would.
	s.mu.Unlock()
	s.p.write.Unlock()
	s.unlock()
}
