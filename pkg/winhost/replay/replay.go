// Package replay answers executor calls from a recording
// (pkg/winhost/recording): it lays a recording's calls out as the script
// of a scripted executor, so that code run again over it must make the
// same calls, in the same order, with the same inputs, and gets the same
// answers. A call the recording does not have, or one with other inputs,
// fails the test, as in any scripted test. Sensitive inputs, which a
// recording holds by name only, match any value.
//
// It is test tooling, never used by the plugin itself.
package replay

import (
	"fmt"
	"os"
	"reflect"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/recording"
	"github.com/wincsi/csi-windows-node/pkg/winhost/scripted"
)

// Load reads a recording file.
func Load(path string) (*recording.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rec, err := recording.Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rec, nil
}

// New returns a scripted executor that expects the recording's calls.
func New(t scripted.TB, rec *recording.File) (*scripted.Executor, error) {
	e := scripted.New(t)
	for _, l := range rec.Lines {
		c, err := Call(l)
		if err != nil {
			return nil, fmt.Errorf("call %d (%s): %w", l.Seq, l.Kind, err)
		}
		r, err := Reply(l)
		if err != nil {
			return nil, fmt.Errorf("call %d (%s): %w", l.Seq, l.Kind, err)
		}
		if hasSecret(c) {
			want := c
			e.ExpectMatching(c.Kind, func(got scripted.Call) string { return matchIgnoringSecrets(want, got) }, r)
			continue
		}
		switch c.Kind {
		case scripted.KindQuery:
			e.ExpectQuery(c.Namespace, c.WQL, r)
		case scripted.KindAssociators:
			e.ExpectAssociators(c.Namespace, c.Path, c.Assoc, c.Result, r)
		case scripted.KindCall:
			e.ExpectCall(c.Namespace, c.Method, r)
		case scripted.KindDeleteInstance:
			e.ExpectDeleteInstance(c.Namespace, c.Path, r)
		default:
			e.ExpectWin32(c.Kind, c.Args, r)
		}
	}
	return e, nil
}

// Call returns the call a line records, as the scripted executor sees
// calls; a sensitive parameter's value is nil and a secret argument is
// host.Secret{}.
func Call(l recording.Line) (scripted.Call, error) {
	c := scripted.Call{Kind: l.Kind, Namespace: l.Namespace, WQL: l.WQL, Path: l.Path, Assoc: l.Assoc, Result: l.ResultClass}
	if l.Method != nil {
		c.Method = winhost.Method{Class: l.Method.Class, Path: l.Method.Path, Name: l.Method.Name}
		for _, p := range l.Method.In {
			wp := winhost.Param{Name: p.Name, Sensitive: p.Sensitive}
			if p.Value != nil {
				v, err := recording.Decode(*p.Value)
				if err != nil {
					return c, fmt.Errorf("parameter %s: %w", p.Name, err)
				}
				wp.Value = v
			}
			c.Method.In = append(c.Method.In, wp)
		}
	}
	for i, a := range l.Args {
		v, err := recording.Decode(a)
		if err != nil {
			return c, fmt.Errorf("argument %d: %w", i, err)
		}
		c.Args = append(c.Args, v)
	}
	return c, nil
}

// Reply returns the answer a line records, in the field of scripted.Reply
// the call reads.
func Reply(l recording.Line) (scripted.Reply, error) {
	var r scripted.Reply
	if l.Error != nil {
		err, derr := l.Error.Decode()
		if derr != nil {
			return r, derr
		}
		r.Err = err
		return r, nil
	}
	if l.Reply == nil {
		return r, fmt.Errorf("neither a reply nor an error")
	}
	for _, o := range l.Reply.Instances {
		in, err := recording.DecodeObject(o)
		if err != nil {
			return r, err
		}
		r.Instances = append(r.Instances, in)
	}
	if l.Reply.ReturnValue != nil {
		r.Result.ReturnValue = *l.Reply.ReturnValue
	}
	if l.Reply.Out != nil {
		r.Result.Out = map[string]any{}
		for k, v := range l.Reply.Out {
			d, err := recording.Decode(v)
			if err != nil {
				return r, fmt.Errorf("output %s: %w", k, err)
			}
			r.Result.Out[k] = d
		}
	}
	if l.Reply.Value == nil {
		return r, nil
	}
	v, err := recording.Decode(*l.Reply.Value)
	if err != nil {
		return r, err
	}
	if l.Kind == "RegistryValue" {
		r.Value = v
		return r, nil
	}
	switch x := v.(type) {
	case []byte:
		r.Bytes = x
	case string:
		r.String = x
	case uint32:
		r.Uint32 = x
	case bool:
		r.Bool = x
	case []string:
		r.Strings = x
	case [3]uint64:
		r.Space = x
	case host.Token:
		r.Token = x
	case host.Service:
		r.Service = x
	case recording.Account:
		r.Bytes, r.Uint32 = x.SID, x.Use
	case recording.PersistentLogins:
		r.Count, r.Bytes = x.Count, x.Fixed
	case nil:
	default:
		return r, fmt.Errorf("a reply of type %T", v)
	}
	return r, nil
}

func hasSecret(c scripted.Call) bool {
	for _, p := range c.Method.In {
		if p.Sensitive {
			return true
		}
	}
	for _, a := range c.Args {
		if _, ok := a.(host.Secret); ok {
			return true
		}
	}
	return false
}

// matchIgnoringSecrets compares a call with a recorded one, everything but
// the values of sensitive parameters and secret arguments.
func matchIgnoringSecrets(want, got scripted.Call) string {
	strip := func(c scripted.Call) scripted.Call {
		m := c.Method
		m.In = append([]winhost.Param(nil), m.In...)
		for i := range m.In {
			if m.In[i].Sensitive {
				m.In[i].Value = nil
			}
		}
		c.Method = m
		c.Args = append([]any(nil), c.Args...)
		for i, a := range c.Args {
			if _, ok := a.(host.Secret); ok {
				c.Args[i] = host.Secret{}
			}
		}
		return c
	}
	w, g := strip(want), strip(got)
	if !reflect.DeepEqual(w, g) {
		return fmt.Sprintf("differs from the recorded call (secrets aside): got %+v, want %+v", g, w)
	}
	return ""
}
