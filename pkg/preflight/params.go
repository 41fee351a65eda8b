package preflight

import (
	"fmt"
	"strconv"
)

// Params returns what a recording's header keeps of a run: enough to run
// the same checks again over the recording (ConfigFromParams); fix says
// whether Fix ran first.
func (c Config) Params(fix bool) map[string]string {
	return map[string]string{
		"kubeletDir": c.KubeletDir, "stateDir": c.StateDir,
		"smb": strconv.FormatBool(c.SMB), "iscsi": strconv.FormatBool(c.ISCSI), "fix": strconv.FormatBool(fix),
	}
}

// ConfigFromParams returns the configuration Params describes, and
// whether Fix ran first.
func ConfigFromParams(p map[string]string) (Config, bool, error) {
	c := Config{KubeletDir: p["kubeletDir"], StateDir: p["stateDir"]}
	var fix bool
	for key, into := range map[string]*bool{"smb": &c.SMB, "iscsi": &c.ISCSI, "fix": &fix} {
		b, err := strconv.ParseBool(p[key])
		if err != nil {
			return Config{}, false, fmt.Errorf("recorded parameter %s=%q: %w", key, p[key], err)
		}
		*into = b
	}
	if c.KubeletDir == "" {
		return Config{}, false, fmt.Errorf("recorded parameters name no kubeletDir")
	}
	return c, fix, nil
}

// Outcome is what a recording keeps of a report to compare a replay with:
// each check, its result and what it found.
func (r Report) Outcome() []string {
	out := make([]string, 0, len(r.Findings))
	for _, f := range r.Findings {
		out = append(out, f.Check+": "+string(f.Result)+": "+f.Detail)
	}
	return out
}
