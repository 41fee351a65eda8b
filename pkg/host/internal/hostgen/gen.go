package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/build"
	"go/format"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

const hostPath = "github.com/wincsi/csi-windows-node/pkg/host"

// fset and sources serve every load: the source importer keeps what it has
// type-checked (the standard library packages host imports), so that a
// later load, of which the tests make five, does not parse them again.
// Not safe for concurrent loads.
var (
	fset    = token.NewFileSet()
	sources = importer.ForCompiler(fset, "source", nil)
)

// area is one field of host.Host and its interface.
type area struct {
	Field   string // "Disks"
	Label   string // "disks": the field in lower case
	Iface   string // "host.Disks"
	Methods []method
}

// method is one method of an area's interface, its types written as the
// generated file refers to them.
type method struct {
	Name     string
	Params   []param // the first is the context
	Results  []string
	Variadic bool
}

type param struct{ Name, Type string }

// model is what the templates need: the areas and the imports their
// signatures use besides package host.
type model struct {
	Areas   []area
	Imports map[string]string // path -> name
	// zero returns the zero value of a result type, as Go source.
	zero map[string]string
}

// load type-checks package host in dir and reads host.Host's fields.
func load(dir string) (*model, error) {
	bp, err := build.ImportDir(dir, 0)
	if err != nil {
		return nil, err
	}
	if bp.Name != "host" {
		return nil, fmt.Errorf("%s holds package %s, not host", dir, bp.Name)
	}
	var files []*ast.File
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	conf := types.Config{Importer: sources, IgnoreFuncBodies: true}
	pkg, err := conf.Check(hostPath, fset, files, nil)
	if err != nil {
		return nil, fmt.Errorf("type-check package host: %w", err)
	}
	return read(pkg)
}

// read builds the model from the type-checked package host.
func read(pkg *types.Package) (*model, error) {
	obj := pkg.Scope().Lookup("Host")
	if obj == nil {
		return nil, fmt.Errorf("package host declares no Host")
	}
	st, ok := obj.Type().Underlying().(*types.Struct)
	if !ok {
		return nil, fmt.Errorf("host.Host is not a struct")
	}
	m := &model{Imports: map[string]string{}, zero: map[string]string{}}
	qual := func(p *types.Package) string {
		if p == pkg {
			return "host"
		}
		m.Imports[p.Path()] = p.Name()
		return p.Name()
	}
	for i := range st.NumFields() {
		f := st.Field(i)
		named, ok := f.Type().(*types.Named)
		if !ok {
			return nil, fmt.Errorf("host.Host.%s is not a named interface", f.Name())
		}
		iface, ok := named.Underlying().(*types.Interface)
		if !ok {
			return nil, fmt.Errorf("host.Host.%s is not an interface", f.Name())
		}
		a := area{Field: f.Name(), Label: strings.ToLower(f.Name()), Iface: types.TypeString(named, qual)}
		fns := make([]*types.Func, iface.NumMethods())
		for j := range fns {
			fns[j] = iface.Method(j)
		}
		// In the order the interface declares them, as its documentation
		// reads.
		slices.SortFunc(fns, func(x, y *types.Func) int { return int(x.Pos() - y.Pos()) })
		for _, fn := range fns {
			mt, err := readMethod(a.Label, fn, qual, m.zero)
			if err != nil {
				return nil, err
			}
			a.Methods = append(a.Methods, mt)
		}
		m.Areas = append(m.Areas, a)
	}
	return m, nil
}

func readMethod(area string, fn *types.Func, qual types.Qualifier, zero map[string]string) (method, error) {
	sig := fn.Type().(*types.Signature)
	name := area + "." + fn.Name()
	ps, rs := sig.Params(), sig.Results()
	if ps.Len() == 0 || types.TypeString(ps.At(0).Type(), nil) != "context.Context" {
		return method{}, fmt.Errorf("%s: the first parameter must be a context.Context (pkg/host doc.go)", name)
	}
	if rs.Len() == 0 || types.TypeString(rs.At(rs.Len()-1).Type(), nil) != "error" {
		return method{}, fmt.Errorf("%s: the last result must be an error", name)
	}
	mt := method{Name: fn.Name(), Variadic: sig.Variadic()}
	for i := range ps.Len() {
		v := ps.At(i)
		t := types.TypeString(v.Type(), qual)
		if mt.Variadic && i == ps.Len()-1 {
			t = "..." + types.TypeString(v.Type().(*types.Slice).Elem(), qual)
		}
		mt.Params = append(mt.Params, param{Name: v.Name(), Type: t})
	}
	for i := range rs.Len() {
		t := types.TypeString(rs.At(i).Type(), qual)
		mt.Results = append(mt.Results, t)
		zero[t] = zeroValue(rs.At(i).Type(), t)
	}
	return mt, nil
}

// zeroValue is the zero value of t, whose source form is src.
func zeroValue(t types.Type, src string) string {
	switch u := t.Underlying().(type) {
	case *types.Basic:
		switch {
		case u.Info()&types.IsBoolean != 0:
			return "false"
		case u.Info()&types.IsString != 0:
			return `""`
		case u.Info()&types.IsNumeric != 0:
			return "0"
		}
	case *types.Struct, *types.Array:
		return src + "{}"
	}
	return "nil"
}

// imports writes the import block: the standard library's, then the
// module's.
func (m *model) imports(b *bytes.Buffer, extra ...string) {
	paths := append([]string{hostPath}, extra...)
	for p := range m.Imports {
		if !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	b.WriteString("import (\n")
	for _, group := range []bool{true, false} {
		for _, p := range paths {
			if std := !strings.Contains(strings.Split(p, "/")[0], "."); std == group {
				if name := m.Imports[p]; name != "" && name != path.Base(p) {
					fmt.Fprintf(b, "\t%s %q\n", name, p)
				} else {
					fmt.Fprintf(b, "\t%q\n", p)
				}
			}
		}
		if group {
			b.WriteString("\n")
		}
	}
	b.WriteString(")\n\n")
}

const header = "// Code generated by hostgen (pkg/host/internal/hostgen) from the interfaces of\n" +
	"// pkg/host; DO NOT EDIT. Run go generate in this package after changing one.\n\n"

// wrap writes pkg/hostmetrics/wrap.go: per area, a decorator type whose
// every method times and counts the call and passes it on untouched.
func wrap(m *model) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(header + "package hostmetrics\n\n")
	m.imports(&b, "time")
	b.WriteString("// Areas: the host.Host fields in lower case, the area label of a call.\nconst (\n")
	for _, a := range m.Areas {
		fmt.Fprintf(&b, "\tArea%s = %q\n", a.Field, a.Label)
	}
	b.WriteString(")\n\n// Wrap returns a host whose calls are counted and then passed to h.\n")
	b.WriteString("func (m *Metrics) Wrap(h host.Host) host.Host {\n\treturn host.Host{\n")
	for _, a := range m.Areas {
		fmt.Fprintf(&b, "\t\t%s: %s{next: h.%s, m: m},\n", a.Field, a.Label, a.Field)
	}
	b.WriteString("\t}\n}\n")
	for _, a := range m.Areas {
		fmt.Fprintf(&b, "\ntype %s struct {\n\tnext %s\n\tm *Metrics\n}\n\nvar _ %s = %s{}\n", a.Label, a.Iface, a.Iface, a.Label)
		for _, mt := range a.Methods {
			names := paramNames(mt)
			var params, args []string
			for i, p := range mt.Params {
				params = append(params, names[i]+" "+p.Type)
				args = append(args, names[i])
			}
			if mt.Variadic {
				args[len(args)-1] += "..."
			}
			var rets []string
			for i := range mt.Results[:len(mt.Results)-1] {
				rets = append(rets, fmt.Sprintf("r%d", i))
			}
			rets = append(rets, "err")
			fmt.Fprintf(&b, "\nfunc (w %s) %s(%s) %s {\n", a.Label, mt.Name, strings.Join(params, ", "), results(mt.Results))
			b.WriteString("\tstart := time.Now()\n")
			fmt.Fprintf(&b, "\t%s := w.next.%s(%s)\n", strings.Join(rets, ", "), mt.Name, strings.Join(args, ", "))
			fmt.Fprintf(&b, "\tw.m.observe(Area%s, %q, start, err)\n", a.Field, mt.Name)
			fmt.Fprintf(&b, "\treturn %s\n}\n", strings.Join(rets, ", "))
		}
	}
	return format.Source(b.Bytes())
}

// paramNames names the parameters of a decorator method: as the interface
// does, with a fallback for unnamed ones and for names the body uses.
func paramNames(mt method) []string {
	taken := map[string]bool{"w": true, "start": true, "err": true}
	for i := range mt.Results {
		taken[fmt.Sprintf("r%d", i)] = true
	}
	out := make([]string, len(mt.Params))
	for i, p := range mt.Params {
		n := p.Name
		switch {
		case n != "" && n != "_":
		case i == 0:
			n = "ctx"
		default:
			n = fmt.Sprintf("a%d", i)
		}
		for taken[n] {
			n += "_"
		}
		taken[n] = true
		out[i] = n
	}
	return out
}

func results(rs []string) string {
	if len(rs) == 1 {
		return rs[0]
	}
	return "(" + strings.Join(rs, ", ") + ")"
}

// unimplemented writes pkg/host/hosttest/unimplemented.go: per area, a type
// whose every method fails with notImpl naming it.
func unimplemented(m *model) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(header + "package hosttest\n\n")
	m.imports(&b)
	b.WriteString(`// Unimplemented returns a host.Host whose every method fails with an error
// wrapping host.ErrNotImplemented and naming the method ("disks.List").
// Tests build fakes on it: replace one area, or embed an area in a struct
// that overrides the methods a test needs, and every other call fails
// loudly instead of pretending to succeed. pkg/hostmetrics' tests use
// it to reach every method of every area through the metrics decorator.
// The plugin never uses it: every host it runs on implements every method.
func Unimplemented() host.Host {
	return host.Host{
`)
	for _, a := range m.Areas {
		fmt.Fprintf(&b, "\t\t%s: unimplemented%s{},\n", a.Field, a.Field)
	}
	b.WriteString("\t}\n}\n")
	for _, a := range m.Areas {
		typ := "unimplemented" + a.Field
		fmt.Fprintf(&b, "\ntype %s struct{}\n\nvar _ %s = %s{}\n", typ, a.Iface, typ)
		for _, mt := range a.Methods {
			var params, rets []string
			for _, p := range mt.Params {
				params = append(params, p.Type)
			}
			for _, r := range mt.Results[:len(mt.Results)-1] {
				rets = append(rets, m.zero[r])
			}
			rets = append(rets, fmt.Sprintf("notImpl(%q)", a.Label+"."+mt.Name))
			fmt.Fprintf(&b, "\nfunc (%s) %s(%s) %s {\n\treturn %s\n}\n", typ, mt.Name, strings.Join(params, ", "), results(mt.Results), strings.Join(rets, ", "))
		}
	}
	return format.Source(b.Bytes())
}
