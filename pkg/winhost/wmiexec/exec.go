package wmiexec

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/comworker"
)

// Options configure an executor. The zero value is usable.
type Options struct {
	// WMIWorkers is the number of COM workers (default 2). Each holds its
	// own WMI connections.
	WMIWorkers int
	// Win32Workers is the number of workers for Win32 calls (default 4).
	Win32Workers int
	// Each pool also keeps one worker of its own for the calls of
	// background work (host.Background: the orphan sweep's stock-take),
	// so that a sweep round never holds a worker an RPC waits for
	// (comworker.Config.BackgroundWorkers).
	// Queue bounds the calls waiting for a worker, per pool
	// (comworker.DefaultQueue if 0).
	Queue int
	// MaxStuck bounds the retired workers still stuck in a call, per pool
	// (comworker.DefaultMaxStuck if 0).
	MaxStuck int
	// Logger receives the pools' own log lines (retired workers, failed
	// starts). Per-call lines go to the logger in each call's context.
	Logger klog.Logger
}

// Stats is a snapshot of the executor's counters. WMI.ByKind["wmi"] is the
// number of WMI round trips (queries, association walks, method calls,
// connections and class definitions fetched); Win32.Calls counts each
// Win32 function.
type Stats struct {
	WMI, Win32 comworker.Stats
}

// Executor runs WMI and Win32 calls. On Windows it implements
// winhost.Executor. It is safe for concurrent use.
type Executor struct {
	wmi   *comworker.Pool[*comThread]
	win32 *comworker.Pool[struct{}]
}

// Stats returns a snapshot of the counters.
func (e *Executor) Stats() Stats {
	return Stats{WMI: e.wmi.Stats(), Win32: e.win32.Stats()}
}

// Healthy returns nil while both pools can take calls (see
// comworker.Pool.Healthy).
func (e *Executor) Healthy() error {
	return errors.Join(e.wmi.Healthy(), e.win32.Healthy())
}

// Close stops both pools: queued calls fail, running ones finish, and every
// worker releases its COM objects and uninitialises COM on its own thread.
// It returns early with an error wrapping ctx.Err() if a call is stuck.
func (e *Executor) Close(ctx context.Context) error {
	return errors.Join(e.wmi.Close(ctx), e.win32.Close(ctx))
}

// Ops, as counted and logged.
const (
	kindWMI   = "wmi"
	kindWin32 = "win32"
)

// queryOp names a query by the class it selects from, so that the counters
// show which classes cost round trips.
func queryOp(wql string) comworker.Op {
	return comworker.Op{Kind: kindWMI, Name: "Query " + queryClass(wql)}
}

// queryClass returns the word after FROM in a WQL SELECT, or "?" when there
// is none.
func queryClass(wql string) string {
	fields := strings.Fields(wql)
	for i, f := range fields {
		if strings.EqualFold(f, "FROM") && i+1 < len(fields) {
			return fields[i+1]
		}
	}
	return "?"
}

func associatorsOp(assocClass, resultClass string) comworker.Op {
	return comworker.Op{Kind: kindWMI, Name: "Associators " + orAny(assocClass) + " " + orAny(resultClass)}
}

func orAny(s string) string {
	if s == "" {
		return "*"
	}
	return s
}

func callOp(m winhost.Method) comworker.Op {
	return comworker.Op{Kind: kindWMI, Name: m.Class + "." + m.Name}
}

func win32Op(name string) comworker.Op { return comworker.Op{Kind: kindWin32, Name: name} }

// loggedParams renders input parameters in a log line only when the line
// is written (winhost.FormatParams: a sensitive parameter shows only its
// name).
type loggedParams []winhost.Param

func (p loggedParams) String() string { return winhost.FormatParams(p) }

// MarshalLog implements logr.Marshaler, for JSON log output.
func (p loggedParams) MarshalLog() any { return winhost.FormatParams(p) }

// splitReturnValue takes a method's ReturnValue out of its output
// parameters. It arrives as an int64 (negative when the method types it as
// a signed 32-bit integer: its 32 bits are the value); absent or null reads
// as 0.
func splitReturnValue(out map[string]any) (uint32, error) {
	rv, ok := out["ReturnValue"]
	if !ok {
		return 0, nil
	}
	delete(out, "ReturnValue")
	switch x := rv.(type) {
	case nil:
		return 0, nil
	case int64:
		if x < math.MinInt32 || x > math.MaxUint32 {
			return 0, fmt.Errorf("ReturnValue %d is not a 32-bit value", x)
		}
		return uint32(x), nil
	}
	return 0, fmt.Errorf("ReturnValue has type %T", rv)
}

// findPattern is the FindFirstFile pattern that lists the entries of dir.
func findPattern(dir string) string {
	if strings.HasSuffix(dir, `\`) || strings.HasSuffix(dir, "/") {
		return dir + "*"
	}
	return dir + `\*`
}
