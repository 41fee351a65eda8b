package contract

import (
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

func TestParseSMBSource(t *testing.T) {
	for _, tc := range []struct {
		in                 string
		server, share, dir string
		wantErr            bool
	}{
		{in: `\\srv\share`, server: "srv", share: "share"},
		{in: `//srv/share`, server: "srv", share: "share"},
		{in: `\\srv\share\`, server: "srv", share: "share"},
		{in: `//Srv.Example.com/Share$/a/b`, server: "Srv.Example.com", share: "Share$", dir: `a\b`},
		{in: `\\10.0.0.5\data\x y\z`, server: "10.0.0.5", share: "data", dir: `x y\z`},
		{in: `\/srv/share\a`, server: "srv", share: "share", dir: "a"},
		{in: `\\fe80--1.ipv6-literal.net\share`, server: "fe80--1.ipv6-literal.net", share: "share"},
		{in: `\\fe80--1s4.IPV6-LITERAL.NET\share`, server: "fe80--1s4.IPV6-LITERAL.NET", share: "share"},
		{in: `\\nas_01\share`, server: "nas_01", share: "share"},
		{in: `\\srv\share\über`, server: "srv", share: "share", dir: "über"},

		{in: ``, wantErr: true},
		{in: `srv\share`, wantErr: true},
		{in: `\srv\share`, wantErr: true},
		{in: `C:\data`, wantErr: true},
		{in: `c:/data`, wantErr: true},
		{in: `\\?\UNC\srv\share`, wantErr: true},
		{in: `\\.\pipe\x`, wantErr: true},
		{in: `\\?`, wantErr: true},
		{in: `\\`, wantErr: true},
		{in: `\\\share`, wantErr: true},
		{in: `\\srv`, wantErr: true},
		{in: `\\srv\`, wantErr: true},
		{in: `\\srv\\x`, wantErr: true},
		{in: `\\srv\share\\x`, wantErr: true},
		{in: `\\srv\share\a\\`, wantErr: true},
		{in: `\\srv\share\..\x`, wantErr: true},
		{in: `\\srv\share\a\.`, wantErr: true},
		{in: `\\srv\share\a\...`, wantErr: true},
		{in: `\\srv\share\a.\b`, wantErr: true},
		{in: `\\srv\share\a \b`, wantErr: true},
		{in: `\\srv\..`, wantErr: true},
		{in: `\\srv\sh*re`, wantErr: true},
		{in: `\\srv\sh;re`, wantErr: true},
		{in: `\\srv\sh[re`, wantErr: true},
		{in: `\\srv\share\a:b`, wantErr: true},
		{in: `\\srv\share\a|b`, wantErr: true},
		{in: "\\\\srv\\share\\a\nb", wantErr: true},
		{in: "\\\\srv\\sha\x00re", wantErr: true},
		{in: `\\fe80::1\share`, wantErr: true},
		{in: `\\[fe80::1]\share`, wantErr: true},
		{in: `\\zz--1.ipv6-literal.net\share`, wantErr: true},
		{in: `\\srv:445\share`, wantErr: true},
		{in: `\\srv@SSL\share`, wantErr: true},
		{in: `\\-srv\share`, wantErr: true},
		{in: `\\srv..example\share`, wantErr: true},
		{in: `\\999.1.1.1\share`, wantErr: true},
		{in: `\\1234\share`, wantErr: true},
		{in: `\\sr v\share`, wantErr: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			server, share, dir, err := ParseSMBSource(tc.in)
			if tc.wantErr {
				assertErrKey(t, err, "source")
				return
			}
			if err != nil {
				t.Fatalf("ParseSMBSource: %v", err)
			}
			if server != tc.server || share != tc.share || dir != tc.dir {
				t.Fatalf("got %q %q %q, want %q %q %q", server, share, dir, tc.server, tc.share, tc.dir)
			}
		})
	}
}

func TestParseSMB(t *testing.T) {
	smb := func(s SMBSpec) *Volume { return &Volume{Kind: KindSMB, SMB: &s} }
	pvc := []string{"csi.storage.k8s.io/pvc/name", "data", "csi.storage.k8s.io/pvc/namespace", "team", "csi.storage.k8s.io/pv/name", "pvc-123"}
	withPVC := func(kv ...string) map[string]string { return m(append(append([]string{}, pvc...), kv...)...) }
	cred := func(user, pass string) host.Credential {
		return host.Credential{User: user, Password: host.NewSecret(pass)}
	}
	alice := m("username", "alice", "password", "pw")
	aliceCred := cred("alice", "pw")
	runParseCases(t, []parseCase{
		{
			name: "share root without credentials",
			req:  Request{VolumeContext: m("source", `//srv/share`, "mapWithoutCredentials", "true")},
			opts: Options{RequirePrivacy: true},
			want: smb(SMBSpec{Server: "srv", Share: "share", RequirePrivacy: true}),
		},
		{
			name: "source dir and subDir",
			req:  Request{VolumeContext: m("source", `\\srv\share\base`, "subDir", "a/b\\c/"), Secrets: alice},
			want: smb(SMBSpec{Server: "srv", Share: "share", Dir: `base\a\b\c`, Credential: aliceCred}),
		},
		{
			name: "subDir only",
			req:  Request{VolumeContext: m("source", `\\srv\share`, "subdir", "vol1"), Secrets: alice},
			want: smb(SMBSpec{Server: "srv", Share: "share", Dir: "vol1", Credential: aliceCred}),
		},
		{
			name: "subDir templates",
			req:  Request{VolumeContext: withPVC("source", `\\srv\share`, "subDir", "${pvc.metadata.namespace}/${pvc.metadata.name}-${pv.metadata.name}"), Secrets: alice},
			want: smb(SMBSpec{Server: "srv", Share: "share", Dir: `team\data-pvc-123`, Credential: aliceCred}),
		},
		{
			name: "subDir template values from publish_context",
			req:  Request{VolumeContext: m("source", `\\srv\share`, "subDir", "${pv.metadata.name}"), PublishContext: m("csi.storage.k8s.io/pv/name", "pv9"), Secrets: alice},
			want: smb(SMBSpec{Server: "srv", Share: "share", Dir: "pv9", Credential: aliceCred}),
		},
		{name: "subDir template value missing", req: Request{VolumeContext: m("source", `\\srv\share`, "subDir", "${pvc.metadata.name}")}, wantKey: "subDir"},
		{name: "subDir unknown template", req: Request{VolumeContext: withPVC("source", `\\srv\share`, "subDir", "${pod.name}")}, wantKey: "subDir"},
		{name: "subDir unterminated template", req: Request{VolumeContext: withPVC("source", `\\srv\share`, "SubDir", "${pvc.metadata.name")}, wantKey: "SubDir"},
		{name: "subDir template yields ..", req: Request{VolumeContext: m("source", `\\srv\share`, "subDir", "${pv.metadata.name}", "csi.storage.k8s.io/pv/name", "..")}, wantKey: "subDir"},
		{name: "subDir ..", req: Request{VolumeContext: m("source", `\\srv\share`, "subDir", "a/../b")}, wantKey: "subDir"},
		{name: "subDir .", req: Request{VolumeContext: m("source", `\\srv\share`, "subDir", "./a")}, wantKey: "subDir"},
		{name: "subDir leading slash", req: Request{VolumeContext: m("source", `\\srv\share`, "subDir", "/a")}, wantKey: "subDir"},
		{name: "subDir leading backslash", req: Request{VolumeContext: m("source", `\\srv\share`, "subDir", `\a`)}, wantKey: "subDir"},
		{name: "subDir drive", req: Request{VolumeContext: m("source", `\\srv\share`, "subDir", `C:\a`)}, wantKey: "subDir"},
		{name: "subDir drive relative", req: Request{VolumeContext: m("source", `\\srv\share`, "subDir", `c:a`)}, wantKey: "subDir"},
		{name: "subDir empty component", req: Request{VolumeContext: m("source", `\\srv\share`, "subDir", "a//b")}, wantKey: "subDir"},
		{name: "subDir control char", req: Request{VolumeContext: m("source", `\\srv\share`, "subDir", "a\x01b")}, wantKey: "subDir"},
		{name: "subDir wildcard", req: Request{VolumeContext: m("source", `\\srv\share`, "subDir", "a*")}, wantKey: "subDir"},
		{name: "missing source", req: Request{VolumeContext: m("backend", "smb")}, wantKey: "source"},
		{name: "bad source", req: Request{VolumeContext: m("Source", `C:\x`)}, wantKey: "Source"},

		{name: "requirePrivacy default false", req: Request{VolumeContext: m("source", `\\s\x`, "mapWithoutCredentials", "true")}, opts: Options{RequirePrivacy: false}, want: smb(SMBSpec{Server: "s", Share: "x"})},
		{name: "requirePrivacy false overrides", req: Request{VolumeContext: m("source", `\\s\x`, "requirePrivacy", "FALSE", "mapWithoutCredentials", "true")}, opts: Options{RequirePrivacy: true}, want: smb(SMBSpec{Server: "s", Share: "x"})},
		{name: "requirePrivacy 1", req: Request{VolumeContext: m("source", `\\s\x`, "requirePrivacy", "1", "mapWithoutCredentials", "true")}, want: smb(SMBSpec{Server: "s", Share: "x", RequirePrivacy: true})},
		{name: "requirePrivacy yes", req: Request{VolumeContext: m("source", `\\s\x`, "requirePrivacy", "yes")}, wantKey: "requirePrivacy"},

		{
			name: "plain user without domain",
			req:  Request{VolumeContext: m("source", `\\s\x`), Secrets: m("username", "bob", "password", "pw")},
			want: smb(SMBSpec{Server: "s", Share: "x", Credential: cred("bob", "pw")}),
		},
		{
			name: "plain user with domain secret",
			req:  Request{VolumeContext: m("source", `\\s\x`), Secrets: m("username", "bob", "password", "pw", "domain", "CORP")},
			opts: Options{DefaultDomain: "OTHER"},
			want: smb(SMBSpec{Server: "s", Share: "x", Credential: cred(`CORP\bob`, "pw")}),
		},
		{
			name: "plain user with default domain",
			req:  Request{VolumeContext: m("source", `\\s\x`), Secrets: m("Username", "bob", "PASSWORD", "pw")},
			opts: Options{DefaultDomain: "AZURE"},
			want: smb(SMBSpec{Server: "s", Share: "x", Credential: cred(`AZURE\bob`, "pw")}),
		},
		{
			name: "DOMAIN\\user kept",
			req:  Request{VolumeContext: m("source", `\\s\x`), Secrets: m("username", `corp\bob`, "password", "pw", "domain", "CORP")},
			opts: Options{DefaultDomain: "AZURE"},
			want: smb(SMBSpec{Server: "s", Share: "x", Credential: cred(`corp\bob`, "pw")}),
		},
		{
			name: "user@domain kept",
			req:  Request{VolumeContext: m("source", `\\s\x`), Secrets: m("username", "bob@corp.example.com", "password", "pw")},
			opts: Options{DefaultDomain: "AZURE"},
			want: smb(SMBSpec{Server: "s", Share: "x", Credential: cred("bob@corp.example.com", "pw")}),
		},
		{
			name: "password kept byte for byte",
			req:  Request{VolumeContext: m("source", `\\s\x`), Secrets: m("username", "bob", "password", " p w\n")},
			want: smb(SMBSpec{Server: "s", Share: "x", Credential: cred("bob", " p w\n")}),
		},
		{name: "domain differs from DOMAIN\\user", req: Request{VolumeContext: m("source", `\\s\x`), Secrets: m("username", `corp\bob`, "password", "pw", "domain", "OTHER")}, wantKey: "domain"},
		{name: "domain differs from user@domain", req: Request{VolumeContext: m("source", `\\s\x`), Secrets: m("username", "bob@corp", "password", "pw", "Domain", "other")}, wantKey: "Domain"},
		{name: "username without password", req: Request{VolumeContext: m("source", `\\s\x`), Secrets: m("username", "bob")}, wantKey: "password"},
		{name: "password without username", req: Request{VolumeContext: m("source", `\\s\x`), Secrets: m("password", "pw")}, wantKey: "username"},
		{name: "empty password counts as absent", req: Request{VolumeContext: m("source", `\\s\x`), Secrets: m("username", "bob", "password", "")}, wantKey: "password"},
		{name: "domain alone", req: Request{VolumeContext: m("source", `\\s\x`), Secrets: m("domain", "CORP")}, wantKey: "domain"},
		{name: "no credentials", req: Request{VolumeContext: m("source", `\\s\x`)}, wantKey: "username"},
		{name: "no credentials, other keys", req: Request{VolumeContext: m("source", `\\s\x`), Secrets: m("user", "bob", "pass", "pw")}, wantKey: "username"},
		{name: "mapWithoutCredentials not a boolean", req: Request{VolumeContext: m("source", `\\s\x`, "mapWithoutCredentials", "yes")}, wantKey: "mapWithoutCredentials"},
		{name: "mapWithoutCredentials with username", req: Request{VolumeContext: m("source", `\\s\x`, "mapWithoutCredentials", "true"), Secrets: m("username", "bob", "password", "pw")}, wantKey: "username"},
		{name: "mapWithoutCredentials with domain", req: Request{VolumeContext: m("source", `\\s\x`, "mapWithoutCredentials", "true"), Secrets: m("Domain", "CORP")}, wantKey: "Domain"},
		{
			name: "mapWithoutCredentials false needs the secret",
			req:  Request{VolumeContext: m("source", `\\s\x`, "mapWithoutCredentials", "false"), Secrets: alice},
			want: smb(SMBSpec{Server: "s", Share: "x", Credential: aliceCred}),
		},
		{name: "username with newline", req: Request{VolumeContext: m("source", `\\s\x`), Secrets: m("username", "bob\n", "password", "pw")}, wantKey: "username"},
		{name: "domain with newline", req: Request{VolumeContext: m("source", `\\s\x`), Secrets: m("username", "bob", "password", "pw", "domain", "CORP\n")}, wantKey: "domain"},
		{name: "domain with backslash", req: Request{VolumeContext: m("source", `\\s\x`), Secrets: m("username", "bob", "password", "pw", "domain", `A\B`)}, wantKey: "domain"},
		{name: "username trailing backslash", req: Request{VolumeContext: m("source", `\\s\x`), Secrets: m("username", `corp\`, "password", "pw")}, wantKey: "username"},
		{name: "username two backslashes", req: Request{VolumeContext: m("source", `\\s\x`), Secrets: m("username", `a\b\c`, "password", "pw")}, wantKey: "username"},
		{name: "username leading @", req: Request{VolumeContext: m("source", `\\s\x`), Secrets: m("username", "@corp", "password", "pw")}, wantKey: "username"},
		{name: "username trailing @", req: Request{VolumeContext: m("source", `\\s\x`), Secrets: m("username", "bob@", "password", "pw")}, wantKey: "username"},
		{
			name: "unrelated secret keys are ignored when backend is set",
			req:  Request{VolumeContext: m("backend", "smb", "source", `\\s\x`), Secrets: m("username", "alice", "password", "pw", "node.session.auth.password", "x")},
			want: smb(SMBSpec{Server: "s", Share: "x", Credential: aliceCred}),
		},
		{
			name:    "another backend's secret keys refuse an inferred backend",
			req:     Request{VolumeContext: m("source", `\\s\x`), Secrets: m("node.session.auth.password", "x")},
			wantKey: "node.session.auth.password",
		},
	})
}

func TestSMBSpecPaths(t *testing.T) {
	v, err := Parse(Request{VolumeID: "v", VolumeContext: m("source", `//Srv/Share/a`, "subDir", "b"), Secrets: m("username", "u", "password", "p")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := v.SMB.UNC(), `\\Srv\Share\a\b`; got != want {
		t.Errorf("UNC %q, want %q", got, want)
	}
	if got, want := v.SMB.MappingPath(), `\\srv\share`; got != want {
		t.Errorf("MappingPath %q, want %q", got, want)
	}
}
