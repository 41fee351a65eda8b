package sim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/wincsi/csi-windows-node/internal/bytesize"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winacl"
)

// Setup is a simulated host and network a user declares (the plugin's
// --sim-config file, docs/sim-config.md): disks attached to the host, SMB
// shares and iSCSI targets the network serves. ParseSetup reads one;
// Config.Setup applies it when the sim opens.
type Setup struct {
	Disks   []SetupDisk
	Shares  []ShareSpec
	Targets []TargetSpec
	// Accounts are account names the host resolves besides the built-in
	// ones (for volumeRootAccess entries that name one).
	Accounts []AccountState
	// Windows picks the simulated Windows' answers where Windows' own are
	// uncertain (Config.Windows, which wins when set). It is not state:
	// it applies while the sim is open.
	Windows WindowsAnswers
}

// LoadSetup reads and checks a setup file (see ParseSetup).
func LoadSetup(path string) (*Setup, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseSetup(data)
}

// ParseSetup parses a setup file: YAML with the keys of
// docs/sim-config.md and no others. Errors name the line and the entry
// ("line 7: shares[0].users[1]: unknown key \"passwd\"") and never quote a
// password or secret. It checks what can be checked without a host: values,
// and entries declared twice; conflicts with a host's state are found when
// the setup is applied.
func ParseSetup(data []byte) (*Setup, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) { // empty file, or comments only
			return &Setup{}, nil
		}
		return nil, &SetupError{Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		line := extra.Line
		if len(extra.Content) > 0 {
			line = extra.Content[0].Line
		}
		return nil, &SetupError{Line: line, Msg: "a second YAML document; want one"}
	case !errors.Is(err, io.EOF):
		return nil, &SetupError{Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return &Setup{}, nil
	}
	p := &setupParser{}
	s := &Setup{}
	p.object(root, "", fields{
		"disks": func(n *yaml.Node, at string) {
			p.list(n, at, func(n *yaml.Node, at string) { s.Disks = append(s.Disks, p.disk(n, at)) })
		},
		"shares": func(n *yaml.Node, at string) {
			p.list(n, at, func(n *yaml.Node, at string) { s.Shares = append(s.Shares, p.share(n, at)) })
		},
		"targets": func(n *yaml.Node, at string) {
			p.list(n, at, func(n *yaml.Node, at string) { s.Targets = append(s.Targets, p.target(n, at)) })
		},
		"accounts": func(n *yaml.Node, at string) {
			p.list(n, at, func(n *yaml.Node, at string) { s.Accounts = append(s.Accounts, p.account(n, at)) })
		},
		"windows": func(n *yaml.Node, at string) { s.Windows = p.windows(n, at) },
	})
	if p.err == nil {
		p.duplicates(s)
	}
	if p.err != nil {
		return nil, p.err
	}
	return s, nil
}

// SetupError is an error in a setup file: a YAML error, an unknown key, a
// value that does not parse, or an entry declared twice.
type SetupError struct {
	Line  int    // 0 when the error concerns two entries
	Entry string // the entry or key: "shares[0].users[1]"; "" for the file
	Msg   string
}

func (e *SetupError) Error() string {
	msg := e.Msg
	if e.Entry != "" {
		msg = e.Entry + ": " + msg
	}
	if e.Line > 0 {
		msg = fmt.Sprintf("line %d: %s", e.Line, msg)
	}
	return msg
}

// setupParser walks the YAML nodes, keeping the first error.
type setupParser struct{ err error }

// fields maps the keys a mapping may hold to their decoders.
type fields map[string]func(n *yaml.Node, at string)

func (p *setupParser) fail(n *yaml.Node, at, format string, args ...any) {
	if p.err != nil {
		return
	}
	p.err = &SetupError{Line: n.Line, Entry: at, Msg: fmt.Sprintf(format, args...)}
}

func keyPath(at, key string) string {
	if at == "" {
		return key
	}
	return at + "." + key
}

// resolve follows YAML aliases.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// object decodes a mapping whose keys must all be in fs; required keys
// missing are errors.
func (p *setupParser) object(n *yaml.Node, at string, fs fields, required ...string) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		p.fail(n, at, "want a mapping of keys (%s)", strings.Join(slices.Sorted(maps.Keys(fs)), ", "))
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		dec, ok := fs[k.Value]
		switch {
		case k.Kind != yaml.ScalarNode:
			p.fail(k, at, "a key must be a plain word")
		case !ok:
			p.fail(k, at, "unknown key %q (known: %s)", k.Value, strings.Join(slices.Sorted(maps.Keys(fs)), ", "))
		case seen[k.Value]:
			p.fail(k, at, "key %q given twice", k.Value)
		default:
			seen[k.Value] = true
			dec(v, keyPath(at, k.Value))
		}
	}
	for _, r := range required {
		if !seen[r] {
			p.fail(n, at, "%q is required", r)
		}
	}
}

// list decodes a sequence, each item at "<at>[i]"; null is an empty list.
func (p *setupParser) list(n *yaml.Node, at string, item func(n *yaml.Node, at string)) {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return
	}
	if n.Kind != yaml.SequenceNode {
		p.fail(n, at, "want a list")
		return
	}
	for i, c := range n.Content {
		item(c, fmt.Sprintf("%s[%d]", at, i))
	}
}

// scalar returns a scalar's text.
func (p *setupParser) scalar(n *yaml.Node, at string) (string, bool) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.fail(n, at, "want a value")
		return "", false
	}
	return n.Value, true
}

// str decodes a non-empty string without control characters or
// surrounding white space.
func (p *setupParser) str(n *yaml.Node, at string, secret bool) string {
	v, ok := p.scalar(n, at)
	if !ok {
		return ""
	}
	shown := strconv.Quote(v)
	if secret {
		shown = "the value"
	}
	switch {
	case v == "":
		p.fail(n, at, "must not be empty")
	case strings.TrimSpace(v) != v:
		p.fail(n, at, "%s has white space at its ends", shown)
	case strings.IndexFunc(v, unicode.IsControl) >= 0:
		p.fail(n, at, "%s holds a control character", shown)
	}
	return v
}

func (p *setupParser) size(n *yaml.Node, at string) uint64 {
	v, ok := p.scalar(n, at)
	if !ok {
		return 0
	}
	s, err := bytesize.Parse(v)
	if err != nil {
		p.fail(n, at, "%q: %v", v, err)
		return 0
	}
	if s%sectorSize != 0 {
		p.fail(n, at, "%q is not a multiple of %d bytes (a sector)", v, sectorSize)
	}
	return s
}

func (p *setupParser) lun(n *yaml.Node, at string) uint32 {
	v, ok := p.scalar(n, at)
	if !ok {
		return 0
	}
	l, err := strconv.ParseUint(v, 10, 16)
	if err != nil {
		p.fail(n, at, "%q: want a LUN, 0 to 65535", v)
	}
	return uint32(l)
}

func (p *setupParser) boolean(n *yaml.Node, at string) bool {
	v, ok := p.scalar(n, at)
	if !ok {
		return false
	}
	switch v {
	case "true":
		return true
	case "false":
		return false
	}
	p.fail(n, at, "%q: want true or false", v)
	return false
}

// page83 accepts hex digits, dashes allowed, and returns them in the form
// Windows reports binary identifiers in: lower case, no dashes.
func (p *setupParser) page83(n *yaml.Node, at string) string {
	v := p.str(n, at, false)
	h := strings.ToLower(strings.ReplaceAll(v, "-", ""))
	if v != "" && (len(h) < 16 || len(h)%2 != 0 || strings.Trim(h, "0123456789abcdef") != "") {
		p.fail(n, at, "%q: want an even number (16 or more) of hex digits", v)
	}
	return h
}

// windows decodes the answers of the simulated Windows (WindowsAnswers).
func (p *setupParser) windows(n *yaml.Node, at string) WindowsAnswers {
	var w WindowsAnswers
	p.object(n, at, fields{
		"offlineReadOnly": func(n *yaml.Node, at string) {
			v := p.str(n, at, false)
			w.OfflineReadOnly = v
			if v != "" && checkWindowsAnswers(w) != nil {
				p.fail(n, at, "%q: want %s or %s", v, OfflineReadOnlyAccept, OfflineReadOnlyRefuse)
			}
		},
		"volumeRootACL": func(n *yaml.Node, at string) {
			v := p.str(n, at, false)
			if v != "" && !ValidRootACL(v) {
				p.fail(n, at, "%q: want %s or %s", v, RootACLServer, RootACLClient)
			}
			w.VolumeRootACL = v
		},
		"secondPersistentLogin": func(n *yaml.Node, at string) {
			v := p.str(n, at, false)
			w.SecondPersistentLogin = v
			if v != "" && checkWindowsAnswers(WindowsAnswers{SecondPersistentLogin: v}) != nil {
				p.fail(n, at, "%q: want %s or %s", v, SecondPersistentLoginReplace, SecondPersistentLoginAdd)
			}
		},
	})
	return w
}

func (p *setupParser) account(n *yaml.Node, at string) AccountState {
	var a AccountState
	p.object(n, at, fields{
		"name": func(n *yaml.Node, at string) {
			a.Name = p.str(n, at, false)
			if strings.ContainsAny(a.Name, `"/[]:;|=,+*?<>`) {
				p.fail(n, at, "%q: account names cannot contain any of \"/[]:;|=,+*?<>", a.Name)
			}
		},
		"sid": func(n *yaml.Node, at string) {
			v := p.str(n, at, false)
			if v == "" {
				return
			}
			sid, err := winacl.CanonicalSID(v)
			if err != nil {
				p.fail(n, at, "%q is not a SID (S-1-5-21-...)", v)
			}
			a.SID = sid
		},
	}, "name", "sid")
	return a
}

func (p *setupParser) share(n *yaml.Node, at string) ShareSpec {
	sh := ShareSpec{Users: map[string]string{}}
	encrypted := true
	p.object(n, at, fields{
		"path": func(n *yaml.Node, at string) {
			v := p.str(n, at, false)
			if v == "" {
				return
			}
			server, share, dir, err := host.ParseSharePath(v)
			switch {
			case err != nil:
				p.fail(n, at, "%v", err)
			case dir != "":
				p.fail(n, at, `%q names a directory of share \\%s\%s; want the share root`, v, server, share)
			}
			sh.Server, sh.Share = server, share
		},
		"encrypted": func(n *yaml.Node, at string) { encrypted = p.boolean(n, at) },
		"capacity":  func(n *yaml.Node, at string) { sh.Capacity = p.size(n, at) },
		"users": func(n *yaml.Node, at string) {
			p.list(n, at, func(n *yaml.Node, at string) {
				var name, password string
				p.object(n, at, fields{
					"name":     func(n *yaml.Node, at string) { name = p.str(n, at, false) },
					"password": func(n *yaml.Node, at string) { password = p.str(n, at, true) },
				}, "name", "password")
				for other := range sh.Users {
					if strings.EqualFold(other, name) {
						p.fail(n, at, "user %q is declared twice (user names compare without case)", name)
					}
				}
				sh.Users[name] = password
			})
		},
	}, "path", "users")
	if p.err == nil && len(sh.Users) == 0 {
		p.fail(n, at, "users: declare at least one user; the simulated server refuses anonymous mappings")
	}
	sh.NoEncryption = !encrypted
	return sh
}

func (p *setupParser) target(n *yaml.Node, at string) TargetSpec {
	var t TargetSpec
	var chapSecret string
	p.object(n, at, fields{
		"iqn": func(n *yaml.Node, at string) {
			v := p.str(n, at, false)
			if v == "" {
				return
			}
			iqn, err := host.ValidateIQN(v)
			if err != nil {
				p.fail(n, at, "%v", err)
			}
			t.IQN = iqn
		},
		"portals": func(n *yaml.Node, at string) {
			p.list(n, at, func(n *yaml.Node, at string) {
				v := p.str(n, at, false)
				if v == "" {
					return
				}
				pt, err := host.ParsePortal(v)
				if err != nil {
					p.fail(n, at, "%v", err)
					return
				}
				if slices.ContainsFunc(t.Portals, func(o host.Portal) bool { return portalKey(o) == portalKey(pt) }) {
					p.fail(n, at, "portal %s is declared twice", portalKey(pt))
				}
				t.Portals = append(t.Portals, pt)
			})
			if p.err == nil && len(t.Portals) == 0 {
				p.fail(n, at, "declare at least one portal")
			}
		},
		"luns": func(n *yaml.Node, at string) {
			p.list(n, at, func(n *yaml.Node, at string) {
				var l LUNSpec
				p.object(n, at, fields{
					"lun":    func(n *yaml.Node, at string) { l.LUN = p.lun(n, at) },
					"size":   func(n *yaml.Node, at string) { l.Size = p.size(n, at) },
					"serial": func(n *yaml.Node, at string) { l.Serial = p.str(n, at, false) },
					"page83": func(n *yaml.Node, at string) { l.Page83 = p.page83(n, at) },
				}, "lun")
				if slices.ContainsFunc(t.LUNs, func(o LUNSpec) bool { return o.LUN == l.LUN }) {
					p.fail(n, at, "LUN %d is declared twice", l.LUN)
				}
				t.LUNs = append(t.LUNs, l)
			})
		},
		"chap": func(n *yaml.Node, at string) {
			t.CHAP = p.chap(n, at)
			if t.CHAP != nil {
				chapSecret = t.CHAP.Secret.Reveal()
			}
		},
		"mutualSecret": func(n *yaml.Node, at string) {
			t.MutualSecret = p.str(n, at, true)
			p.chapSecretLength(n, at, t.MutualSecret)
		},
		"discoveryChap": func(n *yaml.Node, at string) { t.DiscoveryCHAP = p.chap(n, at) },
	}, "iqn", "portals")
	switch {
	case t.MutualSecret != "" && t.CHAP == nil:
		p.fail(n, at, "mutualSecret needs chap: mutual CHAP is session CHAP in both directions")
	case t.MutualSecret != "" && t.MutualSecret == chapSecret:
		p.fail(n, at, "mutualSecret must differ from chap.secret (RFC 3720 §8.2.1)")
	}
	return t
}

func (p *setupParser) chap(n *yaml.Node, at string) *host.CHAP {
	var user, secret string
	p.object(n, at, fields{
		"username": func(n *yaml.Node, at string) { user = p.str(n, at, false) },
		"secret": func(n *yaml.Node, at string) {
			secret = p.str(n, at, true)
			p.chapSecretLength(n, at, secret)
		},
	}, "username", "secret")
	return &host.CHAP{User: user, Secret: host.NewSecret(secret)}
}

// chapSecretLength enforces the lengths the Windows initiator accepts
// (host.MinCHAPSecret to host.MaxCHAPSecret bytes); a longer or shorter
// secret could never be used to log in.
func (p *setupParser) chapSecretLength(n *yaml.Node, at, s string) {
	if s != "" && (len(s) < host.MinCHAPSecret || len(s) > host.MaxCHAPSecret) {
		p.fail(n, at, "the secret is %d bytes long; CHAP secrets are %d to %d bytes", len(s), host.MinCHAPSecret, host.MaxCHAPSecret)
	}
}

// duplicates finds entries declared twice in one file.
func (p *setupParser) duplicates(s *Setup) {
	type key struct{ what, value string }
	seen := map[key]string{}
	claim := func(what, value, at string) {
		k := key{what, value}
		if first, dup := seen[k]; dup && p.err == nil {
			p.err = &SetupError{Entry: at, Msg: fmt.Sprintf("declares the same %s as %s", what, first)}
		}
		seen[k] = at
	}
	p.claimDisks(s.Disks, claim)
	for i, sh := range s.Shares {
		claim("share", strings.ToLower(uncRoot(sh.Server, sh.Share)), fmt.Sprintf("shares[%d] (%s)", i, uncRoot(sh.Server, sh.Share)))
	}
	for i, t := range s.Targets {
		claim("iqn", t.IQN, fmt.Sprintf("targets[%d] (%s)", i, t.IQN))
	}
	for i, a := range s.Accounts {
		claim("account name", strings.ToLower(a.Name), fmt.Sprintf("accounts[%d] (%s)", i, a.Name))
	}
}

// applySetup adds what setup declares to st and returns one line per entry
// saying what it did. An entry st already has is kept as it is when it
// agrees with the declaration; one that disagrees is an error naming the
// entry, and then st is left untouched: every entry is checked before any
// is added.
func (s *Sim) applySetup(st *State, setup *Setup) ([]string, error) {
	plan, err := st.planDisks(setup.Disks)
	if err != nil {
		return nil, err
	}
	for i, sh := range setup.Shares {
		step, err := s.planShare(st, sh)
		if err != nil {
			return nil, fmt.Errorf("shares[%d] (%s): %w", i, uncRoot(sh.Server, sh.Share), err)
		}
		plan = append(plan, step)
	}
	for i, t := range setup.Targets {
		step, err := st.planTarget(t)
		if err != nil {
			return nil, fmt.Errorf("targets[%d] (%s): %w", i, t.IQN, err)
		}
		plan = append(plan, step)
	}
	for i, a := range setup.Accounts {
		step, err := st.planAccount(a)
		if err != nil {
			return nil, fmt.Errorf("accounts[%d] (%s): %w", i, a.Name, err)
		}
		plan = append(plan, step)
	}
	done := make([]string, 0, len(plan))
	for _, step := range plan {
		done = append(done, step())
	}
	return done, nil
}

// planShare checks a declared share against st and returns the step that
// adds it, or the users it lacks. The share's contents directory is made
// here, so that the step cannot fail.
func (s *Sim) planShare(st *State, spec ShareSpec) (func() string, error) {
	name := uncRoot(spec.Server, spec.Share)
	if err := os.MkdirAll(s.shareDir(spec.Server, spec.Share), 0o750); err != nil {
		return nil, fmt.Errorf("share contents: %w", err)
	}
	have := st.share(spec.Server, spec.Share)
	if have == nil {
		return func() string {
			_ = s.addShare(st, spec) // its directory exists: cannot fail
			return fmt.Sprintf("share %s: added (users %s)", name, strings.Join(slices.Sorted(maps.Keys(spec.Users)), ", "))
		}, nil
	}
	if have.NoEncryption != spec.NoEncryption {
		return nil, conflictf("the simulated server has the share with encrypted: %t", !have.NoEncryption)
	}
	if spec.Capacity != 0 && have.Capacity != spec.Capacity {
		return nil, conflictf("the simulated server has the share with capacity %d, not %d", have.Capacity, spec.Capacity)
	}
	var added []string
	for _, user := range slices.Sorted(maps.Keys(spec.Users)) {
		u := have.user(user)
		switch {
		case u == nil:
			added = append(added, user)
		case u.PasswordSHA256 != st.hash(spec.Users[user]):
			return nil, conflictf("user %s: the password differs from the one the simulated server has", user)
		}
	}
	return func() string {
		sh := st.share(spec.Server, spec.Share)
		for _, user := range added {
			sh.Users = append(sh.Users, ShareUser{Name: user, PasswordSHA256: st.hash(spec.Users[user])})
		}
		if len(added) == 0 {
			return fmt.Sprintf("share %s: kept", name)
		}
		return fmt.Sprintf("share %s: kept, users added: %s", name, strings.Join(added, ", "))
	}, nil
}

// planTarget checks a declared target against st and returns the step that
// adds it, or the portals and LUNs it lacks.
func (st *State) planTarget(spec TargetSpec) (func() string, error) {
	have := st.target(spec.IQN)
	if have == nil {
		return func() string {
			_ = st.addTarget(spec) // LUNs are unique: ParseSetup checked
			luns := make([]string, len(spec.LUNs))
			for i, l := range spec.LUNs {
				luns[i] = strconv.Itoa(int(l.LUN))
			}
			return fmt.Sprintf("target %s: added (LUNs %s)", spec.IQN, strings.Join(luns, ", "))
		}, nil
	}
	if err := st.sameCHAP("chap", have.CHAPUser, have.CHAPSecretSHA256, spec.CHAP); err != nil {
		return nil, err
	}
	if err := st.sameCHAP("discoveryChap", have.DiscoveryCHAPUser, have.DiscoveryCHAPSecretSHA256, spec.DiscoveryCHAP); err != nil {
		return nil, err
	}
	switch {
	case (have.MutualSecretSHA256 == "") != (spec.MutualSecret == ""):
		return nil, conflictf("mutualSecret: the simulated target has %s", setOrNot(have.MutualSecretSHA256 != ""))
	case spec.MutualSecret != "" && have.MutualSecretSHA256 != st.hash(spec.MutualSecret):
		return nil, conflictf("mutualSecret differs from the one the simulated target has")
	}
	var portals []string
	for _, p := range spec.Portals {
		if k := portalKey(p); !slices.Contains(have.Portals, k) {
			portals = append(portals, k)
		}
	}
	var luns []LUNSpec
	for _, l := range spec.LUNs {
		i := slices.IndexFunc(have.LUNs, func(o LUNState) bool { return o.LUN == l.LUN })
		if i < 0 {
			luns = append(luns, l)
			continue
		}
		cur := have.LUNs[i]
		size := cur.Size
		for _, d := range st.Disks {
			if d.Target == have.IQN && d.LUN == l.LUN {
				size = max(d.Size, d.PendingSize)
			}
		}
		want := l.Size
		if want == 0 {
			want = DefaultDiskSize
		}
		switch {
		case size < want:
			return nil, conflictf("LUN %d: the simulated target's has %d bytes, fewer than the %d declared", l.LUN, size, want)
		case l.Serial != "" && l.Serial != cur.Serial:
			return nil, conflictf("LUN %d: the simulated target's has serial %s, not %s", l.LUN, cur.Serial, l.Serial)
		case l.Page83 != "" && l.Page83 != cur.Page83:
			return nil, conflictf("LUN %d: the simulated target's has page 83 identifier %s, not %s", l.LUN, cur.Page83, l.Page83)
		}
	}
	return func() string {
		t := st.target(spec.IQN)
		t.Portals = append(t.Portals, portals...)
		for _, l := range luns {
			ls := newLUN(t.IQN, l)
			// A LUN added to a target with a session appears at the next
			// rescan, as on a real initiator.
			if st.hasSession(t.IQN) {
				ls.Pending = 1
			}
			t.LUNs = append(t.LUNs, ls)
		}
		line := fmt.Sprintf("target %s: kept", spec.IQN)
		if len(portals) > 0 {
			line += ", portals added: " + strings.Join(portals, ", ")
		}
		for _, l := range luns {
			line += fmt.Sprintf(", LUN %d added", l.LUN)
		}
		return line
	}, nil
}

// planAccount checks a declared account against st and returns the step
// that adds it. A name the host resolves already, to the same SID, is
// kept; to another (a built-in name, or one declared before), it conflicts.
func (st *State) planAccount(a AccountState) (func() string, error) {
	if sid, ok := st.lookupAccount(a.Name); ok {
		if sid != a.SID {
			return nil, conflictf("the simulated host resolves %s to %s, not %s", a.Name, sid, a.SID)
		}
		return func() string { return fmt.Sprintf("account %s: kept (%s)", a.Name, a.SID) }, nil
	}
	return func() string {
		st.Accounts = append(st.Accounts, a)
		return fmt.Sprintf("account %s: added (%s)", a.Name, a.SID)
	}, nil
}

// sameCHAP checks declared CHAP credentials against a target's.
func (st *State) sameCHAP(key, haveUser, haveHash string, want *host.CHAP) error {
	switch {
	case (haveUser == "") != (want == nil):
		return conflictf("%s: the simulated target has %s", key, setOrNot(haveUser != ""))
	case want == nil:
		return nil
	case want.User != haveUser:
		return conflictf("%s: the simulated target's user name is %s, not %s", key, haveUser, want.User)
	case st.hash(want.Secret.Reveal()) != haveHash:
		return conflictf("%s: the secret differs from the one the simulated target has", key)
	}
	return nil
}

func setOrNot(set bool) string {
	if set {
		return "one set"
	}
	return "none"
}

// ErrSetupConflict means an entry of a Setup disagrees with the simulated
// host's state (a disk of another size, a user with another password, ...).
var ErrSetupConflict = errors.New("conflicts with the simulated host's state")

func conflictf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrSetupConflict, fmt.Sprintf(format, args...))
}
