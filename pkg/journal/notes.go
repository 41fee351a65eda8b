package journal

import (
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

// GetNote returns the note stored under key.
func (j *Journal) GetNote(key string) (string, bool) {
	j.mu.RLock()
	defer j.mu.RUnlock()
	v, ok := j.notes[key]
	return v, ok
}

// PutNote stores value under key durably, replacing any earlier note.
func (j *Journal) PutNote(key, value string) error {
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
	unlock := j.lockFile(notesDir + "/" + fileName(key))
	defer unlock()
	if err := durable.WriteFile(dir, fileName(key), b); err != nil {
		return fmt.Errorf("write journal note %q: %w", key, err)
	}
	j.mu.Lock()
	if j.notes == nil {
		j.notes = make(map[string]string)
	}
	j.notes[key] = value
	j.mu.Unlock()
	return nil
}

// DeleteNote removes the note under key durably; a missing note is not an
// error.
func (j *Journal) DeleteNote(key string) error {
	unlock := j.lockFile(notesDir + "/" + fileName(key))
	defer unlock()
	dir := filepath.Join(j.dir, notesDir)
	err := os.Remove(filepath.Join(dir, fileName(key)))
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
// creation durable. The caller holds j.mu.
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
// a crash are removed; an unreadable note fails, like an unreadable entry,
// rather than being silently dropped.
func loadNotes(dir string) (map[string]string, bool, error) {
	nd := filepath.Join(dir, notesDir)
	ents, err := os.ReadDir(nd)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]string{}, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read journal notes directory %s: %w", nd, err)
	}
	notes := make(map[string]string, len(ents))
	for _, de := range ents {
		name := de.Name()
		p := filepath.Join(nd, name)
		switch {
		case strings.HasSuffix(name, ".tmp"):
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, false, fmt.Errorf("remove leftover %s: %w", p, err)
			}
		case strings.HasSuffix(name, ".json"):
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, false, fmt.Errorf("read journal note %s: %w", p, err)
			}
			var n note
			if err := json.Unmarshal(b, &n); err != nil {
				return nil, false, fmt.Errorf("decode journal note %s: %w", p, err)
			}
			if n.Key == "" || fileName(n.Key) != name {
				return nil, false, fmt.Errorf("journal note %s does not match its key", p)
			}
			notes[n.Key] = n.Value
		}
	}
	return notes, true, nil
}
