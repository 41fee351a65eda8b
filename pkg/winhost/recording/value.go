package recording

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
)

// Value is one Go value that crossed the executor, tagged with its type:
// JSON alone cannot tell an int64 from a float64 or from a decimal string,
// and the replay must hand back exactly what the executor did (the
// scripted executor compares Go types). 64-bit integers are written as
// decimal strings so that no value above 2^53 loses precision; CIM uint64
// properties arrive from WMI as strings and stay "str".
//
// Tags: str, bool, i64, u64, u8, i8, i16, u16, i32, u32, f32, f64, null,
// arr (of Values), strs (a []string), bytes (base64), obj (an Instance),
// secret (a value that is never written: a host.Secret or a sensitive
// method parameter), token (host.Token), service (host.Service), start
// (host.StartType), space ([3]uint64 of GetDiskFreeSpaceEx), account
// (LookupAccountName's SID and SID_NAME_USE), portal (winhost.PortalW),
// logins (ReportIScsiPersistentLogins' count and fixed part).
type Value struct {
	T string          `json:"t"`
	V json.RawMessage `json:"v,omitempty"`
}

// Account is what LookupAccountName answers: the SID in binary form and
// its SID_NAME_USE.
type Account struct {
	SID []byte `json:"sid"`
	Use uint32 `json:"use"`
}

// PersistentLogins is what ReportIScsiPersistentLogins answers: the
// number of records and the fixed part of the buffer.
type PersistentLogins struct {
	Count uint32 `json:"count"`
	Fixed []byte `json:"fixed"`
}

// Object is an Instance in a recording.
type Object struct {
	Path  string           `json:"path,omitempty"`
	Class string           `json:"class"`
	Props map[string]Value `json:"props"`
}

func raw(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only strings, numbers, bools and these structs are marshalled
	}
	return b
}

// Encode tags a value. A host.Secret is recorded as "secret" without its
// value.
func Encode(v any) (Value, error) {
	switch x := v.(type) {
	case nil:
		return Value{T: "null"}, nil
	case string:
		return Value{T: "str", V: raw(x)}, nil
	case bool:
		return Value{T: "bool", V: raw(x)}, nil
	case int64:
		return Value{T: "i64", V: raw(strconv.FormatInt(x, 10))}, nil
	case uint64:
		return Value{T: "u64", V: raw(strconv.FormatUint(x, 10))}, nil
	case uint8:
		return Value{T: "u8", V: raw(x)}, nil
	case int8:
		return Value{T: "i8", V: raw(x)}, nil
	case int16:
		return Value{T: "i16", V: raw(x)}, nil
	case uint16:
		return Value{T: "u16", V: raw(x)}, nil
	case int32:
		return Value{T: "i32", V: raw(x)}, nil
	case uint32:
		return Value{T: "u32", V: raw(x)}, nil
	case float32:
		return Value{T: "f32", V: raw(x)}, nil
	case float64:
		return Value{T: "f64", V: raw(x)}, nil
	case []string:
		if x == nil {
			x = []string{}
		}
		return Value{T: "strs", V: raw(x)}, nil
	case []byte:
		return Value{T: "bytes", V: raw(base64.StdEncoding.EncodeToString(x))}, nil
	case []any:
		out := make([]Value, len(x))
		for i, e := range x {
			ev, err := Encode(e)
			if err != nil {
				return Value{}, err
			}
			out[i] = ev
		}
		return Value{T: "arr", V: raw(out)}, nil
	case winhost.Instance:
		o, err := encodeObject(x)
		if err != nil {
			return Value{}, err
		}
		return Value{T: "obj", V: raw(o)}, nil
	case *winhost.Instance:
		if x == nil {
			return Value{T: "null"}, nil
		}
		return Encode(*x)
	case host.Secret:
		return Value{T: "secret"}, nil
	case host.Token:
		return Value{T: "token", V: raw(x)}, nil
	case host.Service:
		return Value{T: "service", V: raw(x)}, nil
	case host.StartType:
		return Value{T: "start", V: raw(uint32(x))}, nil
	case Account:
		return Value{T: "account", V: raw(x)}, nil
	case PersistentLogins:
		return Value{T: "logins", V: raw(x)}, nil
	case winhost.PortalW:
		return Value{T: "portal", V: raw(x)}, nil
	case [3]uint64:
		return Value{T: "space", V: raw([3]string{strconv.FormatUint(x[0], 10), strconv.FormatUint(x[1], 10), strconv.FormatUint(x[2], 10)})}, nil
	}
	return Value{}, fmt.Errorf("recording: no encoding for a %T", v)
}

func encodeObject(in winhost.Instance) (Object, error) {
	o := Object{Path: in.Path, Class: in.Class, Props: make(map[string]Value, len(in.Props))}
	for _, k := range slices.Sorted(maps.Keys(in.Props)) {
		v, err := Encode(in.Props[k])
		if err != nil {
			return Object{}, fmt.Errorf("%s.%s: %w", in.Class, k, err)
		}
		o.Props[k] = v
	}
	return o, nil
}

// Decode returns the Go value a Value stands for. A "secret" decodes to
// Secret{}: the value was never written.
func Decode(v Value) (any, error) {
	var err error
	switch v.T {
	case "null":
		return nil, nil
	case "str":
		var s string
		err = json.Unmarshal(v.V, &s)
		return s, err
	case "bool":
		var b bool
		err = json.Unmarshal(v.V, &b)
		return b, err
	case "i64":
		var s string
		if err = json.Unmarshal(v.V, &s); err == nil {
			return strconv.ParseInt(s, 10, 64)
		}
	case "u64":
		var s string
		if err = json.Unmarshal(v.V, &s); err == nil {
			return strconv.ParseUint(s, 10, 64)
		}
	case "u8":
		var n uint8
		err = json.Unmarshal(v.V, &n)
		return n, err
	case "i8":
		var n int8
		err = json.Unmarshal(v.V, &n)
		return n, err
	case "i16":
		var n int16
		err = json.Unmarshal(v.V, &n)
		return n, err
	case "u16":
		var n uint16
		err = json.Unmarshal(v.V, &n)
		return n, err
	case "i32":
		var n int32
		err = json.Unmarshal(v.V, &n)
		return n, err
	case "u32":
		var n uint32
		err = json.Unmarshal(v.V, &n)
		return n, err
	case "f32":
		var n float32
		err = json.Unmarshal(v.V, &n)
		return n, err
	case "f64":
		var n float64
		err = json.Unmarshal(v.V, &n)
		return n, err
	case "strs":
		var ss []string
		err = json.Unmarshal(v.V, &ss)
		return ss, err
	case "bytes":
		var s string
		if err = json.Unmarshal(v.V, &s); err == nil {
			return base64.StdEncoding.DecodeString(s)
		}
	case "arr":
		var vs []Value
		if err = json.Unmarshal(v.V, &vs); err == nil {
			out := make([]any, len(vs))
			for i, e := range vs {
				if out[i], err = Decode(e); err != nil {
					return nil, err
				}
			}
			return out, nil
		}
	case "obj":
		var o Object
		if err = json.Unmarshal(v.V, &o); err == nil {
			return DecodeObject(o)
		}
	case "secret":
		return host.Secret{}, nil
	case "token":
		var t host.Token
		err = json.Unmarshal(v.V, &t)
		return t, err
	case "service":
		var s host.Service
		err = json.Unmarshal(v.V, &s)
		return s, err
	case "start":
		var n uint32
		err = json.Unmarshal(v.V, &n)
		return host.StartType(n), err
	case "account":
		var a Account
		err = json.Unmarshal(v.V, &a)
		return a, err
	case "logins":
		var l PersistentLogins
		err = json.Unmarshal(v.V, &l)
		return l, err
	case "portal":
		var p winhost.PortalW
		err = json.Unmarshal(v.V, &p)
		return p, err
	case "space":
		var ss [3]string
		if err = json.Unmarshal(v.V, &ss); err == nil {
			var out [3]uint64
			for i, s := range ss {
				if out[i], err = strconv.ParseUint(s, 10, 64); err != nil {
					return nil, err
				}
			}
			return out, nil
		}
	default:
		return nil, fmt.Errorf("recording: unknown value tag %q", v.T)
	}
	if err != nil {
		return nil, fmt.Errorf("recording: a %s value %s: %w", v.T, v.V, err)
	}
	return nil, nil
}

// DecodeObject returns the Instance an Object stands for.
func DecodeObject(o Object) (winhost.Instance, error) {
	in := winhost.Instance{Path: o.Path, Class: o.Class, Props: make(map[string]any, len(o.Props))}
	for k, v := range o.Props {
		d, err := Decode(v)
		if err != nil {
			return winhost.Instance{}, fmt.Errorf("%s.%s: %w", o.Class, k, err)
		}
		in.Props[k] = d
	}
	return in, nil
}
