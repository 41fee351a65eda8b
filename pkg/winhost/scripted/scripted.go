// Package scripted is a test executor for pkg/winhost: tests script the
// exact sequence of WMI and Win32 calls they expect, with the replies a real
// Windows host gives (cite the documentation in the test), and the executor
// fails the test on any call out of order, any unexpected argument and any
// expectation left unconsumed. It also counts calls, so host-call budgets are
// asserted on the real logic.
//
// It is test tooling, never used by the plugin itself.
package scripted

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
)

// TB is the subset of testing.TB the executor needs.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Cleanup(func())
}

// Kind of a recorded call.
const (
	KindQuery       = "Query"
	KindAssociators = "Associators"
	KindCall        = "Call"
)

// Call is one call the code under test made (or is expected to make). Kind
// is KindQuery, KindAssociators, KindCall, or the Win32 function's name.
type Call struct {
	Kind      string
	Namespace string
	WQL       string         // Query
	Path      string         // Associators; Call on an instance
	Assoc     string         // Associators
	Result    string         // Associators result class
	Method    winhost.Method // Call
	Args      []any          // Win32 arguments, in order
}

// Reply is what an expected call answers.
type Reply struct {
	Instances []winhost.Instance // Query, Associators
	Result    winhost.Result     // Call
	Bytes     []byte             // raw IOCTL output; the descriptor FileSecurity and UpdateFileDACL read; LookupAccountName's SID
	String    string             // GetVolumeNameForVolumeMountPoint
	Uint32    uint32             // GetFileAttributes; LookupAccountName's SID_NAME_USE
	Bool      bool               // DirectoryHasEntries
	Strings   []string           // DirectoryEntries
	Space     [3]uint64          // GetDiskFreeSpaceEx: available, total, free
	Value     any                // RegistryValue
	Token     host.Token         // ProcessToken
	Service   host.Service       // QueryService
	Count     uint32             // ReportIScsiPersistentLogins (with Bytes)
	Err       error
	// Block, when set, makes the call wait until ctx ends (a hung
	// provider); it then returns ctx.Err(). A context from
	// Executor.BlockedContext ends then.
	Block bool
}

type expectation struct {
	call  Call
	reply Reply
	match func(got Call) string // "" when it matches
}

// Executor implements winhost.Executor from a script.
type Executor struct {
	t TB

	mu      sync.Mutex
	script  []expectation
	next    int
	log     []Call
	blocked chan struct{} // closed when a call with a Block reply waits
	serve   func(Call) (Reply, bool)
}

var _ winhost.Executor = (*Executor)(nil)

// New returns an executor; at test cleanup it fails the test if any
// expectation was not consumed.
func New(t TB) *Executor {
	e := &Executor{t: t}
	t.Cleanup(func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.next < len(e.script) {
			t.Helper()
			var left []string
			for _, x := range e.script[e.next:] {
				left = append(left, describe(x.call))
			}
			t.Errorf("scripted executor: %d expected call(s) not made:\n  %s", len(left), strings.Join(left, "\n  "))
		}
	})
	return e
}

// ExpectQuery expects Query(namespace, wql) with exactly this text.
func (e *Executor) ExpectQuery(namespace, wql string, r Reply) *Executor {
	return e.expect(Call{Kind: KindQuery, Namespace: namespace, WQL: wql}, r, nil)
}

// ExpectAssociators expects Associators(namespace, path, assoc, result).
func (e *Executor) ExpectAssociators(namespace, path, assoc, result string, r Reply) *Executor {
	return e.expect(Call{Kind: KindAssociators, Namespace: namespace, Path: path, Assoc: assoc, Result: result}, r, nil)
}

// ExpectCall expects Call(namespace, m): class, path, name and the input
// parameters (names, order, values and Go types) must all be equal.
func (e *Executor) ExpectCall(namespace string, m winhost.Method, r Reply) *Executor {
	return e.expect(Call{Kind: KindCall, Namespace: namespace, Method: m}, r, nil)
}

// ExpectWin32 expects the named Win32 call with these arguments.
func (e *Executor) ExpectWin32(name string, args []any, r Reply) *Executor {
	return e.expect(Call{Kind: name, Args: args}, r, nil)
}

// ExpectMatching expects a call of the given kind checked by match, which
// returns "" when the call is acceptable and a reason otherwise.
func (e *Executor) ExpectMatching(kind string, match func(Call) string, r Reply) *Executor {
	return e.expect(Call{Kind: kind}, r, match)
}

func (e *Executor) expect(c Call, r Reply, match func(Call) string) *Executor {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.script = append(e.script, expectation{call: c, reply: r, match: match})
	return e
}

// Serve answers the calls made once the script is used up, in any order
// and any number of times, with what serve returns for them; a call serve
// refuses (false) fails the test as an unexpected call does. It is for
// tests whose calls follow the data rather than an order, such as a
// stock-take of hundreds of volumes: serve stands for the host's state,
// and what it answers is checked as scripted replies are (the schema check
// records it). The script, if any, is still consumed first, in order.
func (e *Executor) Serve(serve func(Call) (Reply, bool)) *Executor {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.serve = serve
	return e
}

// BlockedContext returns a context that ends with DeadlineExceeded once a
// call with a Block reply waits: the caller of a hung provider meets its
// deadline in the hung call, however long the steps before it take on a
// loaded machine. (A deadline set by the clock could pass before the call
// is reached, which then ends early and leaves the script unconsumed.)
func (e *Executor) BlockedContext() context.Context {
	e.mu.Lock()
	defer e.mu.Unlock()
	return blockedContext{Context: context.Background(), done: e.blockedLocked()}
}

func (e *Executor) blockedLocked() chan struct{} {
	if e.blocked == nil {
		e.blocked = make(chan struct{})
	}
	return e.blocked
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// blockedContext is the context BlockedContext returns: done is closed
// when the deadline passes.
type blockedContext struct {
	context.Context
	done <-chan struct{}
}

func (c blockedContext) Done() <-chan struct{} { return c.done }

func (c blockedContext) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// Calls returns every call made so far.
func (e *Executor) Calls() []Call {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Call(nil), e.log...)
}

// WMIRoundTrips counts the WMI calls made so far (Query, Associators, Call):
// each is one round trip to the WMI service.
func (e *Executor) WMIRoundTrips() int {
	n := 0
	for _, c := range e.Calls() {
		switch c.Kind {
		case KindQuery, KindAssociators, KindCall:
			n++
		}
	}
	return n
}

// Reset forgets the calls made so far (not the script).
func (e *Executor) Reset() {
	e.mu.Lock()
	e.log = nil
	e.mu.Unlock()
}

func (e *Executor) take(ctx context.Context, got Call) Reply {
	e.mu.Lock()
	e.log = append(e.log, got)
	if e.next >= len(e.script) && e.serve != nil {
		serve := e.serve
		e.mu.Unlock()
		if r, ok := serve(got); ok {
			record(got, r)
			if err := ctx.Err(); err != nil {
				return Reply{Err: err}
			}
			return r
		}
		e.t.Helper()
		e.t.Errorf("scripted executor: unexpected call %s", describe(got))
		return Reply{Err: fmt.Errorf("scripted executor: unexpected call %s", got.Kind)}
	}
	if e.next >= len(e.script) {
		e.mu.Unlock()
		e.t.Helper()
		e.t.Errorf("scripted executor: unexpected call %s", describe(got))
		return Reply{Err: fmt.Errorf("scripted executor: unexpected call %s", got.Kind)}
	}
	x := e.script[e.next]
	e.next++
	e.mu.Unlock()

	var why string
	if x.match != nil {
		if x.call.Kind != got.Kind {
			why = "kind " + got.Kind + ", want " + x.call.Kind
		} else {
			why = x.match(got)
		}
	} else {
		why = diff(x.call, got)
	}
	if why != "" {
		e.t.Helper()
		e.t.Errorf("scripted executor: call %d: %s\n  got:  %s\n  want: %s", e.next, why, describe(got), describe(x.call))
		return Reply{Err: fmt.Errorf("scripted executor: call %d did not match the script", e.next)}
	}
	record(got, x.reply)
	if x.reply.Block {
		e.mu.Lock()
		if ch := e.blockedLocked(); !isClosed(ch) {
			close(ch) // only ever under e.mu
		}
		e.mu.Unlock()
		<-ctx.Done()
		return Reply{Err: ctx.Err()}
	}
	if err := ctx.Err(); err != nil {
		return Reply{Err: err}
	}
	return x.reply
}

// Record is one call an executor answered from its script: the call, the
// scripted reply and the call's stack ("file:line" of each frame, the
// caller of the executor method first).
type Record struct {
	Call  Call
	Reply Reply
	Stack []string
}

// The process-wide record of answered calls, kept once RecordAll is called.
var journal struct {
	sync.Mutex
	on   bool
	recs []Record
}

// RecordAll makes every executor in the process record each call it
// answers from its script, for checks over a whole test binary (the WMI
// schema check of pkg/winhost records the calls of its entire suite).
func RecordAll() {
	journal.Lock()
	journal.on = true
	journal.Unlock()
}

// Recorded returns the calls recorded since RecordAll.
func Recorded() []Record {
	journal.Lock()
	defer journal.Unlock()
	return append([]Record(nil), journal.recs...)
}

func record(c Call, r Reply) {
	journal.Lock()
	on := journal.on
	journal.Unlock()
	if !on {
		return
	}
	pcs := make([]uintptr, 64)
	n := runtime.Callers(3, pcs) // above record and take
	frames := runtime.CallersFrames(pcs[:n])
	var stack []string
	for {
		f, more := frames.Next()
		stack = append(stack, f.File+":"+strconv.Itoa(f.Line))
		if !more {
			break
		}
	}
	journal.Lock()
	journal.recs = append(journal.recs, Record{Call: c, Reply: r, Stack: stack})
	journal.Unlock()
}

func diff(want, got Call) string {
	switch {
	case want.Kind != got.Kind:
		return "kind " + got.Kind + ", want " + want.Kind
	case want.Namespace != got.Namespace:
		return "namespace " + got.Namespace + ", want " + want.Namespace
	case want.WQL != got.WQL:
		return "WQL differs"
	case want.Path != got.Path:
		return "path differs"
	case want.Assoc != got.Assoc || want.Result != got.Result:
		return "association differs"
	case !reflect.DeepEqual(want.Method, got.Method):
		return "method or parameters differ"
	case !reflect.DeepEqual(want.Args, got.Args):
		return "arguments differ"
	}
	return ""
}

func describe(c Call) string {
	switch c.Kind {
	case KindQuery:
		return fmt.Sprintf("Query(%s, %q)", c.Namespace, c.WQL)
	case KindAssociators:
		return fmt.Sprintf("Associators(%s, %q, %s, %s)", c.Namespace, c.Path, c.Assoc, c.Result)
	case KindCall:
		return fmt.Sprintf("Call(%s, %s.%s path=%q, %s)", c.Namespace, c.Method.Class, c.Method.Name, c.Method.Path, winhost.FormatParams(c.Method.In))
	case KindDeleteInstance:
		return fmt.Sprintf("DeleteInstance(%s, %q)", c.Namespace, c.Path)
	}
	return fmt.Sprintf("%s%v", c.Kind, c.Args)
}

// Query implements winhost.Executor.
func (e *Executor) Query(ctx context.Context, namespace, wql string) ([]winhost.Instance, error) {
	r := e.take(ctx, Call{Kind: KindQuery, Namespace: namespace, WQL: wql})
	return r.Instances, r.Err
}

// Associators implements winhost.Executor.
func (e *Executor) Associators(ctx context.Context, namespace, path, assoc, result string) ([]winhost.Instance, error) {
	r := e.take(ctx, Call{Kind: KindAssociators, Namespace: namespace, Path: path, Assoc: assoc, Result: result})
	return r.Instances, r.Err
}

// Call implements winhost.Executor.
func (e *Executor) Call(ctx context.Context, namespace string, m winhost.Method) (winhost.Result, error) {
	r := e.take(ctx, Call{Kind: KindCall, Namespace: namespace, Method: m})
	return r.Result, r.Err
}

func (e *Executor) win32(ctx context.Context, name string, args ...any) Reply {
	return e.take(ctx, Call{Kind: name, Args: args})
}

// StorageDeviceIDDescriptor implements winhost.Executor.
func (e *Executor) StorageDeviceIDDescriptor(ctx context.Context, devicePath string) ([]byte, error) {
	r := e.win32(ctx, "StorageDeviceIDDescriptor", devicePath)
	return r.Bytes, r.Err
}

// SCSIAddress implements winhost.Executor.
func (e *Executor) SCSIAddress(ctx context.Context, devicePath string) ([]byte, error) {
	r := e.win32(ctx, "SCSIAddress", devicePath)
	return r.Bytes, r.Err
}

// VolumeDiskExtents implements winhost.Executor.
func (e *Executor) VolumeDiskExtents(ctx context.Context, volumeName string) ([]byte, error) {
	r := e.win32(ctx, "VolumeDiskExtents", volumeName)
	return r.Bytes, r.Err
}

// FlushVolume implements winhost.Executor.
func (e *Executor) FlushVolume(ctx context.Context, volumeName string) error {
	return e.win32(ctx, "FlushVolume", volumeName).Err
}

// SetVolumeMountPoint implements winhost.Executor.
func (e *Executor) SetVolumeMountPoint(ctx context.Context, mountPoint, volumeName string) error {
	return e.win32(ctx, "SetVolumeMountPoint", mountPoint, volumeName).Err
}

// DeleteVolumeMountPoint implements winhost.Executor.
func (e *Executor) DeleteVolumeMountPoint(ctx context.Context, mountPoint string) error {
	return e.win32(ctx, "DeleteVolumeMountPoint", mountPoint).Err
}

// GetVolumeNameForVolumeMountPoint implements winhost.Executor.
func (e *Executor) GetVolumeNameForVolumeMountPoint(ctx context.Context, mountPoint string) (string, error) {
	r := e.win32(ctx, "GetVolumeNameForVolumeMountPoint", mountPoint)
	return r.String, r.Err
}

// GetDiskFreeSpaceEx implements winhost.Executor.
func (e *Executor) GetDiskFreeSpaceEx(ctx context.Context, path string) (uint64, uint64, uint64, error) {
	r := e.win32(ctx, "GetDiskFreeSpaceEx", path)
	return r.Space[0], r.Space[1], r.Space[2], r.Err
}

// GetFileAttributes implements winhost.Executor.
func (e *Executor) GetFileAttributes(ctx context.Context, path string) (uint32, error) {
	r := e.win32(ctx, "GetFileAttributes", path)
	return r.Uint32, r.Err
}

// ReadReparsePoint implements winhost.Executor.
func (e *Executor) ReadReparsePoint(ctx context.Context, path string) ([]byte, error) {
	r := e.win32(ctx, "ReadReparsePoint", path)
	return r.Bytes, r.Err
}

// CreateDirectory implements winhost.Executor.
func (e *Executor) CreateDirectory(ctx context.Context, path string) error {
	return e.win32(ctx, "CreateDirectory", path).Err
}

// RemoveDirectory implements winhost.Executor.
func (e *Executor) RemoveDirectory(ctx context.Context, path string) error {
	return e.win32(ctx, "RemoveDirectory", path).Err
}

// CreateSymbolicLink implements winhost.Executor.
func (e *Executor) CreateSymbolicLink(ctx context.Context, link, target string, flags uint32) error {
	return e.win32(ctx, "CreateSymbolicLink", link, target, flags).Err
}

// DirectoryHasEntries implements winhost.Executor.
func (e *Executor) DirectoryHasEntries(ctx context.Context, path string) (bool, error) {
	r := e.win32(ctx, "DirectoryHasEntries", path)
	return r.Bool, r.Err
}

// DirectoryEntries implements winhost.Executor.
func (e *Executor) DirectoryEntries(ctx context.Context, path string) ([]string, error) {
	r := e.win32(ctx, "DirectoryEntries", path)
	return r.Strings, r.Err
}

// LookupHost implements winhost.Win32: the reply's Strings.
func (e *Executor) LookupHost(ctx context.Context, name string) ([]string, error) {
	r := e.win32(ctx, "LookupHost", name)
	return r.Strings, r.Err
}

// ReportIScsiPersistentLogins implements winhost.Win32: the reply's Count
// and Bytes.
func (e *Executor) ReportIScsiPersistentLogins(ctx context.Context) (uint32, []byte, error) {
	r := e.win32(ctx, "ReportIScsiPersistentLogins")
	return r.Count, r.Bytes, r.Err
}

// RemoveIScsiPersistentTarget implements winhost.Win32.
func (e *Executor) RemoveIScsiPersistentTarget(ctx context.Context, initiatorInstance string, initiatorPort uint32, targetName string, portal winhost.PortalW) error {
	return e.win32(ctx, "RemoveIScsiPersistentTarget", initiatorInstance, initiatorPort, targetName, portal).Err
}

// FileSecurity implements winhost.Executor.
func (e *Executor) FileSecurity(ctx context.Context, path string, info uint32) ([]byte, error) {
	r := e.win32(ctx, "FileSecurity", path, info)
	return r.Bytes, r.Err
}

// UpdateFileDACL implements winhost.Executor as two scripted calls: the
// open and read, "UpdateFileDACL" (path), whose Reply.Bytes is the
// descriptor read (Reply.Err: the open or the read failed); then, when
// update returns an ACL, the write, "SetSecurityInfo" (path, info, the ACL
// as given, so a script states the exact bytes it expects).
func (e *Executor) UpdateFileDACL(ctx context.Context, path string, update func(sd []byte) ([]byte, uint32, error)) error {
	r := e.win32(ctx, "UpdateFileDACL", path)
	if r.Err != nil {
		return r.Err
	}
	acl, info, err := update(r.Bytes)
	if err != nil || acl == nil {
		return err
	}
	return e.win32(ctx, "SetSecurityInfo", path, info, append([]byte(nil), acl...)).Err
}

// LookupAccountName implements winhost.Executor.
func (e *Executor) LookupAccountName(ctx context.Context, name string) ([]byte, uint32, error) {
	r := e.win32(ctx, "LookupAccountName", name)
	return r.Bytes, r.Uint32, r.Err
}
