package winhost_test

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/recording"
	"github.com/wincsi/csi-windows-node/pkg/winhost/replay"
	"github.com/wincsi/csi-windows-node/pkg/winhost/scripted"
)

// A recording from Windows outranks the scripted executor: every reply a
// test of this package scripts is compared with every reply of the same
// call in a Windows recording under testdata/recordings, by shape: the
// properties an object carries (a scripted property Windows does not
// report fails) and the form of each value (a CIM uint64 that Windows
// hands over as a string but a test scripts as an integer fails). Values
// themselves are not compared, nor properties Windows adds (a SELECT of a
// few properties may come back with the others null), nor a null against
// anything. TestMain runs it over the whole suite's scripted replies
// (schema_test.go); TestShapeComparison shows that it finds differences.

// shapeKey names a call: what is asked, not with which values.
func shapeKey(c scripted.Call) string {
	switch c.Kind {
	case scripted.KindQuery:
		return "Query " + c.Namespace + " " + c.WQL
	case scripted.KindAssociators:
		return "Associators " + c.Namespace + " " + c.Assoc + " " + c.Result
	case scripted.KindCall:
		return "Call " + c.Namespace + " " + c.Method.Class + "." + c.Method.Name
	}
	return c.Kind
}

// form is a value's shape: its Go type as the executor produces it, and
// for an object its class, for an array the form of its elements.
func form(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return "str"
	case bool:
		return "bool"
	case int64:
		return "i64"
	case float64:
		return "f64"
	case []any:
		forms := map[string]bool{}
		for _, e := range x {
			forms[form(e)] = true
		}
		return "arr<" + strings.Join(slices.Sorted(maps.Keys(forms)), "|") + ">"
	case winhost.Instance:
		return "obj<" + x.Class + ">"
	case *winhost.Instance:
		if x == nil {
			return "null"
		}
		return "obj<" + x.Class + ">"
	}
	return fmt.Sprintf("%T", v)
}

// flatten lists the properties of an object, embedded objects' as
// Outer.Inner, with their forms.
func flatten(prefix string, props map[string]any, out map[string]string) {
	for k, v := range props {
		out[prefix+k] = form(v)
		switch x := v.(type) {
		case winhost.Instance:
			flatten(prefix+k+".", x.Props, out)
		case *winhost.Instance:
			if x != nil {
				flatten(prefix+k+".", x.Props, out)
			}
		}
	}
}

// replyShapes returns the shapes of a reply: one per object (by class)
// for a query, the output parameters for a method, the value for a Win32
// call.
func replyShapes(kind string, r scripted.Reply) map[string][]map[string]string {
	out := map[string][]map[string]string{}
	switch kind {
	case scripted.KindQuery, scripted.KindAssociators:
		for _, in := range r.Instances {
			m := map[string]string{}
			flatten("", in.Props, m)
			out[in.Class] = append(out[in.Class], m)
		}
	case scripted.KindCall:
		m := map[string]string{}
		flatten("", r.Result.Out, m)
		out["out"] = append(out["out"], m)
	}
	return out
}

// compatible reports whether two forms may stand for the same value: equal,
// or one of them null, or arrays one of which is empty.
func compatible(a, b string) bool {
	return a == b || a == "null" || b == "null" || a == "arr<>" && strings.HasPrefix(b, "arr<") || b == "arr<>" && strings.HasPrefix(a, "arr<")
}

// compareShapes compares a recorded shape with a scripted one of the same
// call and class.
func compareShapes(recorded, canned map[string]string) []string {
	var diffs []string
	for _, p := range slices.Sorted(maps.Keys(canned)) {
		rf, ok := recorded[p]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("the scripted reply carries %s, which Windows did not report", p))
		case !compatible(rf, canned[p]):
			diffs = append(diffs, fmt.Sprintf("%s is %s from Windows but %s in the scripted reply", p, rf, canned[p]))
		}
	}
	return diffs
}

// cannedReplies indexes the scripted replies of the suite by call, leaving
// out those a replay answered (they are a recording's own).
func cannedReplies(recs []scripted.Record) map[string][]scripted.Record {
	out := map[string][]scripted.Record{}
	for _, r := range recs {
		if r.Reply.Err != nil || slices.ContainsFunc(r.Stack, func(f string) bool { return strings.Contains(f, "replay_test.go") }) {
			continue
		}
		k := shapeKey(r.Call)
		out[k] = append(out[k], r)
	}
	return out
}

// checkShapes compares every reply of a Windows recording with the
// scripted replies of the same call.
func checkShapes(rec *recording.File, name string, canned map[string][]scripted.Record) []error {
	if rec.Header.Source != recording.SourceWindows {
		return nil
	}
	var errs []error
	seen := map[string]bool{}
	for _, l := range rec.Lines {
		c, err := replay.Call(l)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s call %d: %w", name, l.Seq, err))
			continue
		}
		r, err := replay.Reply(l)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s call %d: %w", name, l.Seq, err))
			continue
		}
		if r.Err != nil {
			continue
		}
		got := replyShapes(c.Kind, r)
		for _, cr := range canned[shapeKey(c)] {
			want := replyShapes(c.Kind, cr.Reply)
			for class, shapes := range want {
				for _, ws := range shapes {
					for _, gs := range got[class] {
						for _, d := range compareShapes(gs, ws) {
							msg := fmt.Sprintf("%s call %d (%s, %s): %s (scripted at %s)", name, l.Seq, shapeKey(c), class, d, firstTestFrame(cr.Stack))
							if !seen[msg] {
								seen[msg] = true
								errs = append(errs, fmt.Errorf("%s", msg))
							}
						}
					}
				}
			}
			if c.Kind != scripted.KindQuery && c.Kind != scripted.KindAssociators && c.Kind != scripted.KindCall {
				if g, w := win32Form(r), win32Form(cr.Reply); g != "" && w != "" && g != w {
					errs = append(errs, fmt.Errorf("%s call %d (%s): Windows answered a %s, the scripted reply a %s (scripted at %s)",
						name, l.Seq, c.Kind, g, w, firstTestFrame(cr.Stack)))
				}
			}
		}
	}
	return errs
}

// win32Form is the form of a Win32 reply's one value (RegistryValue's any).
func win32Form(r scripted.Reply) string {
	if r.Value != nil {
		return fmt.Sprintf("%T", r.Value)
	}
	return ""
}

// firstTestFrame is the test code that scripted a reply.
func firstTestFrame(stack []string) string {
	for _, f := range stack {
		if strings.Contains(f, "_test.go") && !strings.Contains(f, "scripted") {
			return filepath.Base(f)
		}
	}
	return "?"
}

// checkRecordingShapes runs the comparison over every recording.
func checkRecordingShapes(recs []scripted.Record) []error {
	paths, err := filepath.Glob("testdata/recordings/*.jsonl")
	if err != nil {
		return []error{err}
	}
	canned := cannedReplies(recs)
	var errs []error
	for _, p := range paths {
		rec, err := replay.Load(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, checkShapes(rec, filepath.Base(p), canned)...)
	}
	return errs
}

// The comparison finds what it must: a property scripted that Windows does
// not report, a CIM uint64 scripted as an integer, a Win32 answer of
// another type; and it accepts a null, an extra property from Windows and
// an empty array.
func TestShapeComparison(t *testing.T) {
	const wql = "SELECT Number, Size, Location FROM MSFT_Disk"
	canned := []scripted.Record{
		{Call: scripted.Call{Kind: scripted.KindQuery, Namespace: ns, WQL: wql}, Reply: scripted.Reply{Instances: []winhost.Instance{
			{Class: "MSFT_Disk", Props: map[string]any{"Number": int64(1), "Size": int64(10 << 30), "Location": nil, "Paths": []any{}}}}},
			Stack: []string{"/x/pkg/winhost/disks_test.go:10"}},
		{Call: scripted.Call{Kind: scripted.KindCall, Namespace: ns, Method: winhost.Method{Class: "MSFT_Partition", Name: "GetSupportedSize"}},
			Reply: scripted.Reply{Result: winhost.Result{Out: map[string]any{"SizeMax": "1", "ExtendedStatus": nil, "Gone": "x"}}},
			Stack: []string{"/x/pkg/winhost/disks_test.go:20"}},
		{Call: scripted.Call{Kind: "RegistryValue", Args: []any{"k", "UBR"}}, Reply: scripted.Reply{Value: "2849"},
			Stack: []string{"/x/pkg/winhost/admin_test.go:30"}},
	}
	rv := uint32(0)
	v := func(x any) recording.Value {
		e, err := recording.Encode(x)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	size, one, loc, paths, u32 := v("10737418240"), v("1"), v("PCI Slot 3"), v([]any{"a"}), v(uint32(2849))
	rec := &recording.File{Header: recording.Header{Source: recording.SourceWindows}, Lines: []recording.Line{
		{Seq: 1, Kind: scripted.KindQuery, Namespace: ns, WQL: wql, Reply: &recording.Reply{Instances: []recording.Object{
			{Class: "MSFT_Disk", Props: map[string]recording.Value{"Number": v(int64(1)), "Size": size, "Location": loc, "Paths": paths,
				"FriendlyName": v("extra")}}}}},
		{Seq: 2, Kind: scripted.KindCall, Namespace: ns, Method: &recording.Method{Class: "MSFT_Partition", Name: "GetSupportedSize"},
			Reply: &recording.Reply{ReturnValue: &rv, Out: map[string]recording.Value{"SizeMax": one, "ExtendedStatus": v(nil)}}},
		{Seq: 3, Kind: "RegistryValue", Args: []recording.Value{v("k"), v("UBR")}, Reply: &recording.Reply{Value: &u32}},
	}}
	idx := map[string][]scripted.Record{}
	for _, r := range canned {
		idx[shapeKey(r.Call)] = append(idx[shapeKey(r.Call)], r)
	}
	var got []string
	for _, err := range checkShapes(rec, "r.jsonl", idx) {
		got = append(got, err.Error())
	}
	for _, want := range []string{
		"Size is str from Windows but i64 in the scripted reply (scripted at disks_test.go:10)",
		"the scripted reply carries Gone, which Windows did not report",
		"Windows answered a uint32, the scripted reply a string",
	} {
		if !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, want) }) {
			t.Errorf("no difference %q among %q", want, got)
		}
	}
	if len(got) != 3 {
		t.Errorf("%d differences, want 3: %q", len(got), got)
	}
	// A scripted recording is the tests' own: not compared.
	rec.Header.Source = recording.SourceScripted
	if errs := checkShapes(rec, "r.jsonl", idx); len(errs) != 0 {
		t.Errorf("a scripted recording was compared: %v", errs)
	}
}
