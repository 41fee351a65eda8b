package contract

import (
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

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
// //server/share[/dir...], into its parts by host.ParseSharePath's
// grammar. The error is an *Error for key "source".
func ParseSMBSource(s string) (server, share, dir string, err error) {
	server, share, dir, e := parseSMBSource(keySource, s)
	return server, share, dir, asError(e)
}

func parseSMBSource(key, s string) (server, share, dir string, e *Error) {
	server, share, dir, err := host.ParseSharePath(s)
	if err != nil {
		return "", "", "", errorf(key, "%s", err)
	}
	return server, share, dir, nil
}

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
		if err := host.CheckPathComponent(c); err != nil {
			return "", errorf(e.key, "%q: path component %s", e.val, err)
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

func isASCIILetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
