package wmischema

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/winhost"
)

// Every check runs against every tree that carries the namespace
// (Ungenerated) and returns one error per problem, prefixed with the tree.
// A nil result means the call fits every such tree.

// CheckQuery checks a WQL query sent to namespace ns and the instances it
// was answered with: the class exists in ns, every selected property and
// every property in WHERE exists, each WHERE literal fits its property's
// type, and every reply instance fits its class (CheckInstance) and holds
// no value for a property the query did not select (WMI would have
// answered null for it).
func (s *Schema) CheckQuery(ns, wql string, replies []winhost.Instance) []error {
	q, err := parseWQL(wql)
	if err != nil {
		return []error{fmt.Errorf("%s: %w", wql, err)}
	}
	var errs []error
	for _, t := range s.treesFor(ns) {
		c, err := t.Class(ns, q.class)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, p := range q.props {
			if _, ok := c.Props[p]; !ok {
				errs = append(errs, fmt.Errorf("%s: %s has no property %s (selected in %q)", t.Name, c.Name, p, wql))
			}
		}
		for _, cd := range q.conds {
			typ, ok := c.Props[cd.prop]
			if !ok {
				errs = append(errs, fmt.Errorf("%s: %s has no property %s (compared in %q)", t.Name, c.Name, cd.prop, wql))
				continue
			}
			if err := literalFits(typ, cd.lit); err != nil {
				errs = append(errs, fmt.Errorf("%s: %s.%s: %w (in %q)", t.Name, c.Name, cd.prop, err, wql))
			}
		}
	}
	selected := map[string]bool{}
	for _, p := range q.props {
		selected[strings.ToLower(p)] = true
	}
	for _, in := range replies {
		errs = append(errs, s.CheckInstance(ns, in)...)
		if len(q.props) == 0 {
			continue
		}
		for p, v := range in.Props {
			if v != nil && !selected[strings.ToLower(p)] {
				errs = append(errs, fmt.Errorf("reply to %q: %s has a value for %s, which the query does not select (Windows answers null)", wql, in.Class, p))
			}
		}
	}
	return errs
}

// CheckAssociators checks an association walk from the object at path:
// the association and result classes exist in ns, the association links
// the object's class and the result class, and every reply instance fits
// its class.
func (s *Schema) CheckAssociators(ns, path, assoc, result string, replies []winhost.Instance) []error {
	var errs []error
	source, err := pathClass(path)
	if err != nil {
		errs = append(errs, err)
	}
	for _, t := range s.treesFor(ns) {
		a, err := t.Class(ns, assoc)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if _, err := t.Class(ns, result); err != nil {
			errs = append(errs, err)
			continue
		}
		for _, end := range []string{source, result} {
			if end != "" && !a.Refs[strings.ToLower(end)] {
				errs = append(errs, fmt.Errorf("%s: association %s does not link %s", t.Name, a.Name, end))
			}
		}
	}
	for _, in := range replies {
		errs = append(errs, s.CheckInstance(ns, in)...)
	}
	return errs
}

// CheckCall checks a method invocation and its reply: the class exists in
// ns (and is the class of the object path, for an instance method), the
// method exists, every input is an IN parameter whose value fits its CIM
// type by the executor's conventions (winhost.Method), and every output in
// the reply is an OUT parameter whose value is what the executor makes of
// that CIM type.
func (s *Schema) CheckCall(ns string, m winhost.Method, r winhost.Result) []error {
	var errs []error
	if m.Path != "" {
		pc, err := pathClass(m.Path)
		switch {
		case err != nil:
			errs = append(errs, err)
		case !strings.EqualFold(pc, m.Class):
			errs = append(errs, fmt.Errorf("%s.%s invoked on an object of class %s", m.Class, m.Name, pc))
		}
	}
	for _, t := range s.treesFor(ns) {
		c, err := t.Class(ns, m.Class)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		meth := c.Methods[m.Name]
		if meth == nil {
			errs = append(errs, fmt.Errorf("%s: %s has no method %s", t.Name, c.Name, m.Name))
			continue
		}
		seen := map[string]bool{}
		for _, p := range m.In {
			if seen[p.Name] {
				errs = append(errs, fmt.Errorf("%s.%s: parameter %s passed twice", c.Name, m.Name, p.Name))
			}
			seen[p.Name] = true
			mp := meth.Params[p.Name]
			if mp == nil || !mp.In {
				errs = append(errs, fmt.Errorf("%s: %s.%s has no IN parameter %s", t.Name, c.Name, m.Name, p.Name))
				continue
			}
			if err := inValueFits(mp.CIMType, p.Value); err != nil {
				errs = append(errs, fmt.Errorf("%s: %s.%s(%s %s): %w", t.Name, c.Name, m.Name, mp.CIMType, p.Name, err))
			}
		}
		for name, v := range r.Out {
			mp := meth.Params[name]
			if mp == nil || !mp.Out {
				errs = append(errs, fmt.Errorf("%s: %s.%s has no OUT parameter %s", t.Name, c.Name, m.Name, name))
				continue
			}
			if err := outValueFits(mp.CIMType, v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %s.%s output %s (%s): %w", t.Name, c.Name, m.Name, name, mp.CIMType, err))
			}
		}
	}
	for _, v := range r.Out {
		errs = append(errs, s.checkEmbedded(ns, v)...)
	}
	return errs
}

// CheckDelete checks a deletion of the object at path
// (SWbemServices.Delete): the path names a class that exists in ns in
// both trees.
func (s *Schema) CheckDelete(ns, path string) []error {
	class, err := pathClass(path)
	if err != nil {
		return []error{err}
	}
	var errs []error
	for _, t := range s.Trees {
		if _, err := t.Class(ns, class); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// CheckInstance checks an object as the executor hands it over (a reply
// instance, an embedded object, an error object): it names its class,
// the class exists in ns, and every property it carries exists on the
// class. Values are not checked: tests feed malformed values on purpose,
// and the parsers report them.
func (s *Schema) CheckInstance(ns string, in winhost.Instance) []error {
	if in.Class == "" {
		return []error{fmt.Errorf("an instance (path %q) names no class; the executor always reports one", in.Path)}
	}
	var errs []error
	for _, t := range s.treesFor(ns) {
		c, err := t.Class(ns, in.Class)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for p := range in.Props {
			if _, ok := c.Props[p]; !ok {
				errs = append(errs, fmt.Errorf("%s: %s has no property %s", t.Name, c.Name, p))
			}
		}
	}
	for _, v := range in.Props {
		errs = append(errs, s.checkEmbedded(ns, v)...)
	}
	return errs
}

func (s *Schema) checkEmbedded(ns string, v any) []error {
	switch x := v.(type) {
	case winhost.Instance:
		return s.CheckInstance(ns, x)
	case *winhost.Instance:
		if x != nil {
			return s.CheckInstance(ns, *x)
		}
	case []any:
		var errs []error
		for _, e := range x {
			errs = append(errs, s.checkEmbedded(ns, e)...)
		}
		return errs
	}
	return nil
}

// pathClass returns the class of a WMI object path
// (\\SERVER\ROOT\ns:Class.Key="..." or Class=@ for a singleton).
func pathClass(path string) (string, error) {
	i := strings.Index(path, ":")
	if i < 0 {
		return "", fmt.Errorf("object path %q names no class", path)
	}
	rest := path[i+1:]
	j := strings.IndexAny(rest, ".=")
	if j <= 0 {
		return "", fmt.Errorf("object path %q names no class", path)
	}
	return rest[:j], nil
}

// inValueFits checks an input value against its CIM type by the
// executor's conventions (winhost.Method, wmiexec's toVariant): integers
// of 32 bits or fewer as Go integers of their exact width and sign, CIM
// 64-bit integers as decimal strings, booleans, strings, string arrays.
func inValueFits(cimType string, v any) error {
	want := ""
	ok := false
	switch cimType {
	case "string":
		want = "string"
		_, ok = v.(string)
	case "bool", "boolean":
		want = "bool"
		_, ok = v.(bool)
	case "uint8", "byte":
		want = "uint8"
		_, ok = v.(uint8)
	case "sint8", "int8":
		want = "int8"
		_, ok = v.(int8)
	case "uint16":
		want = "uint16"
		_, ok = v.(uint16)
	case "sint16", "int16":
		want = "int16"
		_, ok = v.(int16)
	case "uint32":
		want = "uint32"
		_, ok = v.(uint32)
	case "sint32", "int32":
		want = "int32"
		_, ok = v.(int32)
	case "uint64":
		want = "a decimal string (CIM uint64)"
		if sv, isStr := v.(string); isStr {
			_, err := strconv.ParseUint(sv, 10, 64)
			ok = err == nil
		}
	case "sint64", "int64":
		want = "a decimal string (CIM sint64)"
		if sv, isStr := v.(string); isStr {
			_, err := strconv.ParseInt(sv, 10, 64)
			ok = err == nil
		}
	case "string []":
		want = "[]string"
		_, ok = v.([]string)
	default:
		return fmt.Errorf("the executor passes no %s parameter", cimType)
	}
	if !ok {
		return fmt.Errorf("value %#v (%T) does not fit: want %s", v, v, want)
	}
	return nil
}

// outValueFits checks an output value against its CIM type as the
// executor converts it (winhost.Instance): null always; strings for
// strings and 64-bit integers; int64 for smaller integers (in range);
// bool; []any for arrays; an Instance for an object.
func outValueFits(cimType string, v any) error {
	if v == nil {
		return nil
	}
	if strings.HasSuffix(cimType, "[]") {
		if _, ok := v.([]any); !ok {
			return fmt.Errorf("value %#v (%T) does not fit: want []any", v, v)
		}
		return nil
	}
	var ok bool
	switch cimType {
	case "string", "uint64", "sint64", "int64", "datetime":
		_, ok = v.(string)
	case "bool", "boolean":
		_, ok = v.(bool)
	case "uint8", "byte", "sint8", "int8", "uint16", "sint16", "int16", "uint32", "sint32", "int32":
		_, ok = v.(int64)
	default: // an object of a class
		switch v.(type) {
		case winhost.Instance, *winhost.Instance:
			ok = true
		}
	}
	if !ok {
		return fmt.Errorf("value %#v (%T) is not what the executor makes of a %s", v, v, cimType)
	}
	return nil
}

// literalFits checks a WQL literal against the Go type of the property it
// is compared with.
func literalFits(goType string, lit any) error {
	switch goType {
	case "string":
		if _, ok := lit.(string); ok {
			return nil
		}
	case "bool":
		if _, ok := lit.(bool); ok {
			return nil
		}
	case "uint64", "int64":
		switch lit.(type) {
		case int64, string:
			return nil
		}
	case "uint8", "byte", "uint16", "uint32", "int8", "int16", "int32", "int":
		if n, ok := lit.(int64); ok {
			if err := intInRange(goType, n); err != nil {
				return err
			}
			return nil
		}
	default:
		return fmt.Errorf("a %s property cannot be compared in WQL", goType)
	}
	return fmt.Errorf("literal %#v does not fit a %s property", lit, goType)
}

func intInRange(goType string, n int64) error {
	lo, hi := int64(0), int64(0)
	switch goType {
	case "uint8", "byte":
		hi = 1<<8 - 1
	case "uint16":
		hi = 1<<16 - 1
	case "uint32":
		hi = 1<<32 - 1
	case "int8":
		lo, hi = -1<<7, 1<<7-1
	case "int16":
		lo, hi = -1<<15, 1<<15-1
	case "int32", "int":
		lo, hi = -1<<31, 1<<31-1
	}
	if n < lo || n > hi {
		return fmt.Errorf("literal %d out of range for a %s property", n, goType)
	}
	return nil
}
