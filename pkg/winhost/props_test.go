package winhost

import (
	"errors"
	"reflect"
	"testing"
)

// Values as the executor converts VARIANTs (executor.go): CIM uint64 as a
// decimal string ("Numbers (WMI)"), other integers as int64, NULL as nil.
func TestPropsReading(t *testing.T) {
	in := Instance{Class: "MSFT_Disk", Props: map[string]any{
		"Size":      "18446744073709551615",
		"Number":    int64(7),
		"Neg":       int64(-1),
		"Big":       int64(1 << 40),
		"U16":       int64(65535),
		"Null":      nil,
		"Name":      "Msft Virtual Disk",
		"Flag":      true,
		"Paths":     []any{`C:\a\`, `\\?\Volume{x}\`},
		"BadPaths":  []any{"a", int64(1)},
		"Embedded":  Instance{Class: "MSFT_Partition"},
		"NotNumber": "12 GB",
	}}
	tests := []struct {
		name string
		read func(p *Props) any
		want any
		prop string // the property the recorded error names; "" for none
	}{
		{"uint64 from string", func(p *Props) any { return p.Uint64("Size") }, uint64(1<<64 - 1), ""},
		{"uint32 from int64", func(p *Props) any { return p.Uint32("Number") }, uint32(7), ""},
		{"uint32 out of range", func(p *Props) any { return p.Uint32("Big") }, uint32(0), "Big"},
		{"uint16", func(p *Props) any { return p.Uint16("U16") }, uint16(65535), ""},
		{"uint16 out of range", func(p *Props) any { return p.Uint16("Number") + p.Uint16("Big") }, uint16(7), "Big"},
		{"negative", func(p *Props) any { return p.Uint64("Neg") }, uint64(0), "Neg"},
		{"not a number", func(p *Props) any { return p.Uint64("NotNumber") }, uint64(0), "NotNumber"},
		{"bool of a string", func(p *Props) any { return p.Bool("Name") }, false, "Name"},
		{"string of a bool", func(p *Props) any { return p.String("Flag") }, "", "Flag"},
		{"null reads as zero", func(p *Props) any { return p.Uint64("Null") }, uint64(0), ""},
		{"required missing", func(p *Props) any { return p.RequiredUint64("Missing") }, uint64(0), "Missing"},
		{"required bool null", func(p *Props) any { return p.RequiredBool("Null") }, false, "Null"},
		{"required uint32", func(p *Props) any { return p.RequiredUint32("Number") }, uint32(7), ""},
		{"required uint32 missing", func(p *Props) any { return p.RequiredUint32("Missing") }, uint32(0), "Missing"},
		{"required uint16 missing", func(p *Props) any { return p.RequiredUint16("Missing") }, uint16(0), "Missing"},
		{"required string", func(p *Props) any { return p.RequiredString("Name") }, "Msft Virtual Disk", ""},
		{"strings from []any", func(p *Props) any { return p.Strings("Paths") }, []string{`C:\a\`, `\\?\Volume{x}\`}, ""},
		{"strings mixed", func(p *Props) any { return p.Strings("BadPaths") }, []string(nil), "BadPaths"},
		{"strings of a scalar", func(p *Props) any { return p.Strings("Name") }, []string(nil), "Name"},
		{"strings null", func(p *Props) any { return p.Strings("Null") }, []string(nil), ""},
		{"try instance", func(p *Props) any { i, ok := p.TryInstance("Embedded"); return ok && i.Class == "MSFT_Partition" }, true, ""},
		{"try instance of a string", func(p *Props) any { _, ok := p.TryInstance("Name"); return ok }, false, ""},
		{"try instance null", func(p *Props) any { _, ok := p.TryInstance("Null"); return ok }, false, ""},
		// A property the object does not have is an error, whichever reader
		// asks (the executor hands over every property, null or not).
		{"absent string", func(p *Props) any { return p.String("Naem") }, "", "Naem"},
		{"absent bool", func(p *Props) any { return p.Bool("Flg") }, false, "Flg"},
		{"absent uint16", func(p *Props) any { return p.Uint16("U61") }, uint16(0), "U61"},
		{"absent strings", func(p *Props) any { return p.Strings("Pahts") }, []string(nil), "Pahts"},
		{"absent instance", func(p *Props) any { _, ok := p.TryInstance("Embedde"); return ok }, false, "Embedde"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := PropsOf(in)
			if got := tt.read(p); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %#v, want %#v", got, tt.want)
			}
			var pe *PropError
			if tt.prop == "" {
				if p.Err() != nil {
					t.Fatalf("unexpected error %v", p.Err())
				}
				return
			}
			if !errors.As(p.Err(), &pe) || pe.Prop != tt.prop || pe.Class != "MSFT_Disk" {
				t.Fatalf("err = %v, want PropError on %s", p.Err(), tt.prop)
			}
			if pe.Error() == "" {
				t.Fatal("empty message")
			}
		})
	}
}

// An absent property is told apart from a null one in the error.
func TestPropsAbsent(t *testing.T) {
	p := PropsOf(Instance{Class: "MSFT_Volume", Props: map[string]any{"Size": nil}})
	p.Uint64("Size")
	if p.Err() != nil {
		t.Fatalf("null: %v", p.Err())
	}
	p.Uint32("AllocationUnitSzie")
	var pe *PropError
	if !errors.As(p.Err(), &pe) || !pe.Absent || pe.Error() != "MSFT_Volume has no property AllocationUnitSzie" {
		t.Fatalf("err = %v", p.Err())
	}
	// A method that returned no output object reads as all null.
	out := OutOf("MSFT_Disk", "CreatePartition", Result{})
	if _, ok := out.TryInstance("CreatedPartition"); ok || out.Err() != nil {
		t.Fatalf("no outputs: ok=%t err=%v", ok, out.Err())
	}
}

func TestOutOfNamesTheMethod(t *testing.T) {
	p := OutOf("MSFT_Partition", "GetSupportedSize", Result{Out: map[string]any{}})
	p.RequiredUint64("SizeMax")
	var pe *PropError
	if !errors.As(p.Err(), &pe) || pe.Class != "MSFT_Partition.GetSupportedSize" {
		t.Fatalf("err = %v", p.Err())
	}
}
