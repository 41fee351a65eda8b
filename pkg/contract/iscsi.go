package contract

import (
	"encoding/json"
	"net/netip"
	"strconv"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// maxLUN is the largest iSCSI LUN accepted. Windows reports a disk's LUN
// in 16-bit fields (Win32_DiskDrive.SCSILogicalUnit is uint16), so a
// larger LUN could never be matched to a disk. Whether the Microsoft
// initiator and Storport reach LUNs above 254 at all is not verified.
const maxLUN = 65535

// CHAP secret lengths the Microsoft iSCSI initiator accepts, in bytes.
const (
	minCHAPSecret = 12
	maxCHAPSecret = 16
)

// maxIQNLen is the longest iSCSI name (RFC 3720 §3.2.6.1: 223 bytes).
const maxIQNLen = 223

func parseISCSI(p params, sec params) (*ISCSISpec, *Error) {
	spec := &ISCSISpec{}
	tp, ok := p.get(keyTargetPortal)
	if !ok {
		return nil, errorf(keyTargetPortal, "is required for iscsi volumes: address[:port]")
	}
	first, e := parsePortal(tp.key, tp.val, "")
	if e != nil {
		return nil, e
	}
	spec.Portals = []host.Portal{first}
	if ps, ok := p.get(keyPortals); ok {
		for _, s := range splitPortals(ps.val) {
			pt, e := parsePortal(ps.key, s, "entry ")
			if e != nil {
				return nil, e
			}
			if !containsPortal(spec.Portals, pt) {
				spec.Portals = append(spec.Portals, pt)
			}
		}
	}

	iq, ok := p.get(keyIQN)
	if !ok {
		return nil, errorf(keyIQN, "is required for iscsi volumes")
	}
	if spec.IQN, e = validateIQN(iq.key, iq.val); e != nil {
		return nil, e
	}
	lun, ok := p.get(keyLUN)
	if !ok {
		return nil, errorf(keyLUN, "is required for iscsi volumes")
	}
	n, e := parseUint(lun, maxLUN)
	if e != nil {
		return nil, e
	}
	spec.LUN = uint32(n)

	if spec.Multipath, e = p.boolOr(keyMultipath, len(spec.Portals) > 1); e != nil {
		return nil, e
	}
	if spec.Persistent, e = p.boolOr(keyPersistent, true); e != nil {
		return nil, e
	}
	if ip, ok := p.get(keyInitiatorPortal); ok {
		a, err := netip.ParseAddr(ip.val)
		if err != nil || a.Zone() != "" {
			return nil, errorf(ip.key, "%q is not an IP address without zone", ip.val)
		}
		spec.InitiatorPortal = a.String()
	}

	discovery, e := p.boolOr(keyDiscoveryCHAPAuth, false)
	if e != nil {
		return nil, e
	}
	session, e := p.boolOr(keySessionCHAPAuth, false)
	if e != nil {
		return nil, e
	}
	// CHAP secrets given while their *CHAPAuth flag is false are not
	// used, and not checked.
	if discovery {
		c, e := readCHAP(sec, keyDiscoveryUser, keyDiscoverySecret, keyDiscoveryCHAPAuth)
		if e != nil {
			return nil, e
		}
		spec.DiscoveryCHAP = &c
	}
	if session {
		if spec.SessionCHAP, e = readCHAP(sec, keySessionUser, keySessionSecret, keySessionCHAPAuth); e != nil {
			return nil, e
		}
		spec.SessionAuth = host.AuthOneWay
		// Mutual CHAP: the target proves itself with the initiator's
		// secret. node.session.auth.username_in is accepted but not
		// used: the Windows initiator ignores the reverse-CHAP user name
		// (csi-proxy's loopback test target says so: kubernetes-csi/csi-proxy@eeba470
		// integrationtests/iscsi_ps_scripts.go).
		if in, ok := sec.get(keySessionSecretIn); ok {
			if e := checkCHAPSecret(in); e != nil {
				return nil, e
			}
			if in.val == spec.SessionCHAP.Secret.Reveal() {
				// RFC 3720 §8.2.1: a CHAP secret used to authenticate
				// initiators must not authenticate targets, and vice versa.
				return nil, errorf(in.key, "must differ from %s (RFC 3720 §8.2.1)", keySessionSecret)
			}
			spec.SessionAuth = host.AuthMutual
			spec.InitiatorSecret = host.NewSecret(in.val)
		}
	}
	return spec, nil
}

// readCHAP reads a CHAP user name and secret that flag requires.
func readCHAP(sec params, userKey, secretKey, flag string) (host.CHAP, *Error) {
	u, ok := sec.get(userKey)
	if !ok {
		return host.CHAP{}, errorf(userKey, "is required in the node-stage secret when %s is true", flag)
	}
	if hasControl(u.val) {
		return host.CHAP{}, errorf(u.key, "contains a control character (a trailing newline from echo?)")
	}
	s, ok := sec.get(secretKey)
	if !ok {
		return host.CHAP{}, errorf(secretKey, "is required in the node-stage secret when %s is true", flag)
	}
	if e := checkCHAPSecret(s); e != nil {
		return host.CHAP{}, e
	}
	return host.CHAP{User: u.val, Secret: host.NewSecret(s.val)}, nil
}

func checkCHAPSecret(s entry) *Error {
	if n := len(s.val); n < minCHAPSecret || n > maxCHAPSecret {
		return errorf(s.key, "is %d bytes long; the Microsoft iSCSI initiator needs %d to %d", n, minCHAPSecret, maxCHAPSecret)
	}
	return nil
}

// splitPortals reads portals: a JSON array of strings, else a
// comma-separated list. Empty entries are skipped.
func splitPortals(s string) []string {
	var list []string
	if !strings.HasPrefix(s, "[") || json.Unmarshal([]byte(s), &list) != nil {
		// Not a JSON array of strings ("[fe80::1]:3260" is not JSON).
		list = strings.Split(s, ",")
	}
	out := list[:0]
	for _, e := range list {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

func containsPortal(ps []host.Portal, p host.Portal) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

// ParsePortal parses an iSCSI portal, address[:port]: an IPv4 address, a
// host name (RFC 1123, lower-cased) or an IPv6 address in brackets
// ([fe80::1]:3260). A bare IPv6 address is accepted only without a port:
// "fe80::1:3260" is the address fe80::1:3260 on port 3260. The port is
// 1..65535, 3260 when absent. Addresses are returned in canonical form.
// The error is an *Error for key "targetPortal".
func ParsePortal(s string) (host.Portal, error) {
	p, e := parsePortal(keyTargetPortal, strings.TrimSpace(s), "")
	return p, asError(e)
}

func parsePortal(key, s, what string) (host.Portal, *Error) {
	bad := func(reason string) *Error { return errorf(key, "%s%q %s", what, s, reason) }
	if s == "" {
		return host.Portal{}, bad("is empty")
	}
	if hasControl(s) || strings.ContainsAny(s, " \t") {
		return host.Portal{}, bad("contains white space or a control character")
	}
	var addr, port string
	hasPort := false
	switch {
	case s[0] == '[':
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return host.Portal{}, bad("has no closing ']'")
		}
		a, err := netip.ParseAddr(s[1:end])
		if err != nil || !a.Is6() {
			return host.Portal{}, bad("does not hold an IPv6 address in brackets")
		}
		if a.Zone() != "" {
			return host.Portal{}, bad("has an IPv6 zone, which is not supported")
		}
		addr = a.String()
		if rest := s[end+1:]; rest != "" {
			if rest[0] != ':' {
				return host.Portal{}, bad("has text after ']' that is not :port")
			}
			port, hasPort = rest[1:], true
		}
	case strings.Count(s, ":") >= 2:
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is6() {
			return host.Portal{}, bad("is not an IPv6 address (write [address]:port to give a port)")
		}
		if a.Zone() != "" {
			return host.Portal{}, bad("has an IPv6 zone, which is not supported")
		}
		addr = a.String()
	default:
		addr = s
		if i := strings.IndexByte(s, ':'); i >= 0 {
			addr, port, hasPort = s[:i], s[i+1:], true
		}
		if addr == "" {
			return host.Portal{}, bad("has no address")
		}
		if reason := checkHostName(addr, false); reason != "" {
			return host.Portal{}, bad("is not a valid portal: " + reason)
		}
		addr = strings.ToLower(addr)
	}
	n := uint64(host.DefaultISCSIPort)
	if hasPort {
		var err error
		n, err = strconv.ParseUint(port, 10, 16)
		if err != nil || n == 0 || !isDigits(port) {
			return host.Portal{}, bad("has an invalid port (1 to 65535)")
		}
	}
	return host.Portal{Address: addr, Port: uint16(n)}, nil
}

// ValidateIQN checks an iSCSI target name and returns it lower-cased:
// iqn.YYYY-MM.<reversed domain>[:<anything>], eui.<16 hex digits> or
// naa.<16 or 32 hex digits> (RFC 3720 §3.2.6.3). The error is an *Error
// for key "iqn".
func ValidateIQN(s string) (string, error) {
	v, e := validateIQN(keyIQN, strings.TrimSpace(s))
	return v, asError(e)
}

func validateIQN(key, s string) (string, *Error) {
	l := strings.ToLower(s)
	bad := func(reason string) (string, *Error) { return "", errorf(key, "%q %s", s, reason) }
	if len(l) > maxIQNLen {
		return bad("is longer than 223 bytes")
	}
	switch {
	case strings.HasPrefix(l, "eui."):
		if h := l[4:]; len(h) != 16 || !isHex(h) {
			return bad("is not eui. followed by 16 hex digits")
		}
	case strings.HasPrefix(l, "naa."):
		if h := l[4:]; len(h) != 16 && len(h) != 32 || !isHex(h) {
			return bad("is not naa. followed by 16 or 32 hex digits")
		}
	case strings.HasPrefix(l, "iqn."):
		rest := l[4:]
		if len(rest) < 8 || !isDigits(rest[:4]) || rest[4] != '-' || !isDigits(rest[5:7]) || rest[7] != '.' {
			return bad("does not start with iqn.YYYY-MM.")
		}
		if m := rest[5:7]; m < "01" || m > "12" {
			return bad("has a month outside 01-12")
		}
		authority, unique, hasUnique := strings.Cut(rest[8:], ":")
		for _, label := range strings.Split(authority, ".") {
			if label == "" || strings.Trim(label, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
				return bad("does not name a reversed domain after the date (labels of a-z, 0-9 and '-')")
			}
		}
		if hasUnique && unique == "" {
			return bad("ends in ':'")
		}
		// RFC 3722 allows a-z, 0-9, '-', '.' and ':' in ASCII. '_' is
		// accepted too so that a target that uses one stays reachable;
		// whether the Microsoft initiator accepts it is not verified.
		// Non-ASCII names are refused: the Microsoft initiator's handling
		// of them is not verified either.
		if strings.Trim(unique, "abcdefghijklmnopqrstuvwxyz0123456789-.:_") != "" {
			return bad("contains a character outside a-z, 0-9, '-', '.', ':' and '_'")
		}
	default:
		return bad("is not an iSCSI name (iqn., eui. or naa.)")
	}
	return l, nil
}
