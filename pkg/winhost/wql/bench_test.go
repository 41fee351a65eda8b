package wql

import "testing"

// BenchmarkQuote quotes what the Windows host quotes most: volume GUID
// paths and UNC paths, whose backslashes are all escaped.
func BenchmarkQuote(b *testing.B) {
	for _, c := range []struct{ name, v string }{
		{"volume", `\\?\Volume{5a3b2c1d-0000-4000-8000-123456789abc}\`},
		{"unc", `\\fileserver.example.com\share`},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Quote(c.v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
