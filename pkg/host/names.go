package host

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"unicode"
)

// The grammar of the names and secrets the host calls take: iSCSI portals,
// iSCSI target names, SMB share paths and CHAP secrets. The parameter
// contract (pkg/contract) checks a volume's parameters with it and the
// simulated host (pkg/sim) its setup file, so both accept exactly the same
// names. Each error is the reason alone, beginning with the quoted name
// ("\"fe80::1%eth0\" has an IPv6 zone, ..."), for the caller to say where
// the name came from.

// CHAP secrets the Microsoft iSCSI initiator accepts are 12 to 16 bytes
// long: a shorter or longer target or initiator secret is
// ISDSC_INVALID_TARGET_CHAP_SECRET or ISDSC_INVALID_INITIATOR_CHAP_SECRET
// (learn.microsoft.com/windows-hardware/drivers/storage/iscsi-status-qualifiers),
// and the shared secret "MUST be at least 12 and less than or equal to 16"
// bytes ([MS-VDS] 2.2.2.3.1.1 VDS_ISCSI_SHARED_SECRET,
// learn.microsoft.com/openspecs/windows_protocols/ms-vds/5ee27ee9-473c-4b9e-aa2a-d7288176b59f).
const (
	MinCHAPSecret = 12
	MaxCHAPSecret = 16
)

// maxIQNLen is the longest iSCSI name (RFC 3720 §3.2.6.1: 223 bytes).
const maxIQNLen = 223

// Characters Windows refuses in share names and in file and directory
// names (besides control characters).
const (
	shareForbidden = `"/\[]:|<>+=;,?*`
	nameForbidden  = `<>:"/\|?*`
)

// ipv6LiteralSuffix is the DNS suffix under which Windows resolves an
// IPv6 address written for UNC paths: fe80::1 becomes
// fe80--1.ipv6-literal.net ('-' for ':', 's' for '%').
const ipv6LiteralSuffix = ".ipv6-literal.net"

// ParsePortal parses an iSCSI portal, address[:port]: an IPv4 address, a
// host name (RFC 1123, lower-cased) or an IPv6 address in brackets
// ([fe80::1]:3260). A bare IPv6 address is accepted only without a port:
// "fe80::1:3260" is the address fe80::1:3260 on port 3260. The port is
// 1..65535, DefaultISCSIPort when absent. Addresses are returned in
// canonical form. s is taken as it is (white space is an error).
func ParsePortal(s string) (Portal, error) {
	bad := func(reason string) error { return fmt.Errorf("%q %s", s, reason) }
	if s == "" {
		return Portal{}, bad("is empty")
	}
	if hasControl(s) || strings.ContainsAny(s, " \t") {
		return Portal{}, bad("contains white space or a control character")
	}
	var addr, port string
	hasPort := false
	switch {
	case s[0] == '[':
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return Portal{}, bad("has no closing ']'")
		}
		a, err := netip.ParseAddr(s[1:end])
		if err != nil || !a.Is6() {
			return Portal{}, bad("does not hold an IPv6 address in brackets")
		}
		if a.Zone() != "" {
			return Portal{}, bad("has an IPv6 zone, which is not supported")
		}
		addr = a.String()
		if rest := s[end+1:]; rest != "" {
			if rest[0] != ':' {
				return Portal{}, bad("has text after ']' that is not :port")
			}
			port, hasPort = rest[1:], true
		}
	case strings.Count(s, ":") >= 2:
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is6() {
			return Portal{}, bad("is not an IPv6 address (write [address]:port to give a port)")
		}
		if a.Zone() != "" {
			return Portal{}, bad("has an IPv6 zone, which is not supported")
		}
		addr = a.String()
	default:
		addr = s
		if i := strings.IndexByte(s, ':'); i >= 0 {
			addr, port, hasPort = s[:i], s[i+1:], true
		}
		if addr == "" {
			return Portal{}, bad("has no address")
		}
		if reason := checkHostName(addr, false); reason != "" {
			return Portal{}, bad("is not a valid portal: " + reason)
		}
		addr = strings.ToLower(addr)
	}
	n := uint64(DefaultISCSIPort)
	if hasPort {
		var err error
		n, err = strconv.ParseUint(port, 10, 16)
		if err != nil || n == 0 || !isDigits(port) {
			return Portal{}, bad("has an invalid port (1 to 65535)")
		}
	}
	return Portal{Address: addr, Port: uint16(n)}, nil
}

// ValidateIQN checks an iSCSI target name and returns it lower-cased:
// iqn.YYYY-MM.<reversed domain>[:<anything>], eui.<16 hex digits> or
// naa.<16 or 32 hex digits> (RFC 3720 §3.2.6.3). s is taken as it is.
func ValidateIQN(s string) (string, error) {
	l := strings.ToLower(s)
	bad := func(reason string) (string, error) { return "", fmt.Errorf("%q %s", s, reason) }
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

// ParseSharePath splits an SMB path, \\server\share[\dir...] or
// //server/share[/dir...], into its parts; dir is backslash-separated and
// empty for the share root. A single trailing separator is allowed.
func ParseSharePath(s string) (server, share, dir string, err error) {
	if hasControl(s) {
		return "", "", "", fmt.Errorf("%q contains a control character", s)
	}
	if len(s) >= 2 && s[1] == ':' && isASCIILetter(s[0]) {
		return "", "", "", fmt.Errorf(`%q is a drive path; want \\server\share or //server/share`, s)
	}
	u := strings.ReplaceAll(s, "/", `\`)
	rest, ok := strings.CutPrefix(u, `\\`)
	if !ok {
		return "", "", "", fmt.Errorf(`%q is not a UNC path; want \\server\share or //server/share`, s)
	}
	if rest == "?" || rest == "." || strings.HasPrefix(rest, `?\`) || strings.HasPrefix(rest, `.\`) {
		return "", "", "", fmt.Errorf(`%q is a device path (\\?\ or \\.\); want \\server\share`, s)
	}
	rest = strings.TrimSuffix(rest, `\`)
	parts := strings.Split(rest, `\`)
	if parts[0] == "" {
		return "", "", "", fmt.Errorf("%q has an empty server name", s)
	}
	if reason := checkServer(parts[0]); reason != "" {
		return "", "", "", fmt.Errorf("%q: server %s", s, reason)
	}
	if len(parts) < 2 || parts[1] == "" {
		return "", "", "", fmt.Errorf(`%q has no share name; want \\server\share`, s)
	}
	if reason := checkName(parts[1], shareForbidden); reason != "" {
		return "", "", "", fmt.Errorf("%q: share name %s", s, reason)
	}
	for _, c := range parts[2:] {
		if reason := checkName(c, nameForbidden); reason != "" {
			return "", "", "", fmt.Errorf("%q: path component %s", s, reason)
		}
	}
	return parts[0], parts[1], strings.Join(parts[2:], `\`), nil
}

// CheckPathComponent reports why c cannot be a file or directory name on
// a share, or nil.
func CheckPathComponent(c string) error {
	if reason := checkName(c, nameForbidden); reason != "" {
		return errors.New(reason)
	}
	return nil
}

// checkServer validates an SMB server name and returns why it is invalid,
// or "". Accepted: an IPv4 address, a host name of letters, digits, '-'
// and '_' in dot-separated labels (NetBIOS names may carry '_'), or an
// IPv6 address in the <addr>.ipv6-literal.net form.
func checkServer(s string) string {
	if strings.ContainsAny(s, ":[]") {
		return quote(s) + " is not a valid name: write an IPv6 address as <address>" + ipv6LiteralSuffix +
			" with '-' for ':' (fe80::1 is fe80--1" + ipv6LiteralSuffix + ")"
	}
	if len(s) > len(ipv6LiteralSuffix) && strings.EqualFold(s[len(s)-len(ipv6LiteralSuffix):], ipv6LiteralSuffix) {
		lit := s[:len(s)-len(ipv6LiteralSuffix)]
		a, err := netip.ParseAddr(strings.NewReplacer("-", ":", "s", "%", "S", "%").Replace(lit))
		if err != nil || !a.Is6() {
			return quote(s) + " is not a valid IPv6 literal name (fe80::1 is fe80--1" + ipv6LiteralSuffix + ")"
		}
		return ""
	}
	return checkHostName(s, true)
}

// checkHostName validates an IPv4 address or an RFC 1123 host name (with
// '_' too when underscore) and returns why it is invalid, or "".
func checkHostName(s string, underscore bool) string {
	if len(s) > 253 {
		return quote(s) + " is longer than 253 characters"
	}
	numeric := true
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 {
			return quote(s) + " is not a valid host name (empty or over-long label)"
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			ok := isASCIILetter(c) || '0' <= c && c <= '9' || c == '-' || underscore && c == '_'
			if !ok {
				return quote(s) + " contains " + quote(string(c)) + ", which a host name cannot"
			}
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return quote(s) + " is not a valid host name (a label starts or ends with '-')"
		}
		numeric = numeric && isDigits(label)
	}
	if numeric {
		if a, err := netip.ParseAddr(s); err != nil || !a.Is4() {
			return quote(s) + " is not a valid IPv4 address"
		}
	}
	return ""
}

// checkName validates a share name or path component and returns why it
// is invalid, or "".
func checkName(c, forbidden string) string {
	switch {
	case c == "":
		return "is empty (doubled separator)"
	case c == "." || c == "..":
		return quote(c) + " is not allowed"
	case strings.HasSuffix(c, ".") || strings.HasSuffix(c, " "):
		return quote(c) + " ends in a dot or space, which Windows strips"
	}
	if i := strings.IndexAny(c, forbidden); i >= 0 {
		return quote(c) + " contains " + quote(c[i:i+1]) + "; names cannot contain any of " + forbidden
	}
	return ""
}

func quote(s string) string { return `"` + s + `"` }

func hasControl(s string) bool { return strings.IndexFunc(s, unicode.IsControl) >= 0 }

func isASCIILetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return s != ""
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
