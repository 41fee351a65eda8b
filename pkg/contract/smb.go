package contract

import (
	"net/netip"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

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

func parseSMB(p params, sec params, o Options) (*SMBSpec, *Error) {
	src, ok := p.get(keySource)
	if !ok {
		return nil, errorf(keySource, `is required for smb volumes: \\server\share or //server/share`)
	}
	server, share, dir, e := parseSMBSource(src.key, src.val)
	if e != nil {
		return nil, e
	}
	spec := &SMBSpec{Server: server, Share: share, Dir: dir}
	if sd, ok := p.get(keySubDir); ok {
		sub, e := parseSubDir(sd, p)
		if e != nil {
			return nil, e
		}
		if spec.Dir != "" {
			spec.Dir += `\` + sub
		} else {
			spec.Dir = sub
		}
	}
	if spec.RequirePrivacy, e = p.boolOr(keyRequirePrivacy, o.RequirePrivacy); e != nil {
		return nil, e
	}
	noCred, e := p.boolOr(keyNoCredentials, false)
	if e != nil {
		return nil, e
	}
	if spec.Credential, e = parseSMBCredential(sec, o.DefaultDomain, noCred); e != nil {
		return nil, e
	}
	return spec, nil
}

// ParseSMBSource splits an SMB source, \\server\share[\dir...] or
// //server/share[/dir...], into its parts; dir is backslash-separated and
// empty for the share root. A single trailing separator is allowed. The
// error is an *Error for key "source".
func ParseSMBSource(s string) (server, share, dir string, err error) {
	server, share, dir, e := parseSMBSource(keySource, s)
	return server, share, dir, asError(e)
}

func parseSMBSource(key, s string) (server, share, dir string, e *Error) {
	if hasControl(s) {
		return "", "", "", errorf(key, "%q contains a control character", s)
	}
	if len(s) >= 2 && s[1] == ':' && isASCIILetter(s[0]) {
		return "", "", "", errorf(key, `%q is a drive path; want \\server\share or //server/share`, s)
	}
	u := strings.ReplaceAll(s, "/", `\`)
	rest, ok := strings.CutPrefix(u, `\\`)
	if !ok {
		return "", "", "", errorf(key, `%q is not a UNC path; want \\server\share or //server/share`, s)
	}
	if rest == "?" || rest == "." || strings.HasPrefix(rest, `?\`) || strings.HasPrefix(rest, `.\`) {
		return "", "", "", errorf(key, `%q is a device path (\\?\ or \\.\); want \\server\share`, s)
	}
	rest = strings.TrimSuffix(rest, `\`)
	parts := strings.Split(rest, `\`)
	if parts[0] == "" {
		return "", "", "", errorf(key, "%q has an empty server name", s)
	}
	if reason := checkServer(parts[0]); reason != "" {
		return "", "", "", errorf(key, "%q: server %s", s, reason)
	}
	if len(parts) < 2 || parts[1] == "" {
		return "", "", "", errorf(key, `%q has no share name; want \\server\share`, s)
	}
	if reason := checkName(parts[1], shareForbidden); reason != "" {
		return "", "", "", errorf(key, "%q: share name %s", s, reason)
	}
	for _, c := range parts[2:] {
		if reason := checkName(c, nameForbidden); reason != "" {
			return "", "", "", errorf(key, "%q: path component %s", s, reason)
		}
	}
	return parts[0], parts[1], strings.Join(parts[2:], `\`), nil
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

func isASCIILetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// subDirTemplates are the placeholders subDir may carry and the keys that
// fill them (the csi-driver-smb convention: kubernetes-csi/csi-driver-smb@95c6968
// pkg/smb/smb.go, docs/driver-parameters.md).
var subDirTemplates = []struct{ name, key string }{
	{"${pvc.metadata.name}", keyPVCName},
	{"${pvc.metadata.namespace}", keyPVCNamespace},
	{"${pv.metadata.name}", keyPVName},
}

// parseSubDir fills the templates of subDir and validates the result: a
// relative path, '/' or '\' separated, without "." or ".." components.
func parseSubDir(e entry, p params) (string, *Error) {
	var b strings.Builder
	rest := e.val
	for {
		i := strings.Index(rest, "${")
		if i < 0 {
			b.WriteString(rest)
			break
		}
		b.WriteString(rest[:i])
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return "", errorf(e.key, "%q has an unterminated ${", e.val)
		}
		t := rest[i : i+j+1]
		key := ""
		for _, tt := range subDirTemplates {
			if tt.name == t {
				key = tt.key
			}
		}
		if key == "" {
			return "", errorf(e.key, "%q uses the unknown template %s (known: ${pvc.metadata.name}, ${pvc.metadata.namespace}, ${pv.metadata.name})", e.val, t)
		}
		v, ok := p.get(key)
		if !ok {
			return "", errorf(e.key, "template %s needs %s, which is not set (external-provisioner passes it with --extra-create-metadata)", t, key)
		}
		b.WriteString(v.val)
		rest = rest[i+j+1:]
	}
	s := b.String()
	switch {
	case hasControl(s):
		return "", errorf(e.key, "%q contains a control character", s)
	case s[0] == '/' || s[0] == '\\':
		return "", errorf(e.key, "%q must be relative (no leading separator)", s)
	case len(s) >= 2 && s[1] == ':' && isASCIILetter(s[0]):
		return "", errorf(e.key, "%q must be relative (no drive)", s)
	}
	s = strings.TrimRight(strings.ReplaceAll(s, "/", `\`), `\`)
	for _, c := range strings.Split(s, `\`) {
		if reason := checkName(c, nameForbidden); reason != "" {
			return "", errorf(e.key, "%q: path component %s", e.val, reason)
		}
	}
	return s, nil
}

// parseSMBCredential reads username, password and domain. A volume maps
// its share with them; only with mapWithoutCredentials (noCred) may both
// be absent, and then they must be. Values are never quoted in errors.
func parseSMBCredential(sec params, defaultDomain string, noCred bool) (host.Credential, *Error) {
	user, hasUser := sec.get(keyUsername)
	pass, hasPass := sec.get(keyPassword)
	dom, hasDom := sec.get(keyDomain)
	switch {
	case noCred:
		for _, e := range []struct {
			has bool
			key string
		}{{hasUser, user.key}, {hasPass, pass.key}, {hasDom, dom.key}} {
			if e.has {
				return host.Credential{}, errorf(e.key, "is set in the node-stage secret, but %s is true: the share is mapped without credentials; remove one of them", keyNoCredentials)
			}
		}
		return host.Credential{}, nil
	case !hasUser && !hasPass:
		// Without the keys a mapping would be tried without credentials
		// and fail (or connect as guest) far from the cause: a Secret
		// not given to the volume, or given under other key names.
		key, what := keyUsername, "the node-stage secret has neither username nor password"
		if hasDom {
			key, what = dom.key, "the node-stage secret has domain but neither username nor password"
		}
		return host.Credential{}, errorf(key, "%s: an smb volume maps its share with them (the StorageClass's "+
			"csi.storage.k8s.io/node-stage-secret-name and -namespace, or a static PV's nodeStageSecretRef); "+
			"to map the share without credentials (guest or anonymous access, or the node's computer account), set %s to true",
			what, keyNoCredentials)
	case !hasPass:
		return host.Credential{}, errorf(keyPassword, "is required with %s", user.key)
	case !hasUser:
		return host.Credential{}, errorf(keyUsername, "is required with %s", pass.key)
	}
	if hasControl(user.val) {
		return host.Credential{}, errorf(user.key, "contains a control character (a trailing newline from echo?)")
	}
	if hasDom {
		if hasControl(dom.val) {
			return host.Credential{}, errorf(dom.key, "contains a control character (a trailing newline from echo?)")
		}
		if strings.ContainsAny(dom.val, `\@/`) {
			return host.Credential{}, errorf(dom.key, `must be a bare domain name, without '\', '/' or '@'`)
		}
	}
	name := user.val
	var userDomain string
	if i := strings.IndexByte(name, '\\'); i >= 0 {
		if i == 0 || i == len(name)-1 || strings.Count(name, `\`) > 1 {
			return host.Credential{}, errorf(user.key, `is not in the form DOMAIN\user`)
		}
		userDomain = name[:i]
	} else if i := strings.LastIndexByte(name, '@'); i >= 0 {
		if i == 0 || i == len(name)-1 {
			return host.Credential{}, errorf(user.key, "is not in the form user@domain")
		}
		userDomain = name[i+1:]
	}
	switch {
	case userDomain != "":
		if hasDom && !strings.EqualFold(userDomain, dom.val) {
			return host.Credential{}, errorf(dom.key, "differs from the domain %s already names; remove one of them", user.key)
		}
	case hasDom:
		name = dom.val + `\` + name
	case defaultDomain != "":
		name = defaultDomain + `\` + name
	}
	return host.Credential{User: name, Password: host.NewSecret(pass.val)}, nil
}
