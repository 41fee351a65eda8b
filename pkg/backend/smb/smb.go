package smb

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/backend/shared"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// Options tune the SMB backend.
type Options struct {
	// KeepMappings leaves a share's global mapping in place when its last
	// volume is unstaged (csi-driver-smb's --remove-smb-mapping-during-unmount
	// set to false). The default, false, removes it. Keeping mappings makes
	// the next stage of the share faster but leaves a connection, and the
	// credentials it was made with, on the node until it reboots.
	KeepMappings bool
	// CredentialKey is the node's credential key (journal.Journal.CredentialKey):
	// the backend records the password a mapping and a volume were made
	// with as a MAC under it, never the password. Nil records none.
	CredentialKey []byte
}

// notePrefix starts the key of a mapping's note: "smb/mapping/" and the
// share root; the value is the user name the mapping was made with ("" for
// none), never a password. MSFT_SmbGlobalMapping cannot tell the user, so
// the note is how a volume whose secret names another user is noticed,
// even after a restart, and how a mapping is known to be the plugin's.
var notePrefix = backend.NotePrefix(contract.KindSMB, "mapping")

// RenamedNotes are the spellings of the backend's note keys earlier
// versions wrote (backend.NoteRename): "smb-mapping:" until the note keys
// were spelled one way.
var RenamedNotes = []backend.NoteRename{{From: "smb-mapping:", To: notePrefix}}

// secretNotePrefix starts the key of the note of a mapping's password:
// "smb/mapping-secret/" and the share root; the value is the MAC of the
// password the mapping was made with under the node's credential key
// (backend.Credential.SecretMAC), never the password. It is a note of its
// own, so that the user note keeps the form earlier versions wrote and
// read, and a mapping made by an earlier version has none: its password
// is unknown, never taken as different.
var secretNotePrefix = backend.NotePrefix(contract.KindSMB, "mapping-secret")

// Backend is the SMB backend.
type Backend struct {
	h     host.Host
	store backend.Store
	opts  Options
	// shares is the state of each share root's global mapping and the
	// volumes using it (keyed by the journal's ResourceKey, "smb:" and
	// the share root): mapping, repairing and unmapping a share are its
	// transitions, the per-volume work runs beside them.
	shares *shared.Set[mapped]
}

// New returns an SMB backend over h. store is the stage journal: the
// backend reads the records of the volumes of a share from it, to count the
// share's users, and keeps a note per global mapping it made (notePrefix).
func New(h host.Host, store backend.Store, o Options) *Backend {
	return &Backend{h: h, store: store, opts: o, shares: shared.NewSet[mapped]("share", store)}
}

// stagingState is what a stage finds at the staging path.
type stagingState int

const (
	stagingMissing stagingState = iota // nothing there
	stagingEmpty                       // an empty directory (kubelet made it)
	stagingLinked                      // already a link to the volume's directory
)

// Stage makes the volume's directory on the share available at the staging
// path: it ensures one healthy global mapping of the share root, checks the
// directory exists and links the staging path to it. A repeated stage
// verifies (and repairs) the mapping and succeeds.
//
// Only making, repairing or removing the mapping is exclusive per share
// (a transition of b.shares); a stage that finds the mapping ready checks
// it and does its own work (the directory check, the link) beside the
// stages of the share's other volumes.
func (b *Backend) Stage(ctx context.Context, r backend.StageRequest) (err error) {
	spec := r.Volume.SMB
	if spec == nil {
		return fmt.Errorf("volume %q has no smb spec: %w", r.VolumeID, host.ErrInvalid)
	}
	unc, root := spec.UNC(), spec.MappingPath()
	log := klog.FromContext(ctx).WithValues("remotePath", root, "stagingTargetPath", r.StagingPath)

	state, err := b.inspectStaging(ctx, r.StagingPath, unc)
	if err != nil {
		return err
	}

	ctx, use := b.shares.Stage(ctx, resourceKey(root), r.VolumeID)
	// made: this stage made (or made again) the mapping, so a failure
	// removes it unless another volume uses it.
	made := false
	defer func() {
		use.End(ctx, err, func(deferred bool) {
			if made || deferred {
				b.releaseAfterFailure(ctx, root)
			}
		})
	}()
	connect := func(ctx context.Context, t *shared.Transition[mapped]) error {
		m, err := b.ensureMapping(ctx, t, spec, state == stagingLinked)
		made = made || (m && err == nil)
		return err
	}
	connected, err := use.Acquire(ctx, func(ctx context.Context, fresh *mapped) (bool, error) { return b.mappingUsable(ctx, spec, fresh) }, connect)
	if err != nil {
		return err
	}

	err = b.checkDirectory(ctx, unc, root)
	if err != nil && !connected && staleMapping(err) {
		// The mapping looked usable, but the share refuses or does not
		// answer through it: check and repair it as a transition (the
		// full check tells a stale mapping from a directory this user
		// may not read), then check the directory again.
		log.V(2).Info("The share refuses the directory through its global mapping; checking the mapping", "err", err)
		if _, rerr := use.Repair(ctx, connect); rerr != nil {
			return rerr
		}
		err = b.checkDirectory(ctx, unc, root)
	}
	if err != nil {
		return err
	}
	if other := b.serverDrift(ctx, spec, b.credentialOf(spec)); other != "" {
		log.V(2).Info("Another global mapping of the share's server was made by the same user with another password than this "+
			"volume's secret holds; Windows may serve both shares through one SMB session, authenticated with either password, "+
			"so this password is not known to work; recorded as drift (csi-windows-node diagnose, csi_windows_node_credential_drift). "+
			"Finish the rotation on every volume of the server, or fix this volume's secret",
			"user", spec.Credential.User, "otherMapping", other)
	}
	if state == stagingLinked {
		log.V(4).Info("Volume already staged")
		return nil
	}
	return b.link(ctx, r.StagingPath, unc, state)
}

// staleMapping reports whether a directory check failed in a way a stale
// global mapping explains: the share refused the mapping's credentials or
// did not answer through it.
func staleMapping(err error) bool {
	return errors.Is(err, host.ErrAccessDenied) || errors.Is(err, host.ErrLogonFailure) || errors.Is(err, host.ErrUnreachable)
}

// mapped is what a transition that made the share ready leaves to the
// stages that waited for it (shared.Transition.Keep): the mapping it found
// usable or made, just now.
type mapped struct {
	requirePrivacy bool
}

// mappingUsable is a stage's check of a mapping the share's state calls
// ready: it exists with status OK, was made as the volume's user (when the
// plugin knows) and with encryption when the volume requires it. A stage
// that waited for the transition that made the share ready (fresh) takes
// its word for the mapping and checks only what is its own. The share
// answering through the mapping is checked by the stage's own directory
// check.
func (b *Backend) mappingUsable(ctx context.Context, spec *contract.SMBSpec, fresh *mapped) (bool, error) {
	root := spec.MappingPath()
	if fresh != nil {
		if spec.RequirePrivacy && !fresh.requirePrivacy {
			return false, nil
		}
	} else {
		m, err := b.h.SMB.Mapping(ctx, root)
		switch {
		case errors.Is(err, host.ErrNotFound):
			return false, nil
		case err != nil:
			return false, err
		case m.Status != host.MappingOK:
			return false, nil
		case spec.RequirePrivacy && !m.RequirePrivacy:
			return false, nil
		}
	}
	if made, ok := b.maker(ctx, root); ok && made.Compare(b.credentialOf(spec), backend.AccountNames) != backend.CredentialSame {
		// Another user or another password: the transition decides
		// (reconcile).
		return false, nil
	}
	return true, nil
}

// inspectStaging classifies what is at the staging path.
func (b *Backend) inspectStaging(ctx context.Context, staging, unc string) (stagingState, error) {
	info, err := b.h.Files.Stat(ctx, staging)
	if err != nil {
		return 0, fmt.Errorf("staging path: %w", err)
	}
	switch info.Kind {
	case host.PathSymlink:
		if backend.SameTarget(info.Target, unc) {
			return stagingLinked, nil
		}
		return 0, fmt.Errorf("staging path %s is already a link to %s, not to %s: %w",
			staging, info.Target, unc, host.ErrAlreadyExists)
	case host.PathMountPoint:
		return 0, fmt.Errorf("staging path %s is a mount point of volume %s: %w", staging, info.Target, host.ErrAlreadyExists)
	case host.PathMissing:
		return stagingMissing, nil
	case host.PathDir:
		empty, err := b.h.Files.IsEmptyDir(ctx, staging)
		if err != nil {
			return 0, fmt.Errorf("staging path: %w", err)
		}
		if !empty {
			return 0, fmt.Errorf("staging path %s is a directory with entries; refusing to replace it with a link: %w",
				staging, host.ErrConflict)
		}
		return stagingEmpty, nil
	}
	return 0, fmt.Errorf("staging path %s is a %s, not a directory: %w", staging, info.Kind, host.ErrConflict)
}

// ensureMapping makes sure one healthy global mapping of the share root
// exists, and reports whether it made one. It runs as a transition of the
// share.
//
// A mapping made with another user's credentials is never used by this
// volume, nor made again with this volume's while other volumes use it
// (otherUser): the volume would reach the share with another volume's
// credentials, or they with its. restaging says the volume is staged
// already (its link is there).
func (b *Backend) ensureMapping(ctx context.Context, t *shared.Transition[mapped], spec *contract.SMBSpec, restaging bool) (bool, error) {
	root := spec.MappingPath()
	log := klog.FromContext(ctx).WithValues("remotePath", root)

	made, known := b.maker(ctx, root)
	if known && made.Compare(b.credentialOf(spec), backend.AccountNames) == backend.CredentialOtherUser {
		if other := b.otherUser(ctx, t, root); other != "" {
			return false, userConflict(spec, made.User, other)
		}
	}
	m, err := b.h.SMB.Mapping(ctx, root)
	if errors.Is(err, host.ErrNotFound) {
		log.V(4).Info("Share is not mapped yet")
		return true, keepMapping(t, spec.RequirePrivacy, b.mapShare(ctx, spec))
	}
	if err != nil {
		return false, err
	}
	if m.Status != host.MappingOK {
		// A mapping left Disconnected or Unavailable (after a reboot or an
		// outage) makes a new mapping fail and never heals by itself
		// (csi-driver-smb PR #1219, which made its mount path status-aware).
		log.V(2).Info("Global mapping is not usable; mapping the share again", "status", m.Status.String())
		return true, keepMapping(t, spec.RequirePrivacy, b.remap(ctx, spec))
	}
	if err := b.checkMapping(ctx, spec); err != nil {
		if !errors.Is(err, errStaleCredentials) {
			return false, err
		}
		// The mapping still says OK but the server refuses it: the
		// password was changed on the server (csi-proxy PRs #66/#75).
		// It is useless for every volume of the share, so remapping
		// breaks nothing that works.
		log.V(2).Info("Global mapping lost access to the share (credentials changed on the server?); mapping the share again", "err", err)
		return true, keepMapping(t, spec.RequirePrivacy, b.remap(ctx, spec))
	}
	return b.reconcile(ctx, t, spec, m, restaging)
}

// userConflict is the refusal of a volume whose user differs from the one
// the share's mapping was made with while other volumes use the mapping.
func userConflict(spec *contract.SMBSpec, mappedAs, other string) error {
	return fmt.Errorf("share %s is mapped as user %s for other staged volumes (such as %q), and this volume's node-stage secret names user %s: "+
		"a volume reaches a share only through a mapping made with its own user's credentials, or it would use another volume's; "+
		"give this volume the Secret of user %s, or unstage the volumes of user %s on this node first (csi-windows-node diagnose lists them): %w",
		spec.MappingPath(), userName(mappedAs), other, userName(spec.Credential.User), userName(mappedAs), userName(mappedAs), host.ErrConflict)
}

// userName names a user in messages: "(none)" for a mapping without
// credentials.
func userName(u string) string {
	if u == "" {
		return "(none: mapped without credentials)"
	}
	return u
}

// errStaleCredentials marks a mapping that the server no longer accepts.
var errStaleCredentials = errors.New("the server no longer accepts the mapping's credentials")

// checkMapping checks that the share answers through its mapping. A share
// root the mapping's user may not read (NTFS permissions on the root only)
// is told apart from refused credentials by also checking the volume's own
// directory: only when both are refused are the credentials stale.
func (b *Backend) checkMapping(ctx context.Context, spec *contract.SMBSpec) error {
	root, unc := spec.MappingPath(), spec.UNC()
	err := b.h.SMB.Check(ctx, root)
	if err == nil {
		return nil
	}
	refused := func(err error) bool {
		return errors.Is(err, host.ErrAccessDenied) || errors.Is(err, host.ErrLogonFailure)
	}
	switch {
	case refused(err):
		if strings.EqualFold(unc, root) {
			return fmt.Errorf("%w: %w", errStaleCredentials, err)
		}
		derr := b.h.SMB.Check(ctx, unc)
		if derr == nil || errors.Is(derr, host.ErrNotFound) {
			klog.FromContext(ctx).V(4).Info("Share root is not readable through the mapping, but the share answers", "remotePath", root)
			return nil
		}
		if refused(derr) {
			return fmt.Errorf("%w: %w", errStaleCredentials, err)
		}
		return derr
	case errors.Is(err, host.ErrUnreachable):
		return fmt.Errorf("the share cannot be reached through its global mapping: %w", err)
	case errors.Is(err, host.ErrNotFound):
		return fmt.Errorf("the share no longer exists on the server: %w", err)
	}
	return err
}

// reconcile decides whether a healthy mapping suits the volume: made with
// the volume's user (ensureMapping refused it already when another user's
// mapping has other users) and password, and with encryption when the
// volume requires it. A mapping that does not suit is made again when no
// other staged volume uses the share. One made with the same user and
// another password is kept while other volumes use it, or the volume is
// staged already (a rotation, or a wrong password: the node cannot check
// the new password without disturbing the mapping they use, see
// docs/parameters.md); the volume's journal entry then records the drift,
// which diagnose and csi_windows_node_credential_drift report.
func (b *Backend) reconcile(ctx context.Context, t *shared.Transition[mapped], spec *contract.SMBSpec, m host.SMBMapping, restaging bool) (bool, error) {
	root, user := spec.MappingPath(), spec.Credential.User
	log := klog.FromContext(ctx).WithValues("remotePath", root)

	var why string
	made, known := b.maker(ctx, root)
	match := backend.CredentialSame
	if known {
		match = made.Compare(b.credentialOf(spec), backend.AccountNames)
	}
	switch match {
	case backend.CredentialOtherUser:
		why = fmt.Sprintf("it was made as user %s and this volume's secret names user %s", userName(made.User), userName(user))
	case backend.CredentialDrift:
		why = "it was made with another password of user " + user + " than this volume's secret holds"
	}
	privacy := spec.RequirePrivacy && !m.RequirePrivacy
	if privacy && why == "" {
		why = "it was made without requirePrivacy and this volume requires SMB encryption"
	}
	if why == "" {
		log.V(4).Info("Reusing global mapping")
		return false, keepMapping(t, m.RequirePrivacy, nil)
	}
	other := b.otherUser(ctx, t, root)
	switch {
	case other != "" && privacy:
		return false, fmt.Errorf("share %s is mapped without SMB encryption (requirePrivacy false) for other staged volumes (such as %q), "+
			"and this volume requires it; all volumes of a share must agree on requirePrivacy: %w", root, other, host.ErrConflict)
	case other != "" && match == backend.CredentialOtherUser:
		// Users came since ensureMapping counted none: the same refusal.
		return false, userConflict(spec, made.User, other)
	case match == backend.CredentialDrift && (other != "" || restaging):
		volumes := []string{other}
		if other == "" {
			volumes = nil
		}
		log.V(2).Info("Keeping the global mapping of the share although "+why+": other staged volumes, or this one, use it, and the "+
			"node cannot check the new password without disturbing them; recorded as drift (csi-windows-node diagnose, "+
			"csi_windows_node_credential_drift). Finish the rotation on every volume of the share, or fix this volume's secret",
			"user", user, "volumes", volumes)
		return false, keepMapping(t, m.RequirePrivacy, nil)
	}
	log.V(2).Info("Mapping the share again because " + why)
	return true, keepMapping(t, spec.RequirePrivacy, b.remap(ctx, spec))
}

// keepMapping leaves the mapping a transition found usable or made (with
// requirePrivacy) to the stages waiting for it, when err is nil, and
// returns err.
func keepMapping(t *shared.Transition[mapped], requirePrivacy bool, err error) error {
	if err == nil {
		t.Keep(mapped{requirePrivacy: requirePrivacy})
	}
	return err
}

// remap removes the share's mapping and makes it again with the volume's
// credentials.
func (b *Backend) remap(ctx context.Context, spec *contract.SMBSpec) error {
	root := spec.MappingPath()
	if err := b.h.SMB.Unmap(ctx, root); err != nil && !errors.Is(err, host.ErrNotFound) {
		return fmt.Errorf("before mapping the share again: %w", err)
	}
	b.forgetMaker(ctx, root)
	return b.mapShare(ctx, spec)
}

// mapShare creates the global mapping of the share root. The user name is
// recorded before the mapping is made, so a crash right after Map cannot
// leave a mapping of unknown origin.
func (b *Backend) mapShare(ctx context.Context, spec *contract.SMBSpec) error {
	root, user := spec.MappingPath(), spec.Credential.User
	cred := b.credentialOf(spec)
	if err := b.store.PutNote(ctx, notePrefix+root, user); err != nil {
		return fmt.Errorf("record the user of the global mapping of %s: %w", root, err)
	}
	if err := b.putSecretNote(ctx, root, cred.SecretMAC); err != nil {
		return err
	}
	err := b.h.SMB.Map(ctx, root, spec.Credential, spec.RequirePrivacy)
	if err == nil {
		klog.FromContext(ctx).V(2).Info("Mapped share", "remotePath", root, "user", user, "requirePrivacy", spec.RequirePrivacy)
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		// The call may still be running and make the mapping (a hung WMI
		// provider): keep the note, which only ever describes a mapping
		// that exists, so that the mapping is not left of unknown origin.
		return mapError(spec, err)
	}
	b.forgetMaker(ctx, root)
	return mapError(spec, err)
}

// mapError explains a failed Map with what only the backend knows: what
// the failure means for the volume and what to do. Map's error names the
// operation, the share and the user; nothing here names the password.
func mapError(spec *contract.SMBSpec, err error) error {
	switch {
	case errors.Is(err, host.ErrCredentialConflict):
		return fmt.Errorf("this node is already connected to server %s under another user name; "+
			"all volumes of one server must use the same credentials, or the other mapping must be removed "+
			"(Get-SmbGlobalMapping, Remove-SmbGlobalMapping): %w", spec.Server, err)
	case errors.Is(err, host.ErrGuestLogonBlocked):
		// Windows Server 2019 and later refuse guest logons by default
		// ("Guest access in SMB2 and SMB3 disabled by default":
		// https://learn.microsoft.com/windows-server/storage/file-server/enable-insecure-guest-logons-smb2-and-smb3).
		return fmt.Errorf("the server offered guest access to a mapping without credentials, which this node's policy refuses "+
			"(\"Enable insecure guest logons\", off by default since Windows Server 2019; turning it on lowers the node's security): "+
			"give the volume a node-stage secret with username and password instead: %w", err)
	case errors.Is(err, host.ErrLogonFailure) && spec.Credential.User == "":
		return fmt.Errorf("the server refused a mapping without credentials (mapWithoutCredentials): it wants a user; "+
			"give the volume a node-stage secret with username and password: %w", err)
	case errors.Is(err, host.ErrLogonFailure):
		return fmt.Errorf("the server rejected the credentials of the node-stage secret "+
			"(wrong user name or password, or a locked or disabled account): %w", err)
	case errors.Is(err, host.ErrAccessDenied) && spec.RequirePrivacy:
		return fmt.Errorf("with requirePrivacy true the mapping requires SMB 3 encryption, which some servers do not offer: "+
			"set requirePrivacy to false for them: %w", err)
	case errors.Is(err, host.ErrUnreachable):
		return fmt.Errorf("server %s cannot be reached: %w", spec.Server, err)
	case errors.Is(err, host.ErrNotFound):
		return fmt.Errorf("the share does not exist on server %s: %w", spec.Server, err)
	case errors.Is(err, host.ErrAlreadyExists):
		// Mapping is a transition of the share, so the plugin cannot race
		// itself: someone else mapped the share, or a mapping exists under
		// another spelling of the path that the lookup did not find.
		return fmt.Errorf("a mapping of the share already exists but could not be read back (made outside the plugin?); "+
			"remove it with Remove-SmbGlobalMapping: %v: %w", err, host.ErrConflict)
	}
	return err
}

// checkDirectory checks that the volume's directory exists on the share.
func (b *Backend) checkDirectory(ctx context.Context, unc, root string) error {
	err := b.h.SMB.Check(ctx, unc)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, host.ErrNotFound):
		return fmt.Errorf("directory %s does not exist on share %s; create it, or check source and subDir: %w", unc, root, err)
	}
	return fmt.Errorf("check directory %s: %w", unc, err)
}

// link replaces the empty staging directory (or nothing) with a directory
// link to the volume's directory on the share. A failure after the
// directory was removed puts the directory back.
func (b *Backend) link(ctx context.Context, staging, unc string, state stagingState) error {
	switch state {
	case stagingEmpty:
		// A link cannot replace a directory on Windows: remove the empty
		// one kubelet made. Remove never deletes a directory with entries.
		if err := b.h.Files.Remove(ctx, staging); err != nil && !errors.Is(err, host.ErrNotFound) {
			return fmt.Errorf("before linking the staging path: %w", err)
		}
	case stagingMissing:
		if parent, ok := winpath.Parent(staging); ok {
			if err := b.h.Files.MakeDir(ctx, parent); err != nil {
				return fmt.Errorf("the parent of the staging path: %w", err)
			}
		}
	}
	klog.FromContext(ctx).V(4).Info("Linking staging path to the share", "stagingTargetPath", staging, "remotePath", unc)
	if err := b.h.Files.Symlink(ctx, staging, unc); err != nil {
		if state == stagingEmpty {
			if rerr := b.h.Files.MakeDir(ctx, staging); rerr != nil {
				klog.FromContext(ctx).Error(rerr, "Cannot restore the staging directory", "stagingTargetPath", staging)
			}
		}
		return err
	}
	return nil
}

// releaseAfterFailure removes the share's mapping after a failed stage
// that made it, or to which an unstage left the decision, unless a staged
// volume uses the share. The failed volume counts itself from the host
// (its staging path may hold a link from an earlier stage). It runs with
// its own deadline (backend.CleanupContext), because the stage's context
// may have ended.
func (b *Backend) releaseAfterFailure(ctx context.Context, root string) {
	ctx, cancel := backend.CleanupContext(ctx)
	defer cancel()
	if b.opts.KeepMappings {
		return
	}
	log := klog.FromContext(ctx).WithValues("remotePath", root)
	if err := b.releaseShare(ctx, "", root, false); err != nil {
		log.Error(err, "Cannot remove the global mapping after a failed stage; the last unstage of the share removes it")
	}
}

// maker returns the credential the share's mapping was made with, when
// known. A note that cannot be read counts as unknown: the mapping is then
// kept as it is.
func (b *Backend) maker(ctx context.Context, root string) (backend.Credential, bool) {
	user, ok, err := b.store.Note(ctx, notePrefix+root)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Cannot read the note of a global mapping", "remotePath", root)
		return backend.Credential{}, false
	}
	if !ok {
		return backend.Credential{}, false
	}
	mac, _, err := b.store.Note(ctx, secretNotePrefix+root)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Cannot read the note of a global mapping's password", "remotePath", root)
		mac = "" // unknown: never taken as different
	}
	return backend.Credential{User: user, SecretMAC: mac}, true
}

// putSecretNote records the MAC of the password a mapping is being made
// with; a mapping without a password has no such note.
func (b *Backend) putSecretNote(ctx context.Context, root, mac string) error {
	if mac == "" {
		return b.deleteSecretNote(ctx, root)
	}
	if err := b.store.PutNote(ctx, secretNotePrefix+root, mac); err != nil {
		return fmt.Errorf("record the password of the global mapping of %s (its MAC): %w", root, err)
	}
	return nil
}

func (b *Backend) deleteSecretNote(ctx context.Context, root string) error {
	if err := b.store.DeleteNote(ctx, secretNotePrefix+root); err != nil {
		return fmt.Errorf("drop the record of the password of the global mapping of %s: %w", root, err)
	}
	return nil
}

// credentialOf is what the journal records of the volume's credential:
// its user and the MAC of its password, bound to the server, as named in
// the share root, and the user (lower case, as Windows compares user
// names): the scope of Windows' one set of credentials per server
// (ServerDrift), so that the MACs of two shares of a server compare.
func (b *Backend) credentialOf(spec *contract.SMBSpec) backend.Credential {
	c := backend.Credential{User: spec.Credential.User}
	if c.User != "" {
		c.SecretMAC = spec.Credential.Password.MAC(b.opts.CredentialKey, "smb", serverPrefix(spec.MappingPath()), strings.ToLower(c.User))
	}
	return c
}

// forgetMaker drops the note of a mapping that no longer exists. A note
// left behind is harmless: it is only read while the mapping exists, and
// the next Map replaces it.
func (b *Backend) forgetMaker(ctx context.Context, root string) {
	if err := b.store.DeleteNote(ctx, notePrefix+root); err != nil {
		klog.FromContext(ctx).Error(err, "Cannot drop the note of a removed global mapping", "remotePath", root)
	}
	if err := b.deleteSecretNote(ctx, root); err != nil {
		klog.FromContext(ctx).Error(err, "Cannot drop the note of a removed global mapping's password", "remotePath", root)
	}
}
