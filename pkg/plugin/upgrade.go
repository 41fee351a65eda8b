package plugin

import (
	"context"
	"fmt"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/backend/iscsi"
	"github.com/wincsi/csi-windows-node/pkg/backend/smb"
	"github.com/wincsi/csi-windows-node/pkg/journal"
)

// renamedNotes are the spellings of note keys that earlier versions of the
// backends wrote (each backend declares its own).
var renamedNotes = [][]backend.NoteRename{smb.RenamedNotes, iscsi.RenamedNotes}

// upgradeJournal brings a stage journal an earlier version wrote up to
// this version before anything reads it: a DaemonSet upgrade keeps the
// state directory, and a node upgraded in place must keep working. Today
// that is renaming notes (backend.NoteRename). Each note is written under
// its new key before the old one is removed, so a crash in between leaves
// both with one value and the next start finishes the rename; a note that
// already exists under its new key keeps that value (this version wrote
// it).
func upgradeJournal(ctx context.Context, jr *journal.Journal) error {
	for _, renames := range renamedNotes {
		for _, r := range renames {
			old, err := jr.Notes(ctx, r.From)
			if err != nil {
				return err
			}
			for key, value := range old {
				to := r.To + strings.TrimPrefix(key, r.From)
				if _, ok, err := jr.Note(ctx, to); err != nil {
					return err
				} else if !ok {
					if err := jr.PutNote(ctx, to, value); err != nil {
						return fmt.Errorf("rename journal note %q to %q: %w", key, to, err)
					}
				}
				if err := jr.DeleteNote(ctx, key); err != nil {
					return fmt.Errorf("rename journal note %q to %q: %w", key, to, err)
				}
			}
		}
	}
	return nil
}
