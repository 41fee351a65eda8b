package wmischema

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// Module is the module path and the version whose generated code the
// checks read; go.mod pins the same version.
const (
	Module  = "github.com/microsoft/wmi"
	Version = "v0.43.0"
)

// Trees are the generated trees checked: a call must fit both, so the
// plugin uses only what Windows Server 2019 and 23H2 both have.
var Trees = []string{"server2019", "server23h2"}

// Ungenerated are namespaces a tree does not carry although that Windows
// version has them, by tree and lower-case namespace, each with the
// documentation that says so: microsoft/wmi v0.43.0 generates no Root\WMI
// for Server 2019. A call in such a namespace is checked against the other
// trees only; a namespace no tree carries is an error. The plugin's code
// for such a class must not rely on it (ReportLUNs: an error is "the
// answer is unknown", and the stage waits for the disk as before).
var Ungenerated = map[string]map[string]string{
	"server2019": {
		`root\wmi`: "the iSCSI initiator's MSiSCSIInitiator_SessionClass and its SendScsiReportLuns: minimum supported server " +
			"Windows Server 2008 (https://learn.microsoft.com/previous-versions/windows/desktop/iscsidisc/sendscsireportluns-msiscsiinitiator-sessionclass)",
	},
}

// treesFor returns the trees a call in namespace ns is checked against:
// every tree but those Ungenerated lists for ns.
func (s *Schema) treesFor(ns string) []*Tree {
	key := strings.ToLower(strings.ReplaceAll(ns, "/", `\`))
	var out []*Tree
	for _, t := range s.Trees {
		if _, skip := Ungenerated[t.Name][key]; !skip {
			out = append(out, t)
		}
	}
	return out
}

// Class is one WMI class as the generated code describes it, with the
// properties and methods of its base classes.
type Class struct {
	Name    string
	Props   map[string]string  // property name → Go type in the generated code
	Methods map[string]*Method // method name → method
	// Refs are the classes of the reference properties (for an
	// association: the classes it links).
	Refs map[string]bool
}

// Method is one method of a class.
type Method struct {
	Name   string
	Params map[string]*Param
}

// Param is one parameter of a method.
type Param struct {
	Name    string
	CIMType string // as the MOF names it: uint16, uint64, string, string [], MSFT_Partition, ...
	In, Out bool
}

// Tree is one generated tree: namespaces by their lower-case WMI name.
type Tree struct {
	Name string
	dir  string // the tree's root directory (.../server2019)

	mu         sync.Mutex
	namespaces map[string]*namespace
}

type namespace struct {
	files   map[string]string // lower-case Go type name → file
	kinds   map[string]string // lower-case Go type name → "struct" or the underlying type of an enum
	classes map[string]*Class // lower-case class name → class (parsed)
	missing map[string]error
}

// Schema holds the trees.
type Schema struct {
	Trees []*Tree
}

// ModuleDir returns the directory of the module in the module cache,
// downloading it when it is missing (go mod download, which the module
// proxy serves as for any build).
func ModuleDir() (string, error) {
	gobin := filepath.Join(goroot(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		gobin = "go"
	}
	out, err := exec.Command(gobin, "mod", "download", "-json", Module+"@"+Version).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("go mod download %s@%s: %w: %s", Module, Version, err, ee.Stderr)
		}
		return "", fmt.Errorf("go mod download %s@%s: %w", Module, Version, err)
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w", Module, Version, err)
	}
	if m.Error != "" || m.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: %s", Module, Version, m.Error)
	}
	return m.Dir, nil
}

func goroot() string {
	if r := os.Getenv("GOROOT"); r != "" {
		return r
	}
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// Load opens the trees of the module at dir. Classes are parsed on first
// use.
func Load(dir string) (*Schema, error) {
	s := &Schema{}
	for _, name := range Trees {
		d := filepath.Join(dir, name)
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("%s: no generated tree %s", dir, name)
		}
		s.Trees = append(s.Trees, &Tree{Name: name, dir: d, namespaces: map[string]*namespace{}})
	}
	return s, nil
}

// nsDir maps a WMI namespace (Root\Microsoft\Windows\Storage) to its
// directory in a tree (root/microsoft/windows/storage), as the generator
// lays them out: lower case, one directory per namespace level.
func (t *Tree) nsDir(ns string) string {
	parts := strings.Split(strings.ToLower(strings.ReplaceAll(ns, "/", `\`)), `\`)
	return filepath.Join(append([]string{t.dir}, parts...)...)
}

var typeDecl = regexp.MustCompile(`(?m)^type (\w+) (\w+)`)

func (t *Tree) namespace(ns string) (*namespace, error) {
	key := strings.ToLower(ns)
	if n := t.namespaces[key]; n != nil {
		return n, nil
	}
	dir := t.nsDir(ns)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: namespace %s does not exist (%s)", t.Name, ns, dir)
	}
	n := &namespace{files: map[string]string{}, kinds: map[string]string{}, classes: map[string]*Class{}, missing: map[string]error{}}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		for _, m := range typeDecl.FindAllSubmatch(b, -1) {
			n.files[strings.ToLower(string(m[1]))] = filepath.Join(dir, e.Name())
			n.kinds[strings.ToLower(string(m[1]))] = string(m[2])
		}
	}
	t.namespaces[key] = n
	return n, nil
}

// Class returns the class named name in namespace ns, with the members of
// its base classes.
func (t *Tree) Class(ns, name string) (*Class, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, err := t.namespace(ns)
	if err != nil {
		return nil, err
	}
	return n.class(t.Name, ns, name, 0)
}

func (n *namespace) class(tree, ns, name string, depth int) (*Class, error) {
	key := strings.ToLower(name)
	if c := n.classes[key]; c != nil {
		return c, nil
	}
	if err := n.missing[key]; err != nil {
		return nil, err
	}
	if depth > 16 {
		return nil, fmt.Errorf("%s: class %s: inheritance deeper than 16", tree, name)
	}
	file, ok := n.files[key]
	if !ok {
		err := fmt.Errorf("%s: class %s does not exist in namespace %s", tree, name, ns)
		n.missing[key] = err
		return nil, err
	}
	c, base, err := parseClass(file, name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tree, err)
	}
	if base != "" {
		b, err := n.class(tree, ns, base, depth+1)
		if err != nil {
			return nil, fmt.Errorf("base class of %s: %w", name, err)
		}
		for k, v := range b.Props {
			if _, ok := c.Props[k]; !ok {
				c.Props[k] = v
			}
		}
		for k, v := range b.Methods {
			if _, ok := c.Methods[k]; !ok {
				c.Methods[k] = v
			}
		}
		for k := range b.Refs {
			c.Refs[k] = true
		}
	}
	// A field typed by a generated class of the namespace is a reference
	// (or an embedded object); a field typed by a generated enum has the
	// enum's underlying type.
	for prop, typ := range c.Props {
		arr, elem := "", typ
		if strings.HasPrefix(typ, "[]") {
			arr, elem = "[]", typ[2:]
		}
		switch kind := n.kinds[strings.ToLower(elem)]; kind {
		case "":
		case "struct":
			c.Refs[strings.ToLower(elem)] = true
		default:
			c.Props[prop] = arr + kind
		}
	}
	n.classes[key] = c
	return c, nil
}

var (
	paramDoc = regexp.MustCompile(`<param name="(\w+)" type="([^"]*)">`)
	paramSig = regexp.MustCompile(`/\*\s*(OPTIONAL\s+)?(IN|OUT)\s*\*/\s*(\w+)\s`)
)

// parseClass reads the struct and the methods of the class declared in
// file, and the name of its base class (the embedded pointer), if any.
func parseClass(file, name string) (*Class, string, error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, "", err
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, "", err
	}
	c := &Class{Props: map[string]string{}, Methods: map[string]*Method{}, Refs: map[string]bool{}}
	var base string
	found := false
	prevEnd := 0 // offset of the end of the previous declaration
	for _, d := range f.Decls {
		// The parameter comments of a method come in two groups (IN,
		// then OUT) separated by a blank line, so they are read from the
		// text between the previous declaration and this one.
		between := string(src[prevEnd:fset.Position(d.Pos()).Offset])
		prevEnd = fset.Position(d.End()).Offset
		switch d := d.(type) {
		case *ast.GenDecl:
			for _, sp := range d.Specs {
				ts, ok := sp.(*ast.TypeSpec)
				if !ok || !strings.EqualFold(ts.Name.Name, name) {
					continue
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					return nil, "", fmt.Errorf("%s: %s is not a class", file, name)
				}
				found = true
				c.Name = ts.Name.Name
				for _, fl := range st.Fields.List {
					typ := exprString(src, fset, fl.Type)
					if len(fl.Names) == 0 { // embedded: the base class
						b := strings.TrimPrefix(typ, "*")
						if !strings.Contains(b, ".") { // not cim.WmiInstance
							base = b
						}
						continue
					}
					for _, id := range fl.Names {
						c.Props[id.Name] = typ
					}
				}
			}
		case *ast.FuncDecl:
			if d.Recv == nil || len(d.Recv.List) != 1 {
				continue
			}
			if recv := strings.TrimPrefix(exprString(src, fset, d.Recv.List[0].Type), "*"); !strings.EqualFold(recv, name) {
				continue
			}
			docParams := paramDoc.FindAllStringSubmatch(between, -1)
			if len(docParams) == 0 {
				continue // a property accessor, not a WMI method
			}
			m := &Method{Name: d.Name.Name, Params: map[string]*Param{}}
			for _, p := range docParams {
				m.Params[p[1]] = &Param{Name: p[1], CIMType: strings.TrimSpace(p[2])}
			}
			sig := string(src[fset.Position(d.Type.Params.Opening).Offset:fset.Position(d.Type.Params.Closing).Offset])
			for _, p := range paramSig.FindAllStringSubmatch(sig, -1) {
				pp := m.Params[p[3]]
				if pp == nil {
					return nil, "", fmt.Errorf("%s: %s.%s: parameter %s in the signature but not in the comments", file, name, d.Name.Name, p[3])
				}
				if p[2] == "IN" {
					pp.In = true
				} else {
					pp.Out = true
				}
			}
			// ReturnValue is the method's result, not a signature
			// parameter; every other documented parameter has a direction.
			if rv := m.Params["ReturnValue"]; rv != nil {
				rv.Out = true
			}
			c.Methods[m.Name] = m
		}
	}
	if !found {
		return nil, "", fmt.Errorf("%s: no class %s", file, name)
	}
	return c, base, nil
}

func exprString(src []byte, fset *token.FileSet, e ast.Expr) string {
	return string(src[fset.Position(e.Pos()).Offset:fset.Position(e.End()).Offset])
}
