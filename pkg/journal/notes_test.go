package journal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNotesSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := j.Note(ctx, "k"); ok {
		t.Fatal("note present in a new journal")
	}
	steps := []struct {
		name string
		do   func(*Journal) error
		want map[string]string // every note there should be
	}{
		{"put", func(j *Journal) error { return j.PutNote(ctx, `smb/mapping/\\srv\data`, `CORP\alice`) },
			map[string]string{`smb/mapping/\\srv\data`: `CORP\alice`}},
		{"put empty value", func(j *Journal) error { return j.PutNote(ctx, `smb/mapping/\\srv\anon`, "") },
			map[string]string{`smb/mapping/\\srv\data`: `CORP\alice`, `smb/mapping/\\srv\anon`: ""}},
		{"replace", func(j *Journal) error { return j.PutNote(ctx, `smb/mapping/\\srv\data`, "bob") },
			map[string]string{`smb/mapping/\\srv\data`: "bob", `smb/mapping/\\srv\anon`: ""}},
		{"delete", func(j *Journal) error { return j.DeleteNote(ctx, `smb/mapping/\\srv\anon`) },
			map[string]string{`smb/mapping/\\srv\data`: "bob"}},
		{"delete missing", func(j *Journal) error { return j.DeleteNote(ctx, "never") },
			map[string]string{`smb/mapping/\\srv\data`: "bob"}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if err := st.do(j); err != nil {
				t.Fatal(err)
			}
			reopened, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, jj := range []*Journal{j, reopened} {
				for k, v := range st.want {
					if got, ok, _ := jj.Note(ctx, k); !ok || got != v {
						t.Errorf("Note(%q) = %q, %v; want %q", k, got, ok, v)
					}
				}
				if n := len(jj.notes); n != len(st.want) {
					t.Errorf("%d notes, want %d", n, len(st.want))
				}
			}
			j = reopened
		})
	}
}

func TestNotesDoNotDisturbEntries(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Put(ctx, Entry{VolumeID: "v1", Backend: "smb", ResourceKey: `smb:\\srv\data`}); err != nil {
		t.Fatal(err)
	}
	// A note whose key equals a volume ID must not be read as an entry.
	if err := j.PutNote(ctx, "v1", "x"); err != nil {
		t.Fatal(err)
	}
	j2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := j2.List(ctx); len(got) != 1 || got[0].VolumeID != "v1" || got[0].Backend != "smb" {
		t.Fatalf("entries after reopen = %+v", got)
	}
	if v, ok, _ := j2.Note(ctx, "v1"); !ok || v != "x" {
		t.Fatalf("note after reopen = %q, %v", v, ok)
	}
}

func TestOpenNotesLeftoversAndCorruption(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		content string
		wantErr string // "" for success
	}{
		{"leftover temporary file is removed", "x.json.1.tmp", "partial", ""},
		{"corrupt note", fileName("k"), "{not json", "decode journal note"},
		{"note under another key's name", fileName("k"), `{"key":"other","value":"v"}`, "does not match"},
		{"note without key", fileName("k"), `{"value":"v"}`, "does not match"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			nd := filepath.Join(dir, notesDir)
			if err := os.MkdirAll(nd, 0o700); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(nd, tc.file)
			if err := os.WriteFile(p, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Open(dir)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if _, serr := os.Stat(p); !os.IsNotExist(serr) {
					t.Fatalf("leftover not removed: %v", serr)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Open error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestPutNoteRejectsEmptyKey(t *testing.T) {
	j, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := j.PutNote(ctx, "", "v"); err == nil {
		t.Fatal("empty key accepted")
	}
}

func TestNotesByPrefix(t *testing.T) {
	j, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{`smb/mapping/\\a\x`: "alice", `smb/mapping/\\b\y`: "", "iscsi/initiator/chap-secret": "{}"} {
		if err := j.PutNote(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	got, err := j.Notes(ctx, "smb/mapping/")
	if err != nil || len(got) != 2 || got[`smb/mapping/\\a\x`] != "alice" {
		t.Fatalf("Notes(smb/mapping/) = %v, %v", got, err)
	}
	got["x"] = "y"
	if again, _ := j.Notes(ctx, ""); len(again) != 3 {
		t.Fatalf("Notes(\"\") = %v; the caller's changes must not reach the journal", again)
	}
}
