package inventory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/journal"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// Journal is the stage journal as Take reads it: a *journal.Journal,
// opened read-only by csi-windows-node diagnose.
type Journal interface {
	// List returns every entry, ordered by volume ID.
	List(ctx context.Context) []journal.Entry
	// Notes returns the notes whose key starts with prefix.
	Notes(ctx context.Context, prefix string) (map[string]string, error)
	// Refused returns the journal files it did not load because the
	// plugin did not write them.
	Refused() []journal.Refused
}

// HealthChecker is a backend's health check of a staged volume, the one
// NodeGetVolumeHealth runs. It only reads the host.
type HealthChecker interface {
	Health(ctx context.Context, r backend.HealthRequest) ([]backend.Condition, error)
}

// DiskLocator finds the disk a disk volume's journal entry selects among
// the disks the host lists now, without changing anything
// (disk.Backend.Locate): an offline disk, whose volume Windows hides, is
// found too.
type DiskLocator interface {
	Locate(ctx context.Context, e journal.Entry) (host.Disk, error)
}

// Input is what Take looks at.
type Input struct {
	// Host is the host as it is; Take only makes calls that read, through
	// a Snapshot of it, so that the calls of the disks, volumes, SMB and
	// iSCSI areas do not grow with the volumes.
	Host host.Host
	// Journal is the plugin's stage journal.
	Journal Journal
	// Checkers builds each backend's health check, by backend name
	// ("disk", "smb", "iscsi"), and the locator of a disk volume's disk
	// that is not mounted (nil leaves it unplaced), over the host it is
	// given: Take's snapshot, so that their reads are the snapshot's too.
	Checkers func(h host.Host) (map[string]HealthChecker, DiskLocator)
	// Root is the kubelet directory.
	Root *winpath.Root
	// DriverName is the CSI driver name: kubelet stages this driver's
	// volumes under <kubelet>/plugins/kubernetes.io/csi/<driver>/.
	DriverName string
	// KeepSMBMappings and KeepISCSIPortals are the flags of the same
	// names: an unused mapping or portal they keep is not unexplained.
	KeepSMBMappings  bool
	KeepISCSIPortals bool
}

// Take sets the stage journal against the host and returns what it found.
// A host call that fails leaves its part out and is named in
// Report.Incomplete; only bad input and an ended ctx fail Take itself.
func Take(ctx context.Context, in Input) (*Report, error) {
	if in.Journal == nil || in.Root == nil || in.DriverName == "" {
		return nil, errors.New("inventory: journal, kubelet directory and driver name are required")
	}
	t := &taker{in: in, h: Snapshot(in.Host), rep: &Report{Volumes: []Volume{}, Resources: []Resource{}, Unexplained: []Item{}, Incomplete: []string{}},
		byPath: map[string]int{}, targetDisks: map[string]map[uint32]bool{}}
	if in.Checkers != nil {
		t.checkers, t.disks = in.Checkers(t.h)
	}
	t.entries = in.Journal.List(ctx)
	t.infos = make([]host.PathInfo, len(t.entries))
	t.readable = make([]bool, len(t.entries))
	for i, e := range t.entries {
		t.rep.Volumes = append(t.rep.Volumes, t.volume(ctx, i, e))
	}
	t.kubelet(ctx)
	t.smbResources(ctx)
	t.iscsiResources(ctx)
	t.refusedFiles()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("take stock of the node: %w", err)
	}
	slices.SortFunc(t.rep.Resources, func(a, b Resource) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.ID, b.ID))
	})
	slices.SortFunc(t.rep.Unexplained, func(a, b Item) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.ID, b.ID))
	})
	return t.rep, nil
}

// taker holds what one Take has learnt so far.
type taker struct {
	in       Input
	h        host.Host // a Snapshot of in.Host
	checkers map[string]HealthChecker
	disks    DiskLocator
	rep      *Report

	entries  []journal.Entry
	infos    []host.PathInfo               // what is at each entry's staging path
	readable []bool                        // whether infos[i] could be read
	byPath   map[string]int                // canonical staging path -> index of its volume
	notes    map[string]string             // SMB mapping notes by share root (mappingNotes)
	macs     map[string]string             // SMB mapping password MACs by share root (secretNotes)
	shares   map[string]bool               // share roots staged SMB volumes use (usedShares)
	logins   map[string]backend.Credential // iSCSI session credentials by IQN (sessionCredentials)
	// targetDisks caches the disks reached through each target's sessions.
	targetDisks map[string]map[uint32]bool
	// diskNumbers caches Volumes.DiskNumber by volume (diskNumber).
	diskNumbers map[string]diskNumber
}

// diskNumber is one answer of Volumes.DiskNumber.
type diskNumber struct {
	num uint32
	err error
}

// diskNumber returns the number of the disk of a volume, asking the host
// once per volume however many parts of the report need it.
func (t *taker) diskNumber(ctx context.Context, volume string) (uint32, error) {
	if a, ok := t.diskNumbers[volume]; ok {
		return a.num, a.err
	}
	num, err := t.h.Volumes.DiskNumber(ctx, volume)
	if t.diskNumbers == nil {
		t.diskNumbers = map[string]diskNumber{}
	}
	t.diskNumbers[volume] = diskNumber{num, err}
	return num, err
}

// incomplete records a part left out because a host call failed.
func (t *taker) incomplete(what string, err error) {
	t.rep.Incomplete = append(t.rep.Incomplete, fmt.Sprintf("%s: %v", what, err))
}

// refusedFiles reports the journal files the journal refused: nothing
// explains them, and the resource one names is kept while it is there.
func (t *taker) refusedFiles() {
	for _, r := range t.in.Journal.Refused() {
		reason := "a journal file the plugin did not write (" + r.Reason + "), never acted on"
		if r.ResourceKey != "" {
			reason += "; it names " + r.ResourceKey + " (volume " + r.VolumeID + "), which the plugin keeps while the file is there"
		}
		t.unexplained(KindRefusedFile, r.Path, reason)
	}
}

func (t *taker) unexplained(kind Kind, id, reason string) {
	t.rep.Unexplained = append(t.rep.Unexplained, Item{Kind: kind, ID: id, Reason: reason})
}

// volume reports one journal entry: its state and problems, from the
// backend's health check, and what backs it.
func (t *taker) volume(ctx context.Context, i int, e journal.Entry) Volume {
	v := Volume{VolumeID: e.VolumeID, Backend: e.Backend, StagingPath: e.StagingPath,
		Problems: []Problem{}, Publications: []Publication{}}
	if e.StagingPath == "" {
		v.State = StateUnknown
		v.problem("NoRecord", "the journal entry names no staging path")
		return v
	}
	t.byPath[winpath.CanonicalTarget(e.StagingPath)] = i
	info, err := t.h.Files.Stat(ctx, e.StagingPath)
	if err != nil {
		v.State = StateUnknown
		v.problem("Unreadable", fmt.Sprintf("cannot inspect staging path %s: %v", e.StagingPath, err))
		t.incomplete("staging path of volume "+e.VolumeID, err)
		return v
	}
	t.infos[i], t.readable[i] = info, true
	switch {
	case info.Kind == host.PathMissing:
		v.State = StateGone
		v.problem("StagingPathGone", "staging path "+e.StagingPath+" does not exist: kubelet removes it once the volume is unstaged, so nothing is staged here")
		t.unexplained(KindJournalEntry, e.VolumeID, "staging path "+e.StagingPath+" no longer exists, so the volume is not staged; "+
			"the entry stays until NodeUnstageVolume succeeds, which kubelet never sent or which failed half-way and was not retried "+
			"(a pod deleted while the node was down, a kubelet whose state was cleaned)")
	case !e.Staged && info.Kind == host.PathDir:
		v.State = StateStaging
		v.problem("StageIncomplete", "NodeStageVolume has not completed: it is in progress, or it failed and kubelet retries it")
	default:
		v.State, v.Problems = t.health(ctx, e)
		if !e.Staged {
			v.State = StateStaging
			v.Problems = append([]Problem{{Reason: "StageIncomplete",
				Message: "NodeStageVolume has not completed: it is in progress, or it failed and kubelet retries it"}}, v.Problems...)
		}
	}
	t.backing(ctx, &v, e, info)
	return v
}

func (v *Volume) problem(reason, message string) {
	v.Problems = append(v.Problems, Problem{Reason: reason, Message: message})
}

// health runs the backend's health check and turns its conditions into a
// state.
func (t *taker) health(ctx context.Context, e journal.Entry) (State, []Problem) {
	hc := t.checkers[e.Backend]
	if hc == nil {
		return StateUnknown, []Problem{{Reason: "NoRecord", Message: fmt.Sprintf("unknown backend %q", e.Backend)}}
	}
	conds, err := hc.Health(ctx, backend.HealthRequest{VolumeID: e.VolumeID, StagingPath: e.StagingPath, Entry: e})
	if err != nil {
		t.incomplete("health of volume "+e.VolumeID, err)
		return StateUnknown, []Problem{{Reason: "Unreadable", Message: err.Error()}}
	}
	state, problems := StateHealthy, []Problem{}
	for _, c := range conds {
		problems = append(problems, Problem{Reason: c.Reason, Message: c.Message})
		switch {
		case c.Severity >= backend.Inaccessible:
			state = StateUnhealthy
		case state == StateHealthy:
			state = StateDegraded
		}
	}
	return state, problems
}

// inProgress reports whether entry i is an intent whose staging path
// exists: a stage in progress (or failed, and retried by kubelet), which
// uses the shared resources its record names even before its staging path
// holds anything.
func (t *taker) inProgress(i int) bool {
	return !t.entries[i].Staged && t.readable[i] && t.infos[i].Kind != host.PathMissing
}
