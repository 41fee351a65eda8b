package journal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/wincsi/csi-windows-node/internal/durable"
	"github.com/wincsi/csi-windows-node/pkg/inflight"
)

// Entry is what the journal keeps about one staged volume. Its JSON form is
// the entry file's format; the fields and their names are kept across
// versions so that a DaemonSet upgrade (which keeps the state directory)
// and a rollback both read what the other wrote (journal_test.go holds
// entry files of the previous version).
type Entry struct {
	VolumeID    string `json:"volumeID"`
	StagingPath string `json:"stagingPath"`
	Backend     string `json:"backend"`
	// ResourceKey names the host resource the volume shares with other
	// volumes (an SMB share, an iSCSI target); empty when it shares none.
	// The backend's record chooses it (backend.Record.Resource); the
	// journal indexes entries by it (ByResource).
	ResourceKey string `json:"resourceKey,omitempty"`
	// FsType and AccessMode are the capability the volume was staged
	// with, compared on a repeated NodeStageVolume.
	FsType     string `json:"fsType,omitempty"`
	AccessMode string `json:"accessMode,omitempty"`
	// Attrs is the backend's record of the volume in the backend's own
	// encoding (backend.Record): non-secret facts such as the selector of
	// a disk or the portals of an iSCSI volume. Only the backend's package
	// writes or reads its keys; the journal stores them as given.
	Attrs map[string]string `json:"attrs,omitempty"`
	// Staged is false while NodeStageVolume is in progress (or crashed),
	// true once it completed.
	Staged bool `json:"staged"`
	// Refused is set on the entries ByResource returns for journal files
	// the journal refused (Refused): the plugin never acts on such an
	// entry, and never releases its resource under it. Never stored.
	Refused bool `json:"-"`
}

// ErrReadOnly is returned by the writes of a journal opened with
// OpenReadOnly.
var ErrReadOnly = errors.New("the journal is open read-only")

// Journal is a directory of entries and notes with an in-memory copy,
// indexed by volume ID, by resource key and by backend. Reads are served
// from memory and never block on a write; writes of different entries (and
// notes) run in parallel.
type Journal struct {
	dir      string
	readOnly bool
	files    *inflight.KeyMutex // one writer per file
	// writing is held for reading by every write of a file, and for
	// writing by Seal: the process's last moment with no write half
	// done.
	writing  sync.RWMutex
	sealOnce sync.Once
	sealed   chan struct{} // closed once Seal holds writing

	keyMu sync.Mutex
	key   []byte // CredentialKey, once read or made
	made  bool   // CredentialKey made key (KeyMade)

	mu         sync.RWMutex // guards everything below (the in-memory copies)
	m          map[string]Entry
	byResource map[string]map[string]struct{} // resource key -> volume IDs
	byBackend  map[string]map[string]struct{} // backend -> volume IDs
	notes      map[string]string              // key -> value (notes.go)
	notesReady bool                           // <dir>/notes exists

	// sec is the system's view of the directory's and files' security
	// (acl.go); tokenOwner the SID the plugin's own files are owned by
	// ("" off Windows); refused the files not loaded, and blocking the
	// shared resources the refused entries name (refusedEntry).
	sec        fileSecurity
	tokenOwner string
	refused    []Refused
	blocking   []refusedUser
}

// Open loads the journal in dir, creating dir if needed. On Windows it
// first gives dir a protected DACL (SYSTEM and Administrators only) and
// Administrators as owner (acl.go). Leftover temporary files from a crash
// are removed; an unreadable entry fails Open, because silently dropping it
// could undercount the users of a shared resource. A file the plugin did
// not write (owned by neither SYSTEM, Administrators nor the plugin, or a
// hard link) is refused: not loaded, and listed by Refused. A dir that is
// a link or junction is refused before anything is changed.
func Open(dir string) (*Journal, error) {
	return open(dir, osFileSecurity{})
}

func open(dir string, sec fileSecurity) (*Journal, error) {
	// Without a trailing separator: Lstat of "link\" follows the link.
	dir = filepath.Clean(dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create journal directory %s: %w", dir, err)
	}
	if err := plainDir(dir); err != nil {
		return nil, fmt.Errorf("journal directory: %w", err)
	}
	if err := protectDir(sec, dir); err != nil {
		return nil, fmt.Errorf("protect the journal directory: %w", err)
	}
	return load(dir, false, sec)
}

// OpenReadOnly loads the journal in dir without changing anything there, so
// that a tool can read it while the plugin runs: leftover temporary files
// are left alone (they may be a write in progress), an entry or note that
// disappears while the directory is read was deleted by the plugin and is
// skipped, and every write fails with ErrReadOnly. A missing dir is an
// error wrapping os.ErrNotExist. What it returns is a snapshot: it does not
// see later writes of the plugin.
func OpenReadOnly(dir string) (*Journal, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("journal directory %s: %w", dir, err)
	}
	return load(dir, true, osFileSecurity{})
}

func load(dir string, readOnly bool, sec fileSecurity) (*Journal, error) {
	j := &Journal{dir: dir, readOnly: readOnly, files: inflight.NewKeyMutex(), m: make(map[string]Entry),
		byResource: make(map[string]map[string]struct{}), byBackend: make(map[string]map[string]struct{}), sec: sec}
	var err error
	if j.tokenOwner, err = sec.tokenOwner(); err != nil {
		return nil, fmt.Errorf("read the owner of the plugin's files: %w", err)
	}
	if j.notes, j.notesReady, err = j.loadNotes(); err != nil {
		return nil, err
	}
	err = j.loadFiles(dir, j.refusedEntry, func(p, name string, b []byte) error {
		var e Entry
		if err := json.Unmarshal(b, &e); err != nil {
			return fmt.Errorf("decode journal entry %s: %w", p, err)
		}
		if e.VolumeID == "" || fileName(e.VolumeID) != name {
			return fmt.Errorf("journal entry %s does not match its volume ID", p)
		}
		j.index(e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return j, nil
}

// loadFiles calls use for every *.json file of dir, removing leftover
// temporary files (unless the journal is read-only). A file refused
// (readFile) is not used: it is listed by Refused, and refused (when not
// nil) sees what could be read of it.
func (j *Journal) loadFiles(dir string, refused func(r *Refused, data []byte), use func(path, name string, data []byte) error) error {
	readOnly := j.readOnly
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("read journal directory %s: %w", dir, err)
	}
	for _, de := range ents {
		name := de.Name()
		p := filepath.Join(dir, name)
		switch {
		case strings.HasSuffix(name, ".tmp"):
			if readOnly {
				continue
			}
			if err := durable.Remove(dir, name); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("remove leftover %s: %w", p, err)
			}
		case strings.HasSuffix(name, ".json"):
			b, r, err := j.readFile(p)
			if readOnly && errors.Is(err, os.ErrNotExist) {
				continue // deleted by the plugin since the listing
			}
			if err != nil {
				return fmt.Errorf("read journal file %s: %w", p, err)
			}
			if r != nil { // never acted on: Refused lists it
				if refused != nil && b != nil {
					refused(r, b)
				}
				j.refused = append(j.refused, *r)
				continue
			}
			if err := use(p, name, b); err != nil {
				return err
			}
		}
	}
	return nil
}

// Dir returns the journal's directory.
func (j *Journal) Dir() string { return j.dir }

// Get returns the entry of volumeID.
func (j *Journal) Get(_ context.Context, volumeID string) (Entry, bool) {
	j.mu.RLock()
	defer j.mu.RUnlock()
	e, ok := j.m[volumeID]
	return e.clone(), ok
}

// List returns every entry, ordered by volume ID.
func (j *Journal) List(_ context.Context) []Entry {
	j.mu.RLock()
	defer j.mu.RUnlock()
	return j.collect(slices.Collect(maps.Keys(j.m)))
}

// ByResource returns the entries whose ResourceKey is key, ordered by
// volume ID: every volume that uses the shared resource or is being staged
// on it (intents, Staged false, included), and the entries of refused
// files that name it (Entry.Refused set): their volumes may still use it,
// as far as the plugin can tell. An empty key matches nothing. It costs
// the entries it returns (and the refused files, of which there are
// normally none), not the size of the journal.
func (j *Journal) ByResource(_ context.Context, key string) ([]Entry, error) {
	if key == "" {
		return nil, nil
	}
	j.mu.RLock()
	defer j.mu.RUnlock()
	out := j.collect(slices.Collect(maps.Keys(j.byResource[key])))
	n := len(out)
	for _, u := range j.blocking {
		if u.entry.ResourceKey == key {
			out = append(out, u.entry)
		}
	}
	if len(out) > n {
		slices.SortStableFunc(out, func(a, b Entry) int { return strings.Compare(a.VolumeID, b.VolumeID) })
	}
	return out, nil
}

// ByBackend returns the entries of one backend, ordered by volume ID,
// intents included.
func (j *Journal) ByBackend(_ context.Context, backend string) ([]Entry, error) {
	j.mu.RLock()
	defer j.mu.RUnlock()
	return j.collect(slices.Collect(maps.Keys(j.byBackend[backend]))), nil
}

// collect returns copies of the entries of ids, sorted. The caller holds
// j.mu.
func (j *Journal) collect(ids []string) []Entry {
	if len(ids) == 0 {
		return nil
	}
	slices.Sort(ids)
	out := make([]Entry, len(ids))
	for i, id := range ids {
		out[i] = j.m[id].clone()
	}
	return out
}

// Put writes e durably, replacing any entry of the same volume. ctx bounds
// the wait for another writer of the same entry; once its turn has come, the
// write (a small local file) is done even if ctx ends meanwhile, and a write
// whose ctx has already ended is still made: what it records happened on
// the host, and dropping it could hide a user of a shared resource.
func (j *Journal) Put(ctx context.Context, e Entry) error {
	if j.readOnly {
		return fmt.Errorf("write journal entry of volume %q: %w", e.VolumeID, ErrReadOnly)
	}
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
	unlock, err := j.lockFile(ctx, fileName(e.VolumeID))
	if err != nil {
		return fmt.Errorf("write journal entry of volume %q: %w", e.VolumeID, err)
	}
	defer unlock()
	if err := durable.WriteFile(j.dir, fileName(e.VolumeID), b); err != nil {
		return fmt.Errorf("write journal entry of volume %q: %w", e.VolumeID, err)
	}
	j.mu.Lock()
	j.unindex(e.VolumeID)
	j.index(e.clone())
	j.forgetRefused(filepath.Join(j.dir, fileName(e.VolumeID)))
	j.mu.Unlock()
	return nil
}

// Delete removes the entry of volumeID durably; a missing entry is not an
// error. ctx is honoured as by Put.
func (j *Journal) Delete(ctx context.Context, volumeID string) error {
	if j.readOnly {
		return fmt.Errorf("remove journal entry of volume %q: %w", volumeID, ErrReadOnly)
	}
	unlock, err := j.lockFile(ctx, fileName(volumeID))
	if err != nil {
		return fmt.Errorf("remove journal entry of volume %q: %w", volumeID, err)
	}
	defer unlock()
	if err := durable.Remove(j.dir, fileName(volumeID)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove journal entry of volume %q: %w", volumeID, err)
	}
	// The file is gone: the in-memory copy follows even if the directory
	// sync fails, so the two never disagree.
	j.mu.Lock()
	j.unindex(volumeID)
	j.forgetRefused(filepath.Join(j.dir, fileName(volumeID)))
	j.mu.Unlock()
	if err := durable.SyncDir(j.dir); err != nil {
		return fmt.Errorf("sync journal directory: %w", err)
	}
	return nil
}

// index adds e to the in-memory copy. The caller holds j.mu (or owns j).
func (j *Journal) index(e Entry) {
	j.m[e.VolumeID] = e
	add := func(idx map[string]map[string]struct{}, k string) {
		if idx[k] == nil {
			idx[k] = make(map[string]struct{})
		}
		idx[k][e.VolumeID] = struct{}{}
	}
	if e.ResourceKey != "" {
		add(j.byResource, e.ResourceKey)
	}
	add(j.byBackend, e.Backend)
}

// unindex drops the entry of volumeID from the in-memory copy. The caller
// holds j.mu.
func (j *Journal) unindex(volumeID string) {
	e, ok := j.m[volumeID]
	if !ok {
		return
	}
	drop := func(idx map[string]map[string]struct{}, k string) {
		delete(idx[k], volumeID)
		if len(idx[k]) == 0 {
			delete(idx, k)
		}
	}
	drop(j.byResource, e.ResourceKey)
	drop(j.byBackend, e.Backend)
	delete(j.m, volumeID)
}

// forgetRefused drops what a refused file at path said: the plugin has
// just replaced or removed it. The caller holds j.mu.
func (j *Journal) forgetRefused(path string) {
	j.refused = slices.DeleteFunc(j.refused, func(r Refused) bool { return r.Path == path })
	j.blocking = slices.DeleteFunc(j.blocking, func(u refusedUser) bool { return u.path == path })
}

// lockFile serialises the writers of one file of the journal. A live ctx
// bounds the wait; an ended one does not stop the write (see Put).
func (j *Journal) lockFile(ctx context.Context, name string) (func(), error) {
	if ctx.Err() != nil {
		ctx = context.WithoutCancel(ctx)
	}
	unlock, err := j.files.Lock(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("wait for another write of the same journal file: %w", err)
	}
	j.writing.RLock()
	return func() {
		j.writing.RUnlock()
		unlock()
	}, nil
}

// Seal waits for the writes in progress to finish and lets no other begin,
// for a process about to exit at once (a second SIGTERM): every entry and
// note is then on disk as a whole, and no write starts that the exit would
// cut. A write after Seal waits until the process exits. ctx bounds the
// wait; Seal returns ctx's error when it ends first (the journal is sealed
// all the same once those writes finish).
func (j *Journal) Seal(ctx context.Context) error {
	j.sealOnce.Do(func() {
		j.sealed = make(chan struct{})
		go func() {
			j.writing.Lock() // never unlocked: the process exits
			close(j.sealed)
		}()
	})
	select {
	case <-j.sealed:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for the journal writes in progress: %w", ctx.Err())
	}
}

func (e Entry) clone() Entry {
	e.Attrs = maps.Clone(e.Attrs)
	return e
}

// fileName derives a file name from a volume ID, which may contain any
// character (CSI allows up to 128 bytes of anything printable).
func fileName(volumeID string) string {
	sum := sha256.Sum256([]byte(volumeID))
	return hex.EncodeToString(sum[:16]) + ".json"
}
