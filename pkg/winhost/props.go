package winhost

import (
	"fmt"
	"strconv"
)

// PropError is a property that is missing or has a type the parser cannot
// read. It means the provider answered something the plugin does not
// understand, so it is reported, never guessed around.
type PropError struct {
	Class, Prop string
	Got         any
	// Absent: the object has no such property at all (as opposed to a
	// null value).
	Absent bool
}

func (e *PropError) Error() string {
	if e.Absent {
		return fmt.Sprintf("%s has no property %s", e.Class, e.Prop)
	}
	if e.Got == nil {
		return fmt.Sprintf("%s.%s is missing", e.Class, e.Prop)
	}
	return fmt.Sprintf("%s.%s has unexpected value %v (%T)", e.Class, e.Prop, e.Got, e.Got)
}

// Props reads typed values from an Instance's properties (or a Result's
// output parameters), remembering the first error.
//
// A property that is null reads as the zero value (or fails, for the
// Required readers). A property the object does not have at all is always
// an error (PropError.Absent): the executor hands over every property of
// an object and every output parameter of a method, null or not (WMI
// objects carry their class's whole layout), so an absent name means the
// plugin reads something the class does not define — a misspelling or a
// property of another Windows version — which is reported, never read as
// null. It is also what makes the WMI schema test cover reads: a property
// read must be in the scripted reply, and the reply is checked against the
// class. An object with no properties at all (a method that returned no
// output object) reads as all null.
//
// Usage:
//
//	p := PropsOf(inst)
//	n := p.Uint32("Number")
//	size := p.Uint64("Size")
//	if err := p.Err(); err != nil { ... }
type Props struct {
	class string
	m     map[string]any
	err   error
}

// PropsOf reads an instance.
func PropsOf(in Instance) *Props { return &Props{class: in.Class, m: in.Props} }

// OutOf reads a method's output parameters.
func OutOf(class, method string, r Result) *Props {
	return &Props{class: class + "." + method, m: r.Out}
}

// Err returns the first error met.
func (p *Props) Err() error { return p.err }

func (p *Props) fail(prop string, got any) {
	if p.err == nil {
		p.err = &PropError{Class: p.class, Prop: prop, Got: got}
	}
}

// get returns the value of prop, recording an error when the object has
// no such property.
func (p *Props) get(prop string) any {
	v, ok := p.m[prop]
	if !ok && p.m != nil {
		if p.err == nil {
			p.err = &PropError{Class: p.class, Prop: prop, Absent: true}
		}
	}
	return v
}

// String reads a string property; a null property reads as "".
func (p *Props) String(prop string) string {
	switch v := p.get(prop).(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		p.fail(prop, v)
		return ""
	}
}

// RequiredString reads a string property that must be present.
func (p *Props) RequiredString(prop string) string {
	if p.get(prop) == nil {
		p.fail(prop, nil)
		return ""
	}
	return p.String(prop)
}

// Bool reads a boolean property; null reads as false.
func (p *Props) Bool(prop string) bool {
	switch v := p.get(prop).(type) {
	case nil:
		return false
	case bool:
		return v
	default:
		p.fail(prop, v)
		return false
	}
}

// Uint64 reads an unsigned integer. CIM uint64 values arrive as decimal
// strings through IDispatch ("Numbers (WMI)" on learn.microsoft.com:
// Automation has no 64-bit integer); smaller integers arrive as
// int64, the one integer type the executor produces (Instance). Null reads
// as 0.
func (p *Props) Uint64(prop string) uint64 {
	switch v := p.get(prop).(type) {
	case nil:
		return 0
	case string:
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			p.fail(prop, v)
			return 0
		}
		return n
	case int64:
		if v < 0 {
			p.fail(prop, v)
			return 0
		}
		return uint64(v)
	default:
		p.fail(prop, v)
		return 0
	}
}

// Uint32 reads an unsigned 32-bit integer (range-checked).
func (p *Props) Uint32(prop string) uint32 {
	n := p.Uint64(prop)
	if n > 1<<32-1 {
		p.fail(prop, p.m[prop])
		return 0
	}
	return uint32(n)
}

// Uint16 reads an unsigned 16-bit integer (range-checked).
func (p *Props) Uint16(prop string) uint16 {
	n := p.Uint64(prop)
	if n > 1<<16-1 {
		p.fail(prop, p.m[prop])
		return 0
	}
	return uint16(n)
}

// Strings reads a string array (arrays arrive as []any); null reads as nil.
func (p *Props) Strings(prop string) []string {
	switch v := p.get(prop).(type) {
	case nil:
		return nil
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				p.fail(prop, v)
				return nil
			}
			out = append(out, s)
		}
		return out
	default:
		p.fail(prop, v)
		return nil
	}
}

// Bytes reads a uint8 array (arrays arrive as []any of int64); null reads
// as nil.
func (p *Props) Bytes(prop string) []byte {
	switch v := p.get(prop).(type) {
	case nil:
		return nil
	case []any:
		out := make([]byte, 0, len(v))
		for _, e := range v {
			n, ok := e.(int64)
			if !ok || n < 0 || n > 255 {
				p.fail(prop, v)
				return nil
			}
			out = append(out, byte(n))
		}
		return out
	default:
		p.fail(prop, v)
		return nil
	}
}

// RequiredBool reads a boolean property that must be present.
func (p *Props) RequiredBool(prop string) bool {
	if p.get(prop) == nil {
		p.fail(prop, nil)
		return false
	}
	return p.Bool(prop)
}

// RequiredUint64 reads an unsigned integer that must be present.
func (p *Props) RequiredUint64(prop string) uint64 {
	if p.get(prop) == nil {
		p.fail(prop, nil)
		return 0
	}
	return p.Uint64(prop)
}

// RequiredUint32 reads an unsigned 32-bit integer that must be present.
func (p *Props) RequiredUint32(prop string) uint32 {
	if p.get(prop) == nil {
		p.fail(prop, nil)
		return 0
	}
	return p.Uint32(prop)
}

// RequiredUint16 reads an unsigned 16-bit integer that must be present.
func (p *Props) RequiredUint16(prop string) uint16 {
	if p.get(prop) == nil {
		p.fail(prop, nil)
		return 0
	}
	return p.Uint16(prop)
}

// TryInstance reads an optional embedded object (such as
// CreatediSCSISession): ok is false when the property is null or not an
// object (no error is recorded), and when the object has no such property
// (an error is recorded, see Props).
func (p *Props) TryInstance(prop string) (Instance, bool) {
	v, ok := p.get(prop).(Instance)
	return v, ok
}
