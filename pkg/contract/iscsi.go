package contract

import (
	"encoding/json"
	"net/netip"
	"strings"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// maxLUN is the largest iSCSI LUN accepted. Windows reports a disk's LUN
// in 16-bit fields (Win32_DiskDrive.SCSILogicalUnit is uint16), so a
// larger LUN could never be matched to a disk. Whether the Microsoft
// initiator and Storport reach LUNs above 254 at all is not verified.
const maxLUN = 65535

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
	if n := len(s.val); n < host.MinCHAPSecret || n > host.MaxCHAPSecret {
		return errorf(s.key, "is %d bytes long; the Microsoft iSCSI initiator needs %d to %d", n, host.MinCHAPSecret, host.MaxCHAPSecret)
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

// ParsePortal parses an iSCSI portal, address[:port], with surrounding
// white space trimmed, by host.ParsePortal's grammar. The error is an
// *Error for key "targetPortal".
func ParsePortal(s string) (host.Portal, error) {
	p, e := parsePortal(keyTargetPortal, strings.TrimSpace(s), "")
	return p, asError(e)
}

func parsePortal(key, s, what string) (host.Portal, *Error) {
	p, err := host.ParsePortal(s)
	if err != nil {
		return host.Portal{}, errorf(key, "%s%s", what, err)
	}
	return p, nil
}

// ValidateIQN checks an iSCSI target name, with surrounding white space
// trimmed, by host.ValidateIQN's grammar and returns it lower-cased. The
// error is an *Error for key "iqn".
func ValidateIQN(s string) (string, error) {
	v, e := validateIQN(keyIQN, strings.TrimSpace(s))
	return v, asError(e)
}

func validateIQN(key, s string) (string, *Error) {
	v, err := host.ValidateIQN(s)
	if err != nil {
		return "", errorf(key, "%s", err)
	}
	return v, nil
}
