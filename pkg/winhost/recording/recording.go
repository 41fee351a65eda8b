package recording

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/winhost"
)

// FormatVersion is the version of the recording format.
const FormatVersion = 1

// Line kinds besides the calls' own (scripted.KindQuery and the rest).
const (
	KindHeader = "header"
	KindResult = "result"
)

// Sources of a recording.
const (
	SourceWindows  = "windows"  // a real Windows host, through wmiexec
	SourceScripted = "scripted" // the scripted executor of the tests
)

// Scenarios a recording can come from. A selftest or preflight recording
// is replayed by running that command again over the recording; a plugin
// recording (--record-host-calls) has no scenario to run again: it serves
// the shape comparison only.
const (
	ScenarioSelftest  = "selftest"
	ScenarioPreflight = "preflight"
	ScenarioPlugin    = "plugin"
)

// Header is a recording's first line.
type Header struct {
	Kind     string `json:"kind"` // KindHeader
	Format   int    `json:"format"`
	Source   string `json:"source"`
	Scenario string `json:"scenario"`
	// Params are the scenario's inputs, enough to run it again with the
	// same names: the run's ID, the backends, the computer name, ...
	Params map[string]string `json:"params,omitempty"`
	// Plugin is the plugin version that recorded.
	Plugin string `json:"plugin,omitempty"`
	// Windows describes the host ("Microsoft Windows Server 2022
	// Datacenter 10.0.20348.2849"), when known.
	Windows string `json:"windows,omitempty"`
}

// Line is one executor call and its answer.
type Line struct {
	Seq  int    `json:"seq"`
	Kind string `json:"kind"` // Query, Associators, Call, DeleteInstance, or the Win32 call's name
	// Namespace, WQL, Path, Assoc and ResultClass as in scripted.Call.
	Namespace   string  `json:"namespace,omitempty"`
	WQL         string  `json:"wql,omitempty"`
	Path        string  `json:"path,omitempty"`
	Assoc       string  `json:"assoc,omitempty"`
	ResultClass string  `json:"resultClass,omitempty"`
	Method      *Method `json:"method,omitempty"`
	Args        []Value `json:"args,omitempty"`
	// Exactly one of Reply and Error is set.
	Reply      *Reply  `json:"reply,omitempty"`
	Error      *Error  `json:"error,omitempty"`
	DurationMs float64 `json:"durationMs"`
}

// Method is a WMI method call.
type Method struct {
	Class string  `json:"class"`
	Path  string  `json:"path,omitempty"`
	Name  string  `json:"name"`
	In    []Param `json:"in,omitempty"`
}

// Param is one input parameter; a sensitive one has no value.
type Param struct {
	Name      string `json:"name"`
	Value     *Value `json:"value,omitempty"`
	Sensitive bool   `json:"sensitive,omitempty"`
}

// Reply is what a call answered: Instances for Query and Associators,
// ReturnValue and Out for Call, Value for the Win32 calls that return one.
type Reply struct {
	Instances   []Object         `json:"instances,omitempty"`
	ReturnValue *uint32          `json:"returnValue,omitempty"`
	Out         map[string]Value `json:"out,omitempty"`
	Value       *Value           `json:"value,omitempty"`
}

// Error is a call's failure.
type Error struct {
	// Type is win32, com, dns, deadline, canceled or other.
	Type string `json:"type"`
	// Message is the error's text, for people.
	Message string `json:"message"`
	// Win32: the failing function and its code.
	Call string `json:"call,omitempty"`
	Code uint32 `json:"code,omitempty"`
	// COM: the operation, HRESULT, detail, schema lookup and WMI's
	// extended error object.
	Op          string  `json:"op,omitempty"`
	HResult     string  `json:"hresult,omitempty"` // 0x80041002
	Detail      string  `json:"detail,omitempty"`
	Lookup      string  `json:"lookup,omitempty"`
	ErrorObject *Object `json:"errorObject,omitempty"`
	// DNS (a *net.DNSError of LookupHost): the name looked up, the server
	// asked, and whether the name does not exist (IsNotFound) or the
	// lookup timed out.
	Name     string `json:"name,omitempty"`
	Server   string `json:"server,omitempty"`
	NotFound bool   `json:"notFound,omitempty"`
	Timeout  bool   `json:"timeout,omitempty"`
}

// Result is a recording's last line: what the scenario concluded, as the
// command reported it (selftest: every step and its result).
type Result struct {
	Kind    string          `json:"kind"` // KindResult
	Outcome json.RawMessage `json:"outcome"`
}

// EncodeError describes an error for a recording.
func EncodeError(err error) *Error {
	e := &Error{Type: "other", Message: err.Error()}
	var we *winhost.Win32Error
	var ce *winhost.COMError
	var de *net.DNSError
	switch {
	case errors.As(err, &we):
		e.Type, e.Call, e.Code = "win32", we.Call, we.Code
	case errors.As(err, &ce):
		e.Type, e.Op, e.HResult, e.Detail, e.Lookup = "com", ce.Op, fmt.Sprintf("0x%08X", ce.HResult), ce.Detail, ce.Lookup
		if ce.ErrorObject != nil {
			if o, oerr := encodeObject(*ce.ErrorObject); oerr == nil {
				e.ErrorObject = &o
			}
		}
	case errors.As(err, &de):
		e.Type, e.Message, e.Name, e.Server, e.NotFound, e.Timeout = "dns", de.Err, de.Name, de.Server, de.IsNotFound, de.IsTimeout
	case errors.Is(err, context.DeadlineExceeded):
		e.Type = "deadline"
	case errors.Is(err, context.Canceled):
		e.Type = "canceled"
	}
	return e
}

// Decode returns the error a recorded Error stands for: the executor's
// own types for win32 and com, the context's errors, and a plain error
// with the message otherwise.
func (e *Error) Decode() (error, error) {
	switch e.Type {
	case "win32":
		return &winhost.Win32Error{Call: e.Call, Code: e.Code}, nil
	case "com":
		var hr uint64
		if _, err := fmt.Sscanf(e.HResult, "0x%X", &hr); err != nil {
			return nil, fmt.Errorf("recording: HRESULT %q: %w", e.HResult, err)
		}
		ce := &winhost.COMError{Op: e.Op, HResult: uint32(hr), Detail: e.Detail, Lookup: e.Lookup}
		if e.ErrorObject != nil {
			in, err := DecodeObject(*e.ErrorObject)
			if err != nil {
				return nil, err
			}
			ce.ErrorObject = &in
		}
		return ce, nil
	case "dns":
		return &net.DNSError{Err: e.Message, Name: e.Name, Server: e.Server, IsNotFound: e.NotFound, IsTimeout: e.Timeout}, nil
	case "deadline":
		return fmt.Errorf("%s: %w", e.Message, context.DeadlineExceeded), nil
	case "canceled":
		return fmt.Errorf("%s: %w", e.Message, context.Canceled), nil
	}
	return errors.New(e.Message), nil
}

// File is a recording read whole.
type File struct {
	Header Header
	Lines  []Line
	Result *Result
}

// maxLine bounds one JSON line (a reply with many instances).
const maxLine = 16 << 20

// Read reads a recording: a header, the calls, and optionally a result.
func Read(r io.Reader) (*File, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	f := &File{}
	n := 0
	for sc.Scan() {
		n++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var kind struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal([]byte(text), &kind); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		var err error
		switch {
		case n == 1 && kind.Kind != KindHeader:
			return nil, fmt.Errorf("line 1 is a %q line, want the header", kind.Kind)
		case kind.Kind == KindHeader:
			if n != 1 {
				return nil, fmt.Errorf("line %d: a second header", n)
			}
			err = strictUnmarshal(text, &f.Header)
		case kind.Kind == KindResult:
			f.Result = &Result{}
			err = strictUnmarshal(text, f.Result)
		case f.Result != nil:
			return nil, fmt.Errorf("line %d: a call after the result", n)
		default:
			var l Line
			err = strictUnmarshal(text, &l)
			f.Lines = append(f.Lines, l)
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, errors.New("empty recording")
	}
	if f.Header.Format != FormatVersion {
		return nil, fmt.Errorf("recording format %d, this build reads %d", f.Header.Format, FormatVersion)
	}
	return f, nil
}

func strictUnmarshal(text string, v any) error {
	d := json.NewDecoder(strings.NewReader(text))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

// Writer writes a recording line by line: the header first, then calls
// and a result. It does no locking; Recorder serialises its calls.
type Writer struct{ w io.Writer }

// NewWriter writes the header (its kind and format filled in).
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	h.Kind, h.Format = KindHeader, FormatVersion
	wr := &Writer{w: w}
	if err := wr.Raw(h); err != nil {
		return nil, err
	}
	return wr, nil
}

// Line writes one call.
func (w *Writer) Line(l Line) error { return w.Raw(l) }

// Raw writes any value as one JSON line (a Result, for example).
func (w *Writer) Raw(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.w.Write(append(b, '\n'))
	return err
}
