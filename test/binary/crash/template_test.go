package crash

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A template is a starting point prepared once in library mode (prepare,
// prepareSweep) that every run starting from it copies: the learning runs
// and each of the hundreds of crash cases of a scenario. Preparing it again
// for each run would cost more than the run itself (in the test process,
// under the race detector: every host call and journal write is a durable
// file write), and would give every run the same state anyway.
type template struct {
	base  string            // where it was prepared
	files map[string]string // prepare's files written through publications, below base
}

// newTemplate runs prep on a directory of t's, removed once t and its
// subtests are done.
func newTemplate(t testing.TB, prep func(base string) map[string]string) template {
	t.Helper()
	base := t.TempDir()
	return template{base: base, files: prep(base)}
}

// copyTo copies the template below base, which must exist, as if it had
// been prepared there: every path below the template's base that a copied
// file or link names (the journal's staging paths, the simulated host's
// mount points and links) names the same place below base. It returns the
// template's files, below base.
func (tm template) copyTo(t testing.TB, base string) map[string]string {
	t.Helper()
	from, to := tm.base+string(filepath.Separator), base+string(filepath.Separator)
	err := filepath.WalkDir(tm.base, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == tm.base {
			return err
		}
		dst := to + strings.TrimPrefix(p, from)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.Mkdir(dst, info.Mode().Perm())
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if strings.HasPrefix(target, from) {
				target = to + strings.TrimPrefix(target, from)
			} else if strings.Contains(target, tm.base) {
				return fmt.Errorf("%s links to %s, in a form the copy cannot move", p, target)
			}
			return os.Symlink(target, dst)
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b = bytes.ReplaceAll(b, []byte(from), []byte(to))
			if bytes.Contains(b, []byte(tm.base)) {
				return fmt.Errorf("%s names the template's directory in a form the copy cannot move", p)
			}
			return os.WriteFile(dst, b, info.Mode().Perm())
		default:
			return fmt.Errorf("%s: a %s, which a template cannot hold", p, d.Type())
		}
	})
	if err != nil {
		t.Fatalf("copy the prepared node: %v", err)
	}
	files := map[string]string{}
	for id, f := range tm.files {
		files[id] = to + strings.TrimPrefix(f, from)
	}
	return files
}
