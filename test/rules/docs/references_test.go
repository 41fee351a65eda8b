package docs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The repository must stand alone: a reader of any file can follow every
// reference it makes without files that are not in the repository.
//
// The names below are built from parts so that this file does not match
// its own patterns.

// privateNotes are research notes kept outside the repository while it
// was written; the repository cites the public sources they summarise.
var privateNotes = regexp.MustCompile(`\b(csi-proxy|windows-drivers|tools-and-libs|aesthetics)` + `\.md\b`)

// outsidePaths are paths that point into the machine the repository was
// written on rather than into the repository: the notes' directory and
// absolute home or work directories.
var outsidePaths = regexp.MustCompile(`\.\./shared\b|shared/` + `reference\b|(^|[\s"'` + "`" + `(=:,\[])/(work|home|root|Users)/`)

// mayReferOutside reports whether line may hold a match of privateNotes
// or outsidePaths: every match holds ".md", "shared" or one of the
// directories after a slash. The patterns run only on such lines: run on
// every line of the repository (under the race detector) they cost
// seconds. A pattern that gains a match without these strings must be
// added here.
func mayReferOutside(line string) bool {
	if strings.Contains(line, ".md") || strings.Contains(line, "shared") {
		return true
	}
	for _, dir := range []string{"work", "home", "root", "Users"} {
		if strings.Contains(line, "/"+dir+"/") {
			return true
		}
	}
	return false
}

// markdownLink matches an inline link or image target and a reference
// definition.
var markdownLink = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)|^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)`)

// scheme matches a link target that is a URL (https:, mailto:, ...).
var scheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

// repoPath matches a path in the repository named in prose (a comment, a
// manifest, a document): a top-level directory, then a file with an
// extension. Group 1 is the path.
var repoPath = regexp.MustCompile(`(?:^|[^A-Za-z0-9_./@-])((?:\.github|\.ci|cmd|deploy|docs|hack|internal|pkg|test)/[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.(?:ya?ml|md|go|sh|json|txt|tpl|mod))\b`)

// upstream matches a citation of another repository's file, whose paths
// are that repository's: owner/repo@commit, owner/repo v1.2, owner/repo at
// a tag, a quoted path at a commit ("owner/repo `path` at 02910b74"), a
// pull request or issue number.
var upstream = regexp.MustCompile("[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+`?(?:@[0-9A-Za-z.]+|\\s+v\\d+\\.\\d+|\\s+at\\s)|PR\\s*#\\d+|#\\d{2,}\\b")

// citeWindow is how many lines before and after a path mention are read
// for the citation that makes it another repository's path.
const citeWindow = 2

// finding is one reference to something outside the repository.
type finding struct {
	file string // slash-separated, relative to the root
	line int
	// kind is "private note", "outside path", "link outside", "broken
	// link" or "missing file" (a repository path named in prose that does
	// not exist).
	kind string
	text string
}

func (f finding) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", f.file, f.line, f.kind, f.text)
}

// scanReferences reads the files (slash-separated paths relative to root)
// and returns every reference to a file outside the repository. Binary
// files (a NUL byte in their first 8000 bytes) are skipped.
func scanReferences(root string, files []string) ([]finding, error) {
	var out []finding
	for _, name := range files {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the work tree but still in the index
		}
		if err != nil {
			return nil, err
		}
		if bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0 {
			continue
		}
		isMarkdown := strings.HasSuffix(strings.ToLower(name), ".md")
		var lines []string
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for i, line := range lines {
			n := i + 1
			if mayReferOutside(line) {
				for _, m := range privateNotes.FindAllString(line, -1) {
					out = append(out, finding{name, n, "private note", m})
				}
				for _, m := range outsidePaths.FindAllString(line, -1) {
					out = append(out, finding{name, n, "outside path", strings.TrimSpace(m)})
				}
			}
			if isMarkdown && strings.Contains(line, "]") {
				out = append(out, checkLinks(root, name, n, line)...)
			}
			if !strings.HasSuffix(name, ".go") && strings.Contains(line, "/") {
				out = append(out, checkPaths(root, name, lines, i)...)
			}
		}
	}
	return out, nil
}

// checkPaths checks the repository paths line i of a file names in prose
// ("see deploy/examples/csidriver-example.yaml"): each must exist, unless
// a citation of another repository next to it makes it that repository's
// path. Go files are left out: their comments cite other repositories'
// files at length, in forms (a citation a paragraph away, split across
// lines) a line window cannot tell from the repository's own; manifests,
// documents and scripts are what users follow.
func checkPaths(root, name string, lines []string, i int) []finding {
	var out []finding
	for _, m := range repoPath.FindAllStringSubmatch(lines[i], -1) {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(m[1]))); err == nil {
			continue
		}
		cited := false
		for j := max(0, i-citeWindow); j <= min(len(lines)-1, i+citeWindow) && !cited; j++ {
			cited = upstream.MatchString(lines[j])
		}
		if !cited {
			out = append(out, finding{name, i + 1, "missing file", m[1]})
		}
	}
	return out
}

// checkLinks checks the relative link targets of one Markdown line: each
// must resolve inside root and name a file or directory that exists.
func checkLinks(root, name string, n int, line string) []finding {
	var out []finding
	for _, m := range markdownLink.FindAllStringSubmatch(line, -1) {
		target := m[1] + m[2]
		if target == "" || strings.HasPrefix(target, "#") || scheme.MatchString(target) {
			continue
		}
		if i := strings.IndexAny(target, "#?"); i >= 0 {
			target = target[:i]
		}
		var rel string
		if strings.HasPrefix(target, "/") {
			rel = strings.TrimPrefix(target, "/") // repository-absolute, as GitHub renders it
		} else {
			rel = filepath.ToSlash(filepath.Join(filepath.Dir(filepath.FromSlash(name)), filepath.FromSlash(target)))
		}
		if rel == ".." || strings.HasPrefix(rel, "../") {
			out = append(out, finding{name, n, "link outside", m[0]})
			continue
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
			out = append(out, finding{name, n, "broken link", m[0]})
		}
	}
	return out
}

// repositoryFiles lists the files git tracks under root, or, without git,
// every file under root except .git, _output and .bin.
func repositoryFiles(t *testing.T, root string) []string {
	t.Helper()
	if git, err := exec.LookPath("git"); err == nil {
		cmd := exec.Command(git, "ls-files", "-z")
		cmd.Dir = root
		if out, err := cmd.Output(); err == nil {
			var files []string
			for f := range strings.SplitSeq(strings.TrimRight(string(out), "\x00"), "\x00") {
				if f != "" {
					files = append(files, f)
				}
			}
			if len(files) > 0 {
				return files
			}
		}
	}
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch d.Name() {
		case ".git", "_output", ".bin":
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("list the repository's files: %v", err)
	}
	return files
}

// TestNoReferenceOutsideRepository fails when a tracked file of the
// repository (code, docs, manifests, scripts, the Makefile) cites a
// private research note, a path on the machine it was written on, or a
// Markdown link that leaves the repository or names a missing file, or
// when a manifest, document or script names a repository file that does
// not exist.
func TestNoReferenceOutsideRepository(t *testing.T) {
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root %s has no go.mod: %v", root, err)
	}
	files := repositoryFiles(t, root)
	if !slices.Contains(files, "README.md") || !slices.Contains(files, "docs/windows.md") {
		t.Fatalf("the file list of %s lacks README.md or docs/windows.md: %d files", root, len(files))
	}
	found, err := scanReferences(root, files)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		if f.kind == "missing file" {
			t.Errorf("%s (name a file that exists, or cite the other repository it belongs to next to it: owner/repo@commit)", f)
			continue
		}
		t.Errorf("%s (cite the public source itself, or state the fact in docs/ and cite that)", f)
	}
}

// TestScanFindsPlantedReferences proves that the scan catches each kind of
// reference it looks for, and leaves alone what only looks like one.
func TestScanFindsPlantedReferences(t *testing.T) {
	root := t.TempDir()
	note := "csi-proxy" + ".md"
	files := map[string]string{
		"docs/target.md": "# Target\n",
		"pkg/a/a.go":     "package a\n\n// The page 83 shape (" + note + " §2.2).\n",
		"pkg/b/b.go":     "package b\n\n// See windows-drivers" + ".md.\n",
		"deploy/c.yaml":  "# notes: ../sha" + "red/reference/tools-and-libs" + ".md\n",
		"scripts/d.sh":   "cat /work" + "/shared/x\n",
		"docs/e.md":      "Read [the notes](../../outside" + ".md) first.\n",
		"docs/f.md":      "[ref]: ../../../elsewhere/x" + ".md\n",
		"docs/g.md":      "See [gone](missing" + ".md#section).\n",
		"README.md": "Fine: [windows](docs/target.md#disks), [top](#top), " +
			"[web](https://learn.microsoft.com/x), RFC 3720 §8.2.1, csi-proxy PR #364, " +
			"kubelet/work/dir, C:\\var\\lib\\kubelet, [root](/docs/target.md).\n",
		"testdata/blob.bin": "\x00" + note,
		"deploy/h.yaml":     "# the CSIDriver (deploy/examples/gone" + ".yaml)\n",
		"deploy/i.yaml": "# its deploy/upstream" + ".yaml sets attachRequired\n" +
			"# (kubernetes-csi/csi-driver-smb@95c6968); see docs/target.md.\n",
		"docs/j.md": "kubelet's monitor (kubernetes/kubernetes `pkg/kubelet/monitor" + ".go` at 02910b74b5ea)\n",
	}
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	found, err := scanReferences(root, names)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, f := range found {
		got[f.file] = append(got[f.file], f.kind)
	}
	tests := []struct {
		file string
		want []string
	}{
		{"pkg/a/a.go", []string{"private note"}},
		{"pkg/b/b.go", []string{"private note"}},
		{"deploy/c.yaml", []string{"private note", "outside path"}},
		{"scripts/d.sh", []string{"outside path"}},
		{"docs/e.md", []string{"link outside"}},
		{"docs/f.md", []string{"link outside"}},
		{"docs/g.md", []string{"broken link"}},
		{"README.md", nil},
		{"docs/target.md", nil},
		{"testdata/blob.bin", nil},
		{"deploy/h.yaml", []string{"missing file"}},
		{"deploy/i.yaml", nil},
		{"docs/j.md", nil},
	}
	for _, tt := range tests {
		if !slices.Equal(got[tt.file], tt.want) {
			t.Errorf("%s: found %q, want %q", tt.file, got[tt.file], tt.want)
		}
	}
	if len(got) != 8 {
		t.Errorf("findings in %d files, want 8: %v", len(got), found)
	}
}
