package contract

import (
	"slices"
	"sort"
	"strings"
)

// Parse turns a request into a validated Volume. The error, when not nil,
// is an *Error naming the offending key; it never contains a secret
// value. Options are assumed valid (Options.Validate); invalid aliases and
// presets are skipped rather than failing every volume.
func Parse(r Request, o Options) (Volume, error) {
	v, e := parse(r, o)
	if e != nil {
		return Volume{}, e
	}
	return v, nil
}

// kindChoice records how the kind was chosen, for messages.
type kindChoice int

const (
	kindExplicit kindChoice = iota // the backend key
	kindDefault                    // Options.DefaultKind
	kindInferred                   // from source / iqn / neither
)

func parse(r Request, o Options) (Volume, *Error) {
	if r.VolumeID == "" {
		return Volume{}, errorf(keyVolumeID, "is empty")
	}
	p, e := mergeContexts(r.VolumeContext, r.PublishContext)
	if e != nil {
		return Volume{}, e
	}
	sec, e := foldMap(r.Secrets, true, "the node-stage secret")
	if e != nil {
		return Volume{}, e
	}

	aliases := compileAliases(o)
	// Aliases whose vendor key is not a contract key apply at once, so
	// that an alias of backend, source or iqn takes part in choosing the
	// kind.
	for _, a := range aliases {
		if !a.ownKey {
			if e := applyAlias(p, a); e != nil {
				return Volume{}, e
			}
		}
	}

	if eph, ok := p.get(keyEphemeral); ok {
		on, e := parseBool(eph)
		if e != nil {
			return Volume{}, e
		}
		if on {
			return Volume{}, errorf(eph.key, "ephemeral inline volumes are not supported: the plugin needs NodeStageVolume")
		}
	}

	kind, how, e := chooseKind(p, o)
	if e != nil {
		return Volume{}, e
	}
	// An alias whose vendor key is a contract key of another backend
	// ("LUN" is the iscsi "lun") applies only to volumes of its target's
	// backend; elsewhere the key keeps its own meaning.
	for _, a := range aliases {
		if a.ownKey && appliesTo(a.target.Backends, kind) {
			if e := applyAlias(p, a); e != nil {
				return Volume{}, e
			}
		}
	}

	vol := Volume{Kind: kind}
	if e := checkTypos(p, sec); e != nil {
		return Volume{}, e
	}
	if vol.Ignored, e = checkKeys(p, kind, how, o); e != nil {
		return Volume{}, e
	}
	if e := checkSecretKinds(p, sec, kind, how); e != nil {
		return Volume{}, e
	}
	if vol.FS, e = parseFS(p, r.FsType, kind); e != nil {
		return Volume{}, e
	}
	if kind != KindSMB {
		if vol.RootAccess, e = parseVolumeRootAccess(p, o); e != nil {
			return Volume{}, e
		}
	}
	switch kind {
	case KindDisk:
		vol.Disk, e = parseDisk(p, r.VolumeID, o)
	case KindSMB:
		vol.SMB, e = parseSMB(p, sec, o)
	case KindISCSI:
		vol.ISCSI, e = parseISCSI(p, sec)
	}
	if e != nil {
		return Volume{}, e
	}
	return vol, nil
}

// mergeContexts folds both maps and lays publish_context over
// volume_context.
func mergeContexts(vc, pc map[string]string) (params, *Error) {
	p, e := foldMap(vc, false, "volume_context")
	if e != nil {
		return nil, e
	}
	pp, e := foldMap(pc, false, "publish_context")
	if e != nil {
		return nil, e
	}
	for k, v := range pp {
		v.published = true
		p[k] = v
	}
	return p, nil
}

// applyAlias moves the vendor key's entry onto the target key. The entry
// keeps the vendor spelling, so later errors name the key the user wrote.
func applyAlias(p params, a alias) *Error {
	ve, ok := p[a.vendor]
	if !ok {
		return nil
	}
	tf := fold(a.target.Name)
	if te, ok := p[tf]; ok && te.val != ve.val {
		return errorf(ve.key, "is an alias of %s and conflicts with %q: %q differs from %q",
			a.target.Name, te.key, ve.val, te.val)
	}
	delete(p, a.vendor)
	ve.preset = a.preset
	p[tf] = ve
	return nil
}

func chooseKind(p params, o Options) (Kind, kindChoice, *Error) {
	if e, ok := p.get(keyBackend); ok {
		k, ok := kindOf(e.val)
		if !ok {
			return "", 0, errorf(e.key, "%q is not disk, smb or iscsi", e.val)
		}
		return k, kindExplicit, nil
	}
	if o.DefaultKind != "" {
		k, ok := kindOf(string(o.DefaultKind))
		if !ok {
			return "", 0, errorf(keyBackend, "is not set and the node default backend %q is not disk, smb or iscsi", o.DefaultKind)
		}
		return k, kindDefault, nil
	}
	switch {
	case p.has(keySource):
		return KindSMB, kindInferred, nil
	case p.has(keyIQN):
		return KindISCSI, kindInferred, nil
	}
	return KindDisk, kindInferred, nil
}

// checkTypos refuses an unknown key that is probably a typo of a contract
// key (typo.go): in volume_context, where a user writes it, and in the
// node-stage secret. publish_context is the controller's, which the user
// cannot change: its unknown keys are a vendor's.
func checkTypos(p, sec params) *Error {
	known := make(map[string]KeyDoc, len(contextKeys)+len(secretKeys))
	for f, k := range contextKeys {
		known[f] = k
	}
	for f, k := range secretKeys {
		known[f] = k
	}
	for _, f := range sortedFolded(p) {
		e := p[f]
		if _, ok := known[f]; ok || e.published || strings.HasPrefix(f, csiPrefix) || presetKeys[f] != "" {
			continue
		}
		if names := didYouMean(e.key, known); names != nil {
			return errorf(e.key, "is not a key of the contract; %s (if it is your controller's own key, read it as a contract key with --context-alias)", suggestion(names))
		}
	}
	for _, f := range sortedFolded(sec) {
		if _, ok := secretKeys[f]; ok {
			continue
		}
		if names := didYouMean(sec[f].key, secretKeys); names != nil {
			return errorf(sec[f].key, "is not a node-stage secret key of the contract; %s", suggestion(names))
		}
	}
	return nil
}

// checkSecretKinds refuses a volume whose backend was not chosen with the
// backend key when its node-stage secret carries keys of another backend:
// SMB credentials on a disk volume found by its volume ID, CHAP secrets
// on a volume without iqn. The user meant another backend than the one
// inferred.
//
// username, password and domain are also the names vendors give the
// credentials of their own arrays, and some name that Secret as the
// node-stage secret of every volume (the HPE CSI Driver's StorageClasses
// name hpe-backend, with serviceName, servicePort, backend, username and
// password, for every operation:
// https://scod.hpedev.io/csi_driver/container_storage_provider/hpe_alletra_6000/examples/storageclass.yaml).
// They say nothing of the backend of a volume whose own keys identify it
// (iqn, a disk selector): there they are a vendor's, never refused. Only
// a disk volume that no key identifies, which would be found by its volume
// ID, is refused for them: the case of a misspelt source.
func checkSecretKinds(p, sec params, kind Kind, how kindChoice) *Error {
	if how == kindExplicit {
		return nil
	}
	var foreign []string
	var backends []Kind
	for _, f := range sortedFolded(sec) {
		if k, ok := secretKeys[f]; ok && !appliesTo(k.Backends, kind) {
			if vendorNamed[f] && identified(p, kind) {
				continue
			}
			foreign = append(foreign, sec[f].key)
			if !slices.Contains(backends, k.Backends[0]) {
				backends = append(backends, k.Backends...)
			}
		}
	}
	if len(foreign) == 0 {
		return nil
	}
	return errorf(foreign[0], "the node-stage secret carries %s, keys of %s, %s",
		strings.Join(foreign, ", "), backendsText(backends), kindReason(p, kind, how))
}

// vendorNamed are the secret keys (folded) whose names vendors also give
// credentials of their own (checkSecretKinds).
var vendorNamed = map[string]bool{fold(keyUsername): true, fold(keyPassword): true, fold(keyDomain): true}

// identified reports whether keys of the volume identify its storage for
// kind: an iscsi volume by its iqn, a disk volume by a disk selector
// (rather than by its volume ID).
func identified(p params, kind Kind) bool {
	switch kind {
	case KindISCSI:
		return p.has(keyIQN)
	case KindDisk:
		for f := range p {
			if k, ok := contextKeys[f]; ok && slices.Equal(k.Backends, onlyDisk) {
				return true
			}
		}
	}
	return false
}

// sortedFolded returns the folded keys of p, sorted.
func sortedFolded(p params) []string {
	out := make([]string, 0, len(p))
	for f := range p {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

// checkKeys rejects keys of other backends and secret keys placed in the
// contexts, and returns the unknown keys (sorted, as written). The keys an
// enabled preset reads itself are known on disk volumes.
func checkKeys(p params, kind Kind, how kindChoice, o Options) ([]string, *Error) {
	var ignored []string
	for _, f := range sortedFolded(p) {
		e := p[f]
		if k, ok := contextKeys[f]; ok {
			if !appliesTo(k.Backends, kind) {
				if e.published {
					// A controller's publish_context may carry a key that
					// means something else here (Azure Disk's "LUN" folds
					// to iscsi's "lun"): ignore it rather than fail a
					// volume the user cannot change.
					ignored = append(ignored, e.key)
					continue
				}
				return nil, errorf(e.key, "belongs to %s, %s%s", backendsText(k.Backends), kindReason(p, kind, how), keyNote(k, kind))
			}
			continue
		}
		if strings.HasPrefix(f, csiPrefix) {
			continue
		}
		if pr, ok := presetKeys[f]; ok && kind == KindDisk && o.hasPreset(pr) {
			continue
		}
		if k, ok := secretKeys[f]; ok {
			if appliesTo(k.Backends, kind) {
				return nil, errorf(e.key, "is read from the node-stage secret, not from volume_context or publish_context")
			}
			if how != kindExplicit && !e.published {
				// A credential of another backend says the user meant
				// that backend; an inferred kind would silently be wrong.
				return nil, errorf(e.key, "is a node-stage secret key of %s (and belongs in the secret, not in volume_context), %s",
					backendsText(k.Backends), kindReason(p, kind, how))
			}
		}
		ignored = append(ignored, e.key)
	}
	sort.Strings(ignored)
	return ignored, nil
}

// kindReason says why the volume has the kind it has.
func kindReason(p params, kind Kind, how kindChoice) string {
	switch how {
	case kindExplicit:
		e, _ := p.get(keyBackend)
		return "but " + e.key + " is " + quote(e.val)
	case kindDefault:
		return "but backend is not set and the node default backend is " + string(kind)
	}
	switch kind {
	case KindSMB:
		return "but source makes this an smb volume (set backend to choose)"
	case KindISCSI:
		return "but iqn makes this an iscsi volume (set backend to choose)"
	}
	return "but without source or iqn this is a disk volume (set backend to choose)"
}

// keyNote says, for a key refused for a kind, why it cannot apply there.
func keyNote(k KeyDoc, kind Kind) string {
	if k.Name == keyVolumeRootAccess && kind == KindSMB {
		return "; the SMB server owns a share's ACL"
	}
	return ""
}
