package iscsi

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"k8s.io/klog/v2"

	"github.com/wincsi/csi-windows-node/pkg/backend"
	"github.com/wincsi/csi-windows-node/pkg/backend/disk"
	"github.com/wincsi/csi-windows-node/pkg/backend/shared"
	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/inflight"
)

// Options tune the iSCSI backend.
type Options struct {
	// KeepPortals leaves target portals registered after their last
	// volume is unstaged (node flag --keep-iscsi-portals).
	KeepPortals bool
	// Backoff paces the wait for the LUN's disk to appear after login.
	Backoff backend.Backoff
	// CredentialKey is the node's credential key (journal.Journal.CredentialKey):
	// the backend records the CHAP secret a target's sessions and a volume
	// were logged in with as a MAC under it, never the secret. Nil
	// records none.
	CredentialKey []byte
}

// Backend is the iSCSI backend.
type Backend struct {
	h     host.Host
	disks *disk.Backend
	store backend.Store
	opts  Options
	// targets is the state of each target's sessions and the volumes
	// using it (keyed by the journal's ResourceKey, "iscsi:" and the
	// IQN): logging in (with the portals it needs) and logging out are
	// its transitions; finding, preparing and mounting a LUN's disk run
	// beside them.
	targets *shared.Set[loggedIn]
	// locks holds "portal:<address:port>" (adding a portal and logging in
	// through it, against removing it) and "initiator" (the node-wide
	// mutual-CHAP secret); they are taken inside a target's transitions.
	// Order: the target's transition, then portals (sorted), then
	// initiator.
	locks *inflight.KeyMutex
}

// New returns an iSCSI backend over h that prepares and mounts the LUN's
// disk with disks. store is the stage journal: the backend reads the
// records of the volumes of a target from it (to count the target's users)
// and of every iSCSI volume (to see whether another target's volume still
// lists a portal), and keeps its record of the node-wide mutual-CHAP
// initiator secret there (secretNoteKey).
func New(h host.Host, disks *disk.Backend, store backend.Store, o Options) *Backend {
	if o.Backoff == (backend.Backoff{}) {
		o.Backoff = backend.DefaultBackoff
	}
	return &Backend{h: h, disks: disks, store: store, opts: o, targets: shared.NewSet[loggedIn]("target", store), locks: inflight.NewKeyMutex()}
}

// Stage logs in to the volume's target and mounts the LUN's volume at the
// staging path. A repeated stage verifies that the staging path holds the
// volume of this LUN (logging in again first when the sessions are gone,
// as after a reboot without persistent logins).
//
// Only logging in is exclusive per target (a transition of b.targets); a
// stage that finds the target's sessions as the volume needs them goes on
// to its LUN beside the stages of the target's other LUNs.
func (b *Backend) Stage(ctx context.Context, r backend.StageRequest) (err error) {
	spec := r.Volume.ISCSI
	if spec == nil {
		return fmt.Errorf("volume %q has no iscsi spec: %w", r.VolumeID, host.ErrInvalid)
	}
	log := klog.FromContext(ctx).WithValues("iqn", spec.IQN, "lun", spec.LUN)
	ctx = klog.NewContext(ctx, log)

	access, err := b.disks.ResolveRootAccess(ctx, r.Volume.RootAccess, r)
	if err != nil {
		return err
	}
	staged, err := b.disks.CheckStagingPath(ctx, r.StagingPath)
	if err != nil {
		return err
	}

	// The registration lasts until the host calls made under it have
	// really ended, so that a call hung past the deadline keeps the
	// target's sessions from being logged out under it.
	ctx, use := b.targets.Stage(ctx, resourceKey(spec.IQN), r.VolumeID)
	var created []host.ISCSISession
	var added []host.Portal
	// While a host call of a failed stage (a login hung past the
	// deadline) still runs, it may yet create a session through the
	// portals this stage added; End leaves them to the retry or the
	// unstage rather than race it (and wait on its portal locks).
	defer func() {
		use.End(ctx, err, func(deferred bool) {
			if len(created) > 0 || len(added) > 0 || deferred {
				b.rollback(ctx, spec, created, added, deferred)
			}
		})
	}()
	_, err = use.Acquire(ctx,
		func(ctx context.Context, fresh *loggedIn) (bool, error) { return b.sessionsUsable(ctx, spec, fresh) },
		func(ctx context.Context, t *shared.Transition[loggedIn]) error {
			c, a, now, err := b.ensureSessions(ctx, t, spec, staged != "")
			created, added = append(created, c...), append(added, a...)
			if err == nil {
				t.Keep(loggedIn(now))
			}
			return err
		})
	if err != nil {
		return err
	}
	d, via, err := b.findLUN(ctx, spec.IQN, spec.LUN)
	if err != nil {
		return err
	}
	if staged != "" {
		if err := b.verifyStaged(ctx, d, staged, r.StagingPath, spec); err != nil {
			return err
		}
		return b.disks.GrantRootAccess(ctx, staged, access)
	}
	log.V(4).Info("Preparing the LUN's disk", "diskNumber", d.Number, "stagingTargetPath", r.StagingPath)
	return b.disks.PrepareAndMount(ctx, d, disk.PrepareRequest{VolumeID: r.VolumeID, StagingPath: r.StagingPath, FS: r.Volume.FS,
		ReadOnly: r.ReadOnly, RootAccess: access, Confirm: b.stillTheLUN(spec.IQN, spec.LUN, via)})
}

// loggedIn is what a transition that made the target ready leaves to the
// stages that waited for it (shared.Transition.Keep): the target's sessions
// as it found or made them, just now.
type loggedIn []host.ISCSISession

// sessionsUsable is a stage's check of a target the state calls ready: the
// sessions the volume needs are there (one at least; with multipath one
// through every portal, as the target's record and the portals' names say:
// paths.go) and, for a persistent volume, registered to come back after a
// reboot. A stage that waited for the transition that made the target
// ready (fresh) checks the sessions it left instead of asking the host.
// Anything else, a session to record included, is left to ensureSessions,
// as a transition.
func (b *Backend) sessionsUsable(ctx context.Context, spec *contract.ISCSISpec, fresh *loggedIn) (bool, error) {
	var existing loggedIn
	if fresh != nil {
		existing = *fresh
	} else {
		var err error
		if existing, err = b.h.ISCSI.Sessions(ctx, spec.IQN); err != nil {
			return false, err
		}
	}
	if len(existing) == 0 || len(unregistered(spec, existing)) > 0 {
		return false, nil
	}
	if made, ok := b.loggedInAs(ctx, spec.IQN); ok && made.Compare(b.credentialOf(spec), backend.CHAPNames) != backend.CredentialSame {
		// Another CHAP user or secret: the transition decides
		// (checkLogin).
		return false, nil
	}
	if !spec.Multipath {
		return true, nil
	}
	rec, err := b.targetRecordOf(ctx, spec.IQN)
	if err != nil {
		return false, err
	}
	p, err := b.pathsOf(ctx, rec, spec.Portals, existing)
	if err != nil {
		return false, err
	}
	return !p.pending() && len(missingPaths(spec, existing, p)) == 0, nil
}

// missingPaths returns the portals the volume needs a session through:
// under multipath every portal no session goes through (connected or not:
// Windows reconnects a session whose portal came back, and a login next to
// it would make a second session through the same portal), otherwise the
// volume's portals (in the contract's order: the first that answers is
// used) when the target has no session at all.
func missingPaths(spec *contract.ISCSISpec, existing []host.ISCSISession, p paths) []host.Portal {
	var want []host.Portal
	switch {
	case spec.Multipath:
		for _, pt := range spec.Portals {
			if !p.covers(portalKey(pt), existing, false) {
				want = append(want, pt)
			}
		}
	case len(existing) == 0:
		want = spec.Portals
	}
	return want
}

// unregistered returns the connected sessions a persistent volume reuses
// that are not persistent yet.
func unregistered(spec *contract.ISCSISpec, sessions []host.ISCSISession) []host.ISCSISession {
	if !spec.Persistent {
		return nil
	}
	var out []host.ISCSISession
	for _, s := range sessions {
		if !s.IsPersistent && s.IsConnected {
			out = append(out, s)
		}
	}
	return out
}

// ensureSessions logs in to the target through the portals that need a
// session: every portal without one under multipath, otherwise the first
// portal that answers when the target has no session at all. Each session
// it makes is recorded in the target's note with the portal it was made
// through, as are the sessions it finds through a portal's resolved name
// (paths.go), and once it has logged in, the addresses the target's
// sessions answer on (learnAnswers). It returns the sessions it created and the portals it
// registered, also on error, so that the caller can roll them back, and
// the target's sessions once it is done. It runs as a transition of the
// target.
//
// Sessions logged in with another volume's credentials are never used
// (checkLogin). restaging says the volume is staged already.
func (b *Backend) ensureSessions(ctx context.Context, t *shared.Transition[loggedIn], spec *contract.ISCSISpec, restaging bool) (created []host.ISCSISession, added []host.Portal, now []host.ISCSISession, err error) {
	log := klog.FromContext(ctx)
	existing, err := b.h.ISCSI.Sessions(ctx, spec.IQN)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(existing) > 0 {
		out, err := b.checkLogin(ctx, t, spec, restaging)
		if err != nil {
			return nil, nil, nil, err
		}
		if out {
			existing = nil
		}
	}
	if err := b.makePersistent(ctx, spec, existing); err != nil {
		return nil, nil, nil, err
	}
	for i := range existing {
		if spec.Persistent && existing[i].IsConnected {
			existing[i].IsPersistent = true // makePersistent registered it
		}
	}
	rec, err := b.targetRecordOf(ctx, spec.IQN)
	if err != nil {
		return nil, nil, nil, err
	}
	p, err := b.pathsOf(ctx, rec, spec.Portals, existing)
	if err != nil {
		return nil, nil, nil, err
	}
	if p.pending() {
		for id, k := range p.adopted {
			log.V(2).Info("Recording a session found through its address", "sessionID", id, "portal", k)
		}
		p.record(&rec)
		if err := b.putTargetRecord(ctx, spec.IQN, rec, existing); err != nil {
			return nil, nil, nil, err
		}
	}
	want := missingPaths(spec, existing, p)
	if len(want) == 0 {
		log.V(5).Info("Target already logged in", "sessions", len(existing))
		return nil, nil, existing, nil
	}
	if unknown := p.unknown(existing); spec.Multipath && len(unknown) > 0 {
		log.V(2).Info("Sessions of the target go through no portal the volume lists, by the record or the portals' names; "+
			"logging in through the portals without one", "sessions", len(unknown))
	}

	ctx, unlockPortals, err := b.lockPortals(ctx, want)
	if err != nil {
		return nil, nil, nil, err
	}
	defer unlockPortals()

	registered, err := b.h.ISCSI.Portals(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	isRegistered := make(map[string]bool, len(registered))
	for _, p := range registered {
		isRegistered[portalKey(p)] = true
	}
	if spec.SessionAuth == host.AuthMutual {
		var unlockSecret func()
		ctx, unlockSecret, err = b.locks.LockUntilIdle(ctx, initiatorLock)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("wait for the initiator CHAP secret: %w", err)
		}
		// Held until the logins below are done: another stage must not
		// change the node-wide secret between setting it and logging in.
		defer unlockSecret()
		if err := b.setInitiatorSecret(ctx, spec.IQN, spec.InitiatorSecret); err != nil {
			return nil, nil, nil, err
		}
	}

	if len(existing) == 0 {
		// The first sessions of the target: recorded before the login, as
		// a mapping's user is (the SMB backend's mapShare). A login that
		// made nothing drops the record again, unless a call of it may
		// still be running (a deadline), which could still make a session.
		if err := b.recordLogin(ctx, spec); err != nil {
			return nil, nil, nil, err
		}
		defer func() {
			if err != nil && len(created) == 0 && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				b.forgetLogin(ctx, spec.IQN)
			}
		}()
	}
	var down []error
	loggedInAlready := len(existing) > 0
	for _, pt := range want {
		s, addedPortal, err := b.login(ctx, spec, pt, isRegistered[portalKey(pt)])
		if addedPortal {
			added = append(added, pt)
		}
		if errors.Is(err, host.ErrSessionUnknown) {
			// Logged in, but Windows did not say which session the login
			// made: the one new session is it, or the stage fails for a
			// retry (which then finds it through the portal's name, or
			// logs in once more, never through a guess).
			s, err = b.adoptLogin(ctx, spec.IQN, append(existing, created...), rec, err)
		}
		switch {
		case err == nil:
			log.V(2).Info("Logged in to target", "portal", pt.String(), "sessionID", s.SessionID,
				"multipath", spec.Multipath, "persistent", spec.Persistent)
			created = append(created, s)
			rec.Sessions[s.SessionID] = sessionRecord{Portal: portalKey(pt)}
			if err := b.putTargetRecord(ctx, spec.IQN, rec, append(existing, created...)); err != nil {
				return created, added, nil, err
			}
		case errors.Is(err, host.ErrAlreadyExists):
			// Logged in by someone else since the listing above, without
			// multipath on one side (ISDSC_TARGET_ALREADY_LOGGED_IN): the
			// target has a session.
			log.V(4).Info("Target already logged in", "portal", pt.String(), "err", err)
			loggedInAlready = true
		case errors.Is(err, host.ErrUnreachable) && len(spec.Portals) > 1:
			log.Info("Portal does not answer; trying the other portals", "portal", pt.String(), "err", err)
			down = append(down, err)
			continue
		default:
			return created, added, nil, err
		}
		if !spec.Multipath {
			break
		}
	}
	if !loggedInAlready && len(created) == 0 {
		return created, added, nil, fmt.Errorf("log in to target %s: no portal answered: %w", spec.IQN, errors.Join(down...))
	}
	if len(down) > 0 && spec.Multipath {
		log.Info("Target logged in through some portals only; the volume is degraded until the others answer",
			"down", len(down))
	}
	if len(created) == 0 {
		return created, added, existing, nil
	}
	now, err = b.learnAnswers(ctx, spec, rec)
	return created, added, now, err
}

// learnAnswers lists the target's sessions once after logins and records
// what the listing adds to rec (pathsOf): above all the address each
// session just made answers on. Connect cannot say it (MSFT_iSCSITarget's
// Connect returns the session without its connection, so winhost reports
// the portal the login named), and without it a session that Windows
// restores at boot with a new identifier matches no portal when the
// target redirects logins: the restage would log in through every portal
// again.
func (b *Backend) learnAnswers(ctx context.Context, spec *contract.ISCSISpec, rec targetRecord) ([]host.ISCSISession, error) {
	now, err := b.h.ISCSI.Sessions(ctx, spec.IQN)
	if err != nil {
		return nil, err
	}
	p, err := b.pathsOf(ctx, rec, spec.Portals, now)
	if err != nil || !p.pending() {
		return now, err
	}
	p.record(&rec)
	return now, b.putTargetRecord(ctx, spec.IQN, rec, now)
}

// login registers the portal when needed, makes sure the target is among
// the targets discovered through it, and logs in through it.
func (b *Backend) login(ctx context.Context, spec *contract.ISCSISpec, p host.Portal, registered bool) (s host.ISCSISession, addedPortal bool, err error) {
	log := klog.FromContext(ctx).WithValues("portal", p.String())
	if !registered {
		log.V(4).Info("Adding target portal", "discoveryCHAP", spec.DiscoveryCHAP != nil)
		switch err := b.h.ISCSI.AddPortal(ctx, p, spec.InitiatorPortal, spec.DiscoveryCHAP); {
		case err == nil:
			addedPortal = true
		case errors.Is(err, host.ErrAlreadyExists):
		case errors.Is(err, host.ErrLogonFailure) && spec.DiscoveryCHAP != nil:
			return host.ISCSISession{}, false, fmt.Errorf("the portal rejected the discovery CHAP credentials of the node-stage secret "+
				"(node.sendtargets.auth.username, node.sendtargets.auth.password): %w", err)
		case errors.Is(err, host.ErrLogonFailure):
			return host.ISCSISession{}, false, fmt.Errorf("the portal refused discovery without CHAP: set discoveryCHAPAuth=true and pass "+
				"node.sendtargets.auth.username and node.sendtargets.auth.password in the node-stage secret: %w", err)
		default:
			return host.ISCSISession{}, false, err
		}
	}
	found, err := b.discovered(ctx, spec.IQN, p)
	if err != nil {
		return host.ISCSISession{}, addedPortal, err
	}
	if !found {
		// Discovery ran when the portal was added; a target created on
		// the array since then needs a refresh (MSFT_iSCSITargetPortal.Update,
		// "refreshes cached information about an iSCSI target portal":
		// Update-IscsiTargetPortal on learn.microsoft.com).
		log.V(4).Info("Target not discovered through portal yet; refreshing discovery")
		if err := b.h.ISCSI.RefreshPortal(ctx, p); err != nil {
			return host.ISCSISession{}, addedPortal, err
		}
		if found, err = b.discovered(ctx, spec.IQN, p); err != nil {
			return host.ISCSISession{}, addedPortal, err
		}
		if !found {
			return host.ISCSISession{}, addedPortal, fmt.Errorf("target %s is not among the targets portal %s reports: %w",
				spec.IQN, p, host.ErrNotFound)
		}
	}
	req := host.ConnectRequest{
		TargetIQN:       spec.IQN,
		Portal:          p,
		InitiatorPortal: spec.InitiatorPortal,
		Auth:            spec.SessionAuth,
		Multipath:       spec.Multipath,
		Persistent:      spec.Persistent,
	}
	if spec.SessionAuth != host.AuthNone {
		req.CHAP = spec.SessionCHAP
	}
	log.V(4).Info("Logging in to target", "auth", spec.SessionAuth.String())
	s, err = b.h.ISCSI.Connect(ctx, req)
	if err != nil {
		return host.ISCSISession{}, addedPortal, loginError(spec.SessionAuth, err)
	}
	return s, addedPortal, nil
}

// loginError explains a failed login with what only the backend knows:
// which keys of the node-stage secret the credentials came from. Connect's
// error names the operation, the target and the portal; nothing here names
// a secret.
func loginError(auth host.AuthType, err error) error {
	if !errors.Is(err, host.ErrLogonFailure) {
		return err
	}
	switch auth {
	case host.AuthNone:
		return fmt.Errorf("the target refused the login without CHAP: set sessionCHAPAuth=true and pass "+
			"node.session.auth.username and node.session.auth.password in the node-stage secret: %w", err)
	case host.AuthMutual:
		return fmt.Errorf("the CHAP credentials of the node-stage secret were rejected: the target's "+
			"(node.session.auth.username, node.session.auth.password) or, for mutual CHAP, the initiator's "+
			"(node.session.auth.password_in): %w", err)
	}
	return fmt.Errorf("the target rejected the CHAP credentials of the node-stage secret "+
		"(node.session.auth.username, node.session.auth.password): %w", err)
}

// discovered reports whether portal p lists target iqn.
func (b *Backend) discovered(ctx context.Context, iqn string, p host.Portal) (bool, error) {
	targets, err := b.h.ISCSI.Targets(ctx, p)
	if err != nil {
		return false, err
	}
	for _, t := range targets {
		if sameIQN(t.NodeAddress, iqn) {
			return true, nil
		}
	}
	return false, nil
}

// makePersistent registers the sessions a persistent volume reuses that
// are not persistent yet (made by a volume with persistent=false, or left
// unregistered by an interrupted unstage), so that they come back after a
// reboot as the contract promises.
func (b *Backend) makePersistent(ctx context.Context, spec *contract.ISCSISpec, sessions []host.ISCSISession) error {
	var chap *host.CHAP
	if spec.SessionAuth != host.AuthNone {
		chap = &spec.SessionCHAP
	}
	for _, s := range unregistered(spec, sessions) {
		klog.FromContext(ctx).V(2).Info("Making a reused session persistent", "sessionID", s.SessionID, "portal", s.TargetPortal.String())
		if err := b.h.ISCSI.Register(ctx, s, spec.Multipath, chap); err != nil {
			return err
		}
	}
	return nil
}

// lockPortals takes the locks of the portals in sorted order; like the
// target lock, they stay held until the host calls made under the returned
// context have ended.
func (b *Backend) lockPortals(ctx context.Context, ps []host.Portal) (context.Context, func(), error) {
	keys := make([]string, 0, len(ps))
	seen := map[string]bool{}
	for _, p := range ps {
		if k := portalKey(p); !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var unlocks []func()
	release := func() {
		for i := len(unlocks) - 1; i >= 0; i-- {
			unlocks[i]()
		}
	}
	for _, k := range keys {
		lctx, u, err := b.locks.LockUntilIdle(ctx, portalLock(k))
		if err != nil {
			release()
			return ctx, nil, fmt.Errorf("wait for other operations on portal %s: %w", k, err)
		}
		ctx = lctx
		unlocks = append(unlocks, u)
	}
	return ctx, release, nil
}

// rollback undoes what a failed stage created, as a transition of the
// target: its sessions, when no staged volume uses the target, and the
// portals it added, when nothing else uses them. When an unstage left the
// target's release to this stage (deferred), the target is released as
// that unstage would have: every session, and the volume's portals. The
// failed volume counts itself from the host (its staging path may hold a
// mount point from an earlier stage). Failures are logged; the stage's own
// error is what the caller sees.
func (b *Backend) rollback(ctx context.Context, spec *contract.ISCSISpec, created []host.ISCSISession, added []host.Portal, deferred bool) {
	log := klog.FromContext(ctx)
	ctx, cancel := backend.CleanupContext(ctx)
	defer cancel()
	r := release{iqn: spec.IQN, added: added}
	if deferred {
		r.portals = spec.Portals
	} else {
		ids := make(map[string]bool, len(created))
		for _, s := range created {
			ids[s.SessionID] = true
		}
		r.match = func(s host.ISCSISession) bool { return ids[s.SessionID] }
		r.keepSessions = len(created) == 0
	}
	if _, err := b.releaseTarget(ctx, r); err != nil {
		log.Error(err, "Cannot undo the logins of the failed stage; the last unstage of the target does")
	}
}

const initiatorLock = "initiator"

func portalLock(key string) string { return "portal:" + key }
