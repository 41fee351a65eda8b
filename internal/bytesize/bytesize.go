// Package bytesize parses byte counts written for people: "1073741824",
// "512Mi", "16Gi". The plugin's size flags (pkg/config) and the simulated
// host's setup file (pkg/sim) read sizes with it, so both take the same
// forms. Nothing else belongs here.
package bytesize

import (
	"errors"
	"strconv"
	"strings"
)

// suffixes are the binary multipliers Parse accepts.
var suffixes = []struct {
	suffix string
	mult   uint64
}{{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40}}

// Parse parses a positive byte count: "1073741824", or a number with a
// binary suffix, "512Mi", "16Gi" (Ki, Mi, Gi, Ti).
func Parse(v string) (uint64, error) {
	mult := uint64(1)
	for _, s := range suffixes {
		if n, ok := strings.CutSuffix(v, s.suffix); ok {
			v, mult = n, s.mult
			break
		}
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n == 0 || n > (1<<63)/mult {
		return 0, errors.New("want a positive byte count such as 1073741824 or 16Gi")
	}
	return n * mult, nil
}
