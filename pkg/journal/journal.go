package journal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/wincsi/csi-windows-node/internal/durable"
	"github.com/wincsi/csi-windows-node/pkg/inflight"
)

// Entry is what the journal keeps about one staged volume.
type Entry struct {
	VolumeID    string `json:"volumeID"`
	StagingPath string `json:"stagingPath"`
	Backend     string `json:"backend"`
	// ResourceKey names the host resource shared with other volumes
	// (contract.Volume.ResourceKey); empty for disks.
	ResourceKey string `json:"resourceKey,omitempty"`
	// FsType and AccessMode are the capability the volume was staged
	// with, compared on a repeated NodeStageVolume.
	FsType     string `json:"fsType,omitempty"`
	AccessMode string `json:"accessMode,omitempty"`
	// Attrs holds backend-specific, non-secret facts (for example the
	// portals of an iSCSI volume).
	Attrs map[string]string `json:"attrs,omitempty"`
	// Staged is false while NodeStageVolume is in progress (or crashed),
	// true once it completed.
	Staged bool `json:"staged"`
}

// Journal is a directory of entries with an in-memory copy.
type Journal struct {
	dir   string
	files *inflight.KeyMutex // one writer per file
	mu    sync.RWMutex       // guards the in-memory copies only
	m     map[string]Entry

	notes      map[string]string // key -> value (notes.go)
	notesReady bool              // <dir>/notes exists
}

// Open loads the journal in dir, creating dir if needed. Leftover temporary
// files from a crash are removed; an unreadable entry fails Open, because
// silently dropping it could undercount the users of a shared resource.
func Open(dir string) (*Journal, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create journal directory %s: %w", dir, err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read journal directory %s: %w", dir, err)
	}
	j := &Journal{dir: dir, files: inflight.NewKeyMutex(), m: make(map[string]Entry)}
	if j.notes, j.notesReady, err = loadNotes(dir); err != nil {
		return nil, err
	}
	for _, de := range ents {
		name := de.Name()
		p := filepath.Join(dir, name)
		switch {
		case strings.HasSuffix(name, ".tmp"):
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("remove leftover %s: %w", p, err)
			}
		case strings.HasSuffix(name, ".json"):
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("read journal entry %s: %w", p, err)
			}
			var e Entry
			if err := json.Unmarshal(b, &e); err != nil {
				return nil, fmt.Errorf("decode journal entry %s: %w", p, err)
			}
			if e.VolumeID == "" || fileName(e.VolumeID) != name {
				return nil, fmt.Errorf("journal entry %s does not match its volume ID", p)
			}
			j.m[e.VolumeID] = e
		}
	}
	return j, nil
}

// Dir returns the journal's directory.
func (j *Journal) Dir() string { return j.dir }

// Get returns the entry of volumeID.
func (j *Journal) Get(volumeID string) (Entry, bool) {
	j.mu.RLock()
	defer j.mu.RUnlock()
	e, ok := j.m[volumeID]
	return e.clone(), ok
}

// List returns every entry, ordered by volume ID.
func (j *Journal) List() []Entry {
	j.mu.RLock()
	out := make([]Entry, 0, len(j.m))
	for _, e := range j.m {
		out = append(out, e.clone())
	}
	j.mu.RUnlock()
	sort.Slice(out, func(a, b int) bool { return out[a].VolumeID < out[b].VolumeID })
	return out
}

// WithResource returns the entries sharing resourceKey, ordered by volume ID.
func (j *Journal) WithResource(resourceKey string) []Entry {
	var out []Entry
	for _, e := range j.List() {
		if e.ResourceKey == resourceKey && resourceKey != "" {
			out = append(out, e)
		}
	}
	return out
}

// Put writes e durably, replacing any entry of the same volume.
func (j *Journal) Put(e Entry) error {
	if e.VolumeID == "" {
		return errors.New("journal entry without volume ID")
	}
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return fmt.Errorf("encode journal entry of volume %q: %w", e.VolumeID, err)
	}
	// The file is written under a lock of its own, not the journal's: the
	// fsyncs of different volumes run in parallel (a stage writes twice,
	// and one lock for all made concurrent stages queue behind each
	// other's disk flushes).
	unlock := j.lockFile(fileName(e.VolumeID))
	defer unlock()
	if err := durable.WriteFile(j.dir, fileName(e.VolumeID), b); err != nil {
		return fmt.Errorf("write journal entry of volume %q: %w", e.VolumeID, err)
	}
	j.mu.Lock()
	j.m[e.VolumeID] = e.clone()
	j.mu.Unlock()
	return nil
}

// lockFile serialises the writers of one file of the journal.
func (j *Journal) lockFile(name string) func() {
	unlock, _ := j.files.Lock(context.Background(), name) // never fails without a deadline
	return unlock
}

// Delete removes the entry of volumeID durably; a missing entry is not an error.
func (j *Journal) Delete(volumeID string) error {
	unlock := j.lockFile(fileName(volumeID))
	defer unlock()
	p := filepath.Join(j.dir, fileName(volumeID))
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove journal entry of volume %q: %w", volumeID, err)
	}
	// The file is gone: the in-memory copy follows even if the directory
	// sync fails, so the two never disagree.
	j.mu.Lock()
	delete(j.m, volumeID)
	j.mu.Unlock()
	if err := durable.SyncDir(j.dir); err != nil {
		return fmt.Errorf("sync journal directory: %w", err)
	}
	return nil
}

func (e Entry) clone() Entry {
	if e.Attrs != nil {
		a := make(map[string]string, len(e.Attrs))
		for k, v := range e.Attrs {
			a[k] = v
		}
		e.Attrs = a
	}
	return e
}

// fileName derives a file name from a volume ID, which may contain any
// character (CSI allows up to 128 bytes of anything printable).
func fileName(volumeID string) string {
	sum := sha256.Sum256([]byte(volumeID))
	return hex.EncodeToString(sum[:16]) + ".json"
}
