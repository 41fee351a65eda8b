package contract

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winacl"
)

// Right is a right volumeRootAccess grants.
type Right string

// Rights, with the access masks icacls writes for RX, M and F
// (pkg/winacl).
const (
	RightRead   Right = "read"
	RightModify Right = "modify"
	RightFull   Right = "full"
)

// Mask is the access mask of the right.
func (r Right) Mask() uint32 {
	switch r {
	case RightRead:
		return winacl.ReadExecute
	case RightModify:
		return winacl.Modify
	case RightFull:
		return winacl.FullControl
	}
	return 0
}

// Names of accounts volumeRootAccess maps to fixed SIDs, never asking
// Windows: the container accounts exist only inside a container, so the
// host cannot resolve them (and would resolve a local account of the same
// name to that account); the built-in groups have localised names
// ("Benutzer", "Utilisateurs") but fixed SIDs. Sources: for the container
// accounts moby/moby pkg/idtools/idtools_windows.go (ContainerUserSidString,
// ContainerAdministratorSidString) and moby/buildkit#5791, whose
// `whoami /user` in a process-isolated container shows
// S-1-5-93-2-2 for User Manager\ContainerUser (Microsoft does not document
// these SIDs); for the groups, Well-known SIDs
// (https://learn.microsoft.com/en-us/windows/win32/secauthz/well-known-sids).
var namedPrincipals = []struct{ name, sid string }{
	{"ContainerUser", "S-1-5-93-2-2"},
	{"ContainerAdministrator", "S-1-5-93-2-1"},
	{"Users", winacl.SIDUsers},
	{"Authenticated Users", winacl.SIDAuthenticatedUsers},
	{"Administrators", winacl.SIDAdministrators},
	{"SYSTEM", winacl.SIDLocalSystem},
	{"Everyone", winacl.SIDEveryone},
	{`User Manager\ContainerUser`, "S-1-5-93-2-2"},
	{`User Manager\ContainerAdministrator`, "S-1-5-93-2-1"},
	{`BUILTIN\Users`, winacl.SIDUsers},
	{`NT AUTHORITY\Authenticated Users`, winacl.SIDAuthenticatedUsers},
	{`BUILTIN\Administrators`, winacl.SIDAdministrators},
	{`NT AUTHORITY\SYSTEM`, winacl.SIDLocalSystem},
}

// NamedPrincipal returns the SID volumeRootAccess gives a documented name
// (any case), and false for other names.
func NamedPrincipal(name string) (string, bool) {
	for _, p := range namedPrincipals {
		if strings.EqualFold(p.name, name) {
			return p.sid, true
		}
	}
	return "", false
}

// PrincipalName returns the documented name of a SID volumeRootAccess maps
// a name to ("ContainerUser" for S-1-5-93-2-2), or "".
func PrincipalName(sid string) string {
	for _, p := range namedPrincipals {
		if p.sid == sid {
			return p.name
		}
	}
	return ""
}

// accountForbidden are the characters Windows does not allow in user and
// group names (besides the separators of the parameter itself).
const accountForbidden = `"/[]:;|=,+*?<>`

// RootGrant is one entry of volumeRootAccess.
type RootGrant struct {
	// Principal is how the entry names the account: a documented name in
	// its documented spelling, a SID in canonical form, or an account
	// name as written.
	Principal string
	// SID is the principal's SID, empty for an account name Windows
	// resolves when the volume is staged.
	SID   string
	Right Right
}

// String is the entry as volumeRootAccess writes it: "ContainerUser:modify".
func (g RootGrant) String() string { return g.Principal + ":" + string(g.Right) }

// ACE is the entry the grant adds to a volume root's DACL: allow, inherited
// by files and directories below (OI|CI). The SID must be known.
func (g RootGrant) ACE() host.ACE {
	return host.ACE{Type: host.ACEAccessAllowed, Flags: host.ACEInheritedBelow, Mask: g.Right.Mask(), SID: g.SID}
}

// RootAccess is a parsed volumeRootAccess: the allow entries to add to the
// root directory of a disk or iSCSI volume's file system.
type RootAccess struct {
	Grants []RootGrant
	// Key is where the grants come from, for errors: the volume_context
	// key as written, or the node flag --volume-root-access.
	Key string
}

// String is the canonical parameter value: the entries joined by ";",
// or "" for none. ParseRootAccess reads it back.
func (a RootAccess) String() string {
	parts := make([]string, len(a.Grants))
	for i, g := range a.Grants {
		parts[i] = g.String()
	}
	return strings.Join(parts, ";")
}

// Errorf is a contract error naming the parameter and the entry.
func (a RootAccess) Errorf(g RootGrant, format string, args ...any) error {
	return errorf(a.key(), "entry %s: %s", show(g.String()), fmt.Sprintf(format, args...))
}

func (a RootAccess) key() string {
	if a.Key == "" {
		return keyVolumeRootAccess
	}
	return a.Key
}

// NodeRootAccessFlag names the node-wide default of volumeRootAccess in
// errors.
const NodeRootAccessFlag = "--volume-root-access"

// noneValue is the value that grants nothing, overriding the node default.
const noneValue = "none"

// ParseRootAccess parses a volumeRootAccess value: "none", or entries
// <principal>:<right> separated by ";". key names the parameter in errors.
func ParseRootAccess(key, value string) (RootAccess, error) {
	a, e := parseRootAccess(key, value)
	return a, asError(e)
}

func parseRootAccess(key, value string) (RootAccess, *Error) {
	a := RootAccess{Key: key}
	value = strings.TrimSpace(value)
	if strings.EqualFold(value, noneValue) {
		return a, nil
	}
	if value == "" {
		return a, errorf(a.key(), `is empty; want entries <principal>:<right> separated by ";", or "none"`)
	}
	var written []string // the entries of a.Grants as written, for errors
	for _, raw := range strings.Split(value, ";") {
		entry := strings.TrimSpace(raw)
		if entry == "" {
			return RootAccess{}, errorf(a.key(), "%q has an empty entry; entries are <principal>:<right> separated by \";\", none empty", value)
		}
		g, e := parseGrant(a.key(), entry)
		if e != nil {
			return RootAccess{}, e
		}
		i := a.samePrincipal(g)
		switch {
		case i < 0:
			a.Grants, written = append(a.Grants, g), append(written, entry)
		case a.Grants[i].Right != g.Right:
			return RootAccess{}, errorf(a.key(), "entry %s: %s is also granted %s by entry %s; give each principal one right",
				show(entry), g.Principal, a.Grants[i].Right, show(written[i]))
		}
	}
	return a, nil
}

// parseGrant parses one entry.
func parseGrant(key, entry string) (RootGrant, *Error) {
	bad := func(format string, args ...any) *Error {
		return errorf(key, "entry %s: %s", show(entry), fmt.Sprintf(format, args...))
	}
	i := strings.LastIndexByte(entry, ':')
	if i < 0 {
		return RootGrant{}, bad("want <principal>:<right>, for example ContainerUser:modify")
	}
	principal, right := strings.TrimSpace(entry[:i]), Right(strings.ToLower(strings.TrimSpace(entry[i+1:])))
	switch right {
	case RightRead, RightModify, RightFull:
	default:
		return RootGrant{}, bad("right %q is not read, modify or full", entry[i+1:])
	}
	g := RootGrant{Principal: principal, Right: right}
	switch {
	case principal == "":
		return RootGrant{}, bad("no principal before the ':'")
	case len(principal) > 2 && strings.EqualFold(principal[:2], "S-") && isDigits(principal[2:3]):
		sid, err := winacl.CanonicalSID(principal)
		// A SID without subauthorities names an authority (S-1-5 is the
		// NT authority), never an account.
		if err != nil || strings.Count(sid, "-") < 3 {
			return RootGrant{}, bad("%s is not a valid SID (S-1-<authority>-<subauthority>..., for example S-1-5-93-2-2)", show(principal))
		}
		g.Principal, g.SID = sid, sid
	default:
		for _, p := range namedPrincipals {
			if strings.EqualFold(p.name, principal) {
				g.Principal, g.SID = p.name, p.sid
			}
		}
		if g.SID != "" {
			break
		}
		if strings.IndexFunc(principal, unicode.IsControl) >= 0 || strings.ContainsAny(principal, accountForbidden) {
			return RootGrant{}, bad("account name %q contains a character Windows does not allow in names (%s or a control character)", principal, accountForbidden)
		}
		if len(principal) > 256 {
			return RootGrant{}, bad("account name is %d bytes long; Windows names are shorter", len(principal))
		}
	}
	return g, nil
}

// samePrincipal returns the index of the grant that names g's principal
// (the same SID, or for an account name the same name in any case), or -1.
func (a RootAccess) samePrincipal(g RootGrant) int {
	for i, have := range a.Grants {
		if have.SID != "" && have.SID == g.SID ||
			have.SID == "" && g.SID == "" && strings.EqualFold(have.Principal, g.Principal) {
			return i
		}
	}
	return -1
}

// Resolved returns the grants with the SIDs of account names filled in
// from sids (by Principal, as Windows resolved them at stage), checking
// again that no principal gets two rights: an account name may resolve
// to the SID of another entry.
func (a RootAccess) Resolved(sids map[string]string) (RootAccess, error) {
	out := RootAccess{Key: a.Key}
	for _, g := range a.Grants {
		if g.SID == "" {
			g.SID = sids[g.Principal]
			if g.SID == "" {
				return RootAccess{}, a.Errorf(g, "account %s was not resolved", show(g.Principal))
			}
		}
		var e *Error
		for _, have := range out.Grants {
			if have.SID == g.SID && have.Right != g.Right {
				e = errorf(a.key(), "entry %s: it names the same account (%s) as entry %s, with another right; give each principal one right",
					show(g.String()), g.SID, show(have.String()))
			}
		}
		if e != nil {
			return RootAccess{}, e
		}
		if !containsSID(out.Grants, g.SID) {
			out.Grants = append(out.Grants, g)
		}
	}
	return out, nil
}

func containsSID(gs []RootGrant, sid string) bool {
	for _, g := range gs {
		if g.SID == sid {
			return true
		}
	}
	return false
}

// parseVolumeRootAccess reads volumeRootAccess for a disk or iSCSI volume,
// or the node default when the volume sets none.
func parseVolumeRootAccess(p params, o Options) (RootAccess, *Error) {
	if e, ok := p.get(keyVolumeRootAccess); ok {
		return parseRootAccess(e.key, e.val)
	}
	if o.DefaultRootAccess == "" {
		return RootAccess{}, nil
	}
	return parseRootAccess(NodeRootAccessFlag, o.DefaultRootAccess)
}

// show quotes a value for an error: in plain double quotes, so that a
// Windows name keeps its single backslashes, unless it holds a control
// character.
func show(s string) string {
	if strings.IndexFunc(s, unicode.IsControl) >= 0 {
		return strconv.Quote(s)
	}
	return quote(s)
}
