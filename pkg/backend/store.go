package backend

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/journal"
)

// Store is the stage journal as the backends use it: the records of the
// volumes that share a host resource, and small notes about the shared
// resources a backend made. Every backend's constructor takes one; the
// plugin passes its *journal.Journal (pkg/plugin), tests pass a journal in
// a temporary directory.
//
// The journal holds an entry for every volume from the moment its stage
// starts (an intent, Entry.Staged false) until its unstage has finished,
// so the entries of a resource are a superset of its users: a backend
// checks each against the host before relying on it. Reads are served from
// memory, never block on a write and may run concurrently with each other
// and with writes.
//
// Note keys are spelled one way, "<backend>/<kind>/<about>" (NotePrefix);
// values are the backend's own, and never a secret.
type Store interface {
	// ByResource returns the entries whose ResourceKey is key (see
	// Record.Resource), intents included, ordered by volume ID. Those of
	// journal files the journal refused have Entry.Refused set: never act
	// on one, only count its volume as a user (shared.Transition.Others).
	ByResource(ctx context.Context, key string) ([]journal.Entry, error)
	// ByBackend returns the entries of one backend ("disk", "smb",
	// "iscsi"), intents included, ordered by volume ID.
	ByBackend(ctx context.Context, backend string) ([]journal.Entry, error)
	// Note returns the note under key and whether there is one.
	Note(ctx context.Context, key string) (string, bool, error)
	// Notes returns the notes whose keys start with prefix, by key.
	Notes(ctx context.Context, prefix string) (map[string]string, error)
	// PutNote stores value under key durably.
	PutNote(ctx context.Context, key, value string) error
	// DeleteNote removes the note under key durably; a missing note is
	// not an error.
	DeleteNote(ctx context.Context, key string) error
}

var _ Store = (*journal.Journal)(nil)

// NotePrefix is the start of the keys of one kind of note of a backend,
// "<backend>/<kind>/"; the rest of a key says what the note is about (a
// share root, a volume ID, "chap-secret" for the initiator's):
// "smb/mapping/\\srv\data", "disk/partitioning/pvc-1",
// "iscsi/initiator/chap-secret". Every note key is spelled so.
func NotePrefix(b contract.Kind, kind string) string { return string(b) + "/" + kind + "/" }

// NoteRename is a spelling of note keys an earlier version wrote: every
// key that starts with From is now To followed by the rest of the key.
// plugin.New renames them at start (a node upgraded in place keeps its
// notes).
type NoteRename struct{ From, To string }

// Record is a backend's typed record of one volume, kept in the volume's
// journal entry (Entry.ResourceKey and Entry.Attrs) from the start of its
// stage until its unstage has finished. Each backend has its own type,
// builds it from the volume's contract, and is the only package that
// encodes and decodes it: what a record holds is read back through the
// backend's DecodeRecord, never as attribute strings elsewhere.
type Record interface {
	// Resource is the key of the host resource the volume shares with
	// other volumes (an SMB share, an iSCSI target), "" when it shares
	// none. The journal indexes entries by it; two volumes on one resource
	// have the same key.
	Resource() string
	// Storage names, canonically, the storage the volume is (a disk
	// selector, a directory of a share, a LUN of a target): a repeated
	// stage whose record names other storage is incompatible with the
	// completed one.
	Storage() string
	// Attrs encodes the record for the journal entry.
	Attrs() map[string]string
}

// ErrNoRecord is wrapped by a backend's DecodeRecord when an entry holds no
// usable record of that backend: it is another backend's entry, or the
// record is missing or damaged.
var ErrNoRecord = errors.New("no usable backend record")

// RecordResource checks that e is an entry of backend kind, and returns
// the name its ResourceKey gives after prefix (the share, the target);
// with an empty prefix it only checks the kind. Both failures wrap
// ErrNoRecord. The backends' DecodeRecord start with it.
func RecordResource(e journal.Entry, kind, prefix string) (string, error) {
	if e.Backend != kind {
		return "", fmt.Errorf("journal entry of volume %q is a %q entry, not %s: %w", e.VolumeID, e.Backend, kind, ErrNoRecord)
	}
	if prefix == "" {
		return "", nil
	}
	name, ok := strings.CutPrefix(e.ResourceKey, prefix)
	if !ok || name == "" {
		return "", fmt.Errorf("journal entry of volume %q names no %s resource (%q): %w", e.VolumeID, kind, e.ResourceKey, ErrNoRecord)
	}
	return name, nil
}

// Releaser is a backend whose volumes share host resources (an SMB share's
// global mapping, an iSCSI target's sessions, a target portal). It is how a
// caller that is not a volume, such as an orphan sweep, asks about one of
// them: ReleaseUnused decides whether the resource is unused, exactly as
// the unstage of its last volume would and through the same transition
// (so it never races a stage or unstage of the resource's volumes), and
// with remove also removes it. It reports whether the resource is unused
// (with remove: whether it is gone now). A resource a volume is being
// staged or unstaged on is in use.
//
// Only a resource the plugin's records name (the SMB backend's mapping
// note, a journal entry naming the target or listing the portal) is ever
// unused, checked inside the transition: a caller acting on an older view
// (the orphan sweep's inventory) never removes what someone else made
// since. A resource the host no longer has is unused and needs nothing.
type Releaser interface {
	// Owns reports whether key names a resource of this backend.
	Owns(key string) bool
	ReleaseUnused(ctx context.Context, key string, remove bool) (unused bool, err error)
}
