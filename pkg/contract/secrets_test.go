package contract

import (
	"fmt"
	"strings"
	"testing"
)

// marker is in every secret value below and in no other input, so any
// occurrence in an error message is a leak.
const marker = "ZQXsecret"

func TestErrorsNeverQuoteSecrets(t *testing.T) {
	s := func(v string) string { return marker + v }
	smbCtx := m("source", `\\srv\share`)
	iscsiCtx := func(kv ...string) map[string]string {
		return m(append([]string{"targetPortal", "10.0.0.1", "iqn", "iqn.2001-04.com.example:t", "lun", "0"}, kv...)...)
	}
	session := iscsiCtx("sessionCHAPAuth", "true")
	discovery := iscsiCtx("discoveryCHAPAuth", "true")
	good12 := s("abc") // 12 bytes

	cases := []struct {
		name string
		req  Request
	}{
		{"case conflict in secret", Request{VolumeContext: smbCtx, Secrets: m("password", s("1"), "Password", s("2"), "username", s("u"))}},
		{"username without password", Request{VolumeContext: smbCtx, Secrets: m("username", s("user"))}},
		{"password without username", Request{VolumeContext: smbCtx, Secrets: m("password", s("pw"))}},
		{"domain alone", Request{VolumeContext: smbCtx, Secrets: m("domain", s("dom"))}},
		{"username control character", Request{VolumeContext: smbCtx, Secrets: m("username", s("u\n"), "password", s("pw"))}},
		{"domain control character", Request{VolumeContext: smbCtx, Secrets: m("username", s("u"), "password", s("pw"), "domain", s("d\r"))}},
		{"domain with backslash", Request{VolumeContext: smbCtx, Secrets: m("username", s("u"), "password", s("pw"), "domain", s(`a\b`))}},
		{"domain mismatch backslash form", Request{VolumeContext: smbCtx, Secrets: m("username", s(`dom\u`), "password", s("pw"), "domain", s("other"))}},
		{"domain mismatch upn form", Request{VolumeContext: smbCtx, Secrets: m("username", s("u@dom"), "password", s("pw"), "domain", s("other"))}},
		{"bad DOMAIN\\user", Request{VolumeContext: smbCtx, Secrets: m("username", s(`a\b\c`), "password", s("pw"))}},
		{"bad user@domain", Request{VolumeContext: smbCtx, Secrets: m("username", s("u@"), "password", s("pw"))}},
		{"other error with smb secrets", Request{VolumeContext: m("source", `\\srv\share`, "subDir", ".."), Secrets: m("username", s("u"), "password", s("pw"), "domain", s("d"))}},
		{"password in volume_context", Request{VolumeContext: m("source", `\\srv\share`, "password", s("pw"))}},
		{"CHAP secret in volume_context", Request{VolumeContext: iscsiCtx("node.session.auth.password", s("pw"))}},
		{"session CHAP user missing", Request{VolumeContext: session, Secrets: m("node.session.auth.password", good12)}},
		{"session CHAP secret missing", Request{VolumeContext: session, Secrets: m("node.session.auth.username", s("u"))}},
		{"session CHAP user control character", Request{VolumeContext: session, Secrets: m("node.session.auth.username", s("u\x00"), "node.session.auth.password", good12)}},
		{"session CHAP secret too short", Request{VolumeContext: session, Secrets: m("node.session.auth.username", s("u"), "node.session.auth.password", s(""))}},
		{"session CHAP secret too long", Request{VolumeContext: session, Secrets: m("node.session.auth.username", s("u"), "node.session.auth.password", s("0123456789"))}},
		{"mutual secret too short", Request{VolumeContext: session, Secrets: m("node.session.auth.username", s("u"), "node.session.auth.password", good12, "node.session.auth.password_in", s(""), "node.session.auth.username_in", s("t"))}},
		{"mutual secret equal", Request{VolumeContext: session, Secrets: m("node.session.auth.username", s("u"), "node.session.auth.password", good12, "node.session.auth.password_in", good12)}},
		{"discovery CHAP user missing", Request{VolumeContext: discovery, Secrets: m("node.sendtargets.auth.password", good12)}},
		{"discovery CHAP secret too long", Request{VolumeContext: discovery, Secrets: m("node.sendtargets.auth.username", s("u"), "node.sendtargets.auth.password", s("0123456789"))}},
		{"discovery CHAP user control character", Request{VolumeContext: discovery, Secrets: m("node.sendtargets.auth.username", s("\tu"), "node.sendtargets.auth.password", good12)}},
		{"other error with CHAP secrets", Request{VolumeContext: iscsiCtx("lun", "x", "sessionCHAPAuth", "true"), Secrets: m("node.session.auth.username", s("u"), "node.session.auth.password", good12)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.VolumeID = "vol-1"
			_, err := Parse(tc.req, Options{DefaultDomain: "DEF"})
			if err == nil {
				t.Fatal("no error; the case must reach an error path")
			}
			for _, text := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
				if strings.Contains(text, marker) {
					t.Fatalf("error leaks a secret: %s", text)
				}
			}
		})
	}
}

func TestErrorsQuoteNonSecretValues(t *testing.T) {
	_, err := Parse(Request{VolumeID: "v", VolumeContext: m("targetPortal", "h", "iqn", "iqn.2001-04.com.example", "lun", "abc")}, Options{})
	assertErrKey(t, err, "lun")
	if !strings.Contains(err.Error(), `"abc"`) {
		t.Fatalf("error %q does not quote the bad value", err)
	}
}
