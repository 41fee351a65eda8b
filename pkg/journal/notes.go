package journal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/wincsi/csi-windows-node/internal/durable"
)

// notesDir is the sub-directory of the journal that holds notes.
const notesDir = "notes"

// note is one note as stored on disk.
type note struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Note returns the note stored under key.
func (j *Journal) Note(_ context.Context, key string) (string, bool, error) {
	j.mu.RLock()
	defer j.mu.RUnlock()
	v, ok := j.notes[key]
	return v, ok, nil
}

// Notes returns every note whose key starts with prefix, by key: what a
// backend recorded about the shared resources it made (for example the
// SMB global mappings), for the tools that look for resources nothing uses.
func (j *Journal) Notes(_ context.Context, prefix string) (map[string]string, error) {
	j.mu.RLock()
	defer j.mu.RUnlock()
	out := map[string]string{}
	for k, v := range j.notes {
		if strings.HasPrefix(k, prefix) {
			out[k] = v
		}
	}
	return out, nil
}

// PutNote stores value under key durably, replacing any earlier note. ctx
// is honoured as by Put.
func (j *Journal) PutNote(ctx context.Context, key, value string) error {
	if j.readOnly {
		return fmt.Errorf("write journal note %q: %w", key, ErrReadOnly)
	}
	if key == "" {
		return errors.New("journal note without key")
	}
	b, err := json.MarshalIndent(note{Key: key, Value: value}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode journal note %q: %w", key, err)
	}
	dir := filepath.Join(j.dir, notesDir)
	if err := j.ensureNotesDir(dir); err != nil {
		return err
	}
	unlock, err := j.lockFile(ctx, notesDir+"/"+fileName(key))
	if err != nil {
		return fmt.Errorf("write journal note %q: %w", key, err)
	}
	defer unlock()
	if err := durable.WriteFile(dir, fileName(key), b); err != nil {
		return fmt.Errorf("write journal note %q: %w", key, err)
	}
	j.mu.Lock()
	j.notes[key] = value
	j.mu.Unlock()
	return nil
}

// DeleteNote removes the note under key durably; a missing note is not an
// error. ctx is honoured as by Put.
func (j *Journal) DeleteNote(ctx context.Context, key string) error {
	if j.readOnly {
		return fmt.Errorf("remove journal note %q: %w", key, ErrReadOnly)
	}
	unlock, err := j.lockFile(ctx, notesDir+"/"+fileName(key))
	if err != nil {
		return fmt.Errorf("remove journal note %q: %w", key, err)
	}
	defer unlock()
	dir := filepath.Join(j.dir, notesDir)
	err = durable.Remove(dir, fileName(key))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove journal note %q: %w", key, err)
	}
	j.mu.Lock()
	delete(j.notes, key)
	j.mu.Unlock()
	if err != nil {
		return nil // it was not there
	}
	if err := durable.SyncDir(dir); err != nil {
		return fmt.Errorf("sync journal notes directory: %w", err)
	}
	return nil
}

// ensureNotesDir creates the notes directory on first use and makes its
// creation durable.
func (j *Journal) ensureNotesDir(dir string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.notesReady {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create journal notes directory %s: %w", dir, err)
	}
	if err := durable.SyncDir(j.dir); err != nil {
		return fmt.Errorf("sync journal directory: %w", err)
	}
	j.notesReady = true
	return nil
}

// loadNotes reads <dir>/notes when it exists. Leftover temporary files from
// a crash are removed (unless readOnly); an unreadable note fails, like an
// unreadable entry, rather than being silently dropped.
func (j *Journal) loadNotes() (map[string]string, bool, error) {
	nd := filepath.Join(j.dir, notesDir)
	if _, err := os.Stat(nd); errors.Is(err, os.ErrNotExist) {
		return map[string]string{}, false, nil
	}
	notes := map[string]string{}
	err := j.loadFiles(nd, nil, func(p, name string, b []byte) error {
		var n note
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("decode journal note %s: %w", p, err)
		}
		if n.Key == "" || fileName(n.Key) != name {
			return fmt.Errorf("journal note %s does not match its key", p)
		}
		notes[n.Key] = n.Value
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return notes, true, nil
}
