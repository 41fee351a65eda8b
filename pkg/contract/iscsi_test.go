package contract

import (
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

func TestParsePortal(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    host.Portal
		wantErr bool
	}{
		{in: "10.0.0.1", want: p3260("10.0.0.1")},
		{in: "10.0.0.1:3261", want: host.Portal{Address: "10.0.0.1", Port: 3261}},
		{in: " 10.0.0.1:1 ", want: host.Portal{Address: "10.0.0.1", Port: 1}},
		{in: "10.0.0.1:65535", want: host.Portal{Address: "10.0.0.1", Port: 65535}},
		{in: "Target.Example.COM", want: p3260("target.example.com")},
		{in: "san-01:860", want: host.Portal{Address: "san-01", Port: 860}},
		{in: "[fe80::1]:3260", want: p3260("fe80::1")},
		{in: "[FE80:0::1]", want: p3260("fe80::1")},
		{in: "[2001:db8::1]:3262", want: host.Portal{Address: "2001:db8::1", Port: 3262}},
		{in: "2001:DB8::1", want: p3260("2001:db8::1")},
		{in: "fe80::1:3260", want: p3260("fe80::1:3260")},
		{in: "[::ffff:10.0.0.1]", want: p3260("::ffff:10.0.0.1")},

		{in: "", wantErr: true},
		{in: ":3260", wantErr: true},
		{in: "10.0.0.1:", wantErr: true},
		{in: "10.0.0.1:0", wantErr: true},
		{in: "10.0.0.1:65536", wantErr: true},
		{in: "10.0.0.1:+80", wantErr: true},
		{in: "10.0.0.1:port", wantErr: true},
		{in: "10.0.0.256", wantErr: true},
		{in: "010.0.0.1", wantErr: true},
		{in: "10.0.0", wantErr: true},
		{in: "[fe80::1", wantErr: true},
		{in: "[fe80::1]3260", wantErr: true},
		{in: "[10.0.0.1]:3260", wantErr: true},
		{in: "[fe80::1%eth0]:3260", wantErr: true},
		{in: "fe80::1%4", wantErr: true},
		{in: "fe80::zz", wantErr: true},
		{in: "host name", wantErr: true},
		{in: "host_name", wantErr: true},
		{in: "-host", wantErr: true},
		{in: "a..b", wantErr: true},
		{in: "h\x01i", wantErr: true},
		{in: "host:80:90", wantErr: true},
		{in: strings.Repeat("a", 64), wantErr: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			p, err := ParsePortal(tc.in)
			if tc.wantErr {
				assertErrKey(t, err, "targetPortal")
				return
			}
			if err != nil {
				t.Fatalf("ParsePortal: %v", err)
			}
			if p != tc.want {
				t.Fatalf("got %+v, want %+v", p, tc.want)
			}
		})
	}
}

func TestValidateIQN(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		wantErr  bool
	}{
		{in: "iqn.2001-04.com.example", want: "iqn.2001-04.com.example"},
		{in: "iqn.2001-04.com.example:storage:diskarrays-sn-a8675309", want: "iqn.2001-04.com.example:storage:diskarrays-sn-a8675309"},
		{in: "IQN.1991-05.com.Microsoft:Host-Target", want: "iqn.1991-05.com.microsoft:host-target"},
		{in: "iqn.2005-10.org.freenas.ctl:vol_1", want: "iqn.2005-10.org.freenas.ctl:vol_1"},
		{in: "iqn.2000-01.com.synology:ds.target-1.abc", want: "iqn.2000-01.com.synology:ds.target-1.abc"},
		{in: "eui.02004567A425678D", want: "eui.02004567a425678d"},
		{in: "naa.52004567BA64678D", want: "naa.52004567ba64678d"},
		{in: "naa.62004567BA64678D0123456789ABCDEF", want: "naa.62004567ba64678d0123456789abcdef"},

		{in: "", wantErr: true},
		{in: "iqn.", wantErr: true},
		{in: "iqn.2001-04", wantErr: true},
		{in: "iqn.2001-04.", wantErr: true},
		{in: "iqn.2001-4.com.example", wantErr: true},
		{in: "iqn.01-04.com.example", wantErr: true},
		{in: "iqn.2001-13.com.example", wantErr: true},
		{in: "iqn.2001-00.com.example", wantErr: true},
		{in: "iqn.2001-04.com..example", wantErr: true},
		{in: "iqn.2001-04.com_x.example", wantErr: true},
		{in: "iqn.2001-04.com.example:", wantErr: true},
		{in: "iqn.2001-04.com.example:a b", wantErr: true},
		{in: "iqn.2001-04.com.example:a/b", wantErr: true},
		{in: "iqn.2001-04.com.example:ü", wantErr: true},
		{in: "iqn.2001-04.com.example:" + strings.Repeat("a", 200), wantErr: true},
		{in: "eui.02004567A425678", wantErr: true},
		{in: "eui.02004567A425678G", wantErr: true},
		{in: "naa.0123", wantErr: true},
		{in: "naa.52004567BA64678D01", wantErr: true},
		{in: "wwn.5000", wantErr: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ValidateIQN(tc.in)
			if tc.wantErr {
				assertErrKey(t, err, "iqn")
				return
			}
			if err != nil {
				t.Fatalf("ValidateIQN: %v", err)
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseISCSI(t *testing.T) {
	const iqn = "iqn.2001-04.com.example:target"
	base := func(kv ...string) map[string]string {
		return m(append([]string{"targetPortal", "10.0.0.1", "iqn", iqn, "lun", "1"}, kv...)...)
	}
	chap := func(user, secret string) host.CHAP { return host.CHAP{User: user, Secret: host.NewSecret(secret)} }
	spec := func(s ISCSISpec) *Volume {
		if s.IQN == "" {
			s.IQN = iqn
		}
		if s.Portals == nil {
			s.Portals = []host.Portal{p3260("10.0.0.1")}
		}
		return &Volume{Kind: KindISCSI, FS: ntfs, ISCSI: &s}
	}
	sessionSecrets := func(kv ...string) map[string]string {
		return m(append([]string{"node.session.auth.username", "init", "node.session.auth.password", "twelve-bytes"}, kv...)...)
	}
	runParseCases(t, []parseCase{
		{name: "minimal", req: Request{VolumeContext: base()}, want: spec(ISCSISpec{LUN: 1, Persistent: true})},
		{
			name: "portals JSON with de-duplication",
			req:  Request{VolumeContext: base("portals", `["10.0.0.2:3260", "10.0.0.1", "10.0.0.2", "[fe80::1]"]`)},
			want: spec(ISCSISpec{LUN: 1, Persistent: true, Multipath: true,
				Portals: []host.Portal{p3260("10.0.0.1"), p3260("10.0.0.2"), p3260("fe80::1")}}),
		},
		{
			name: "portals comma list",
			req:  Request{VolumeContext: base("portals", "10.0.0.2:3261, 10.0.0.3,,")},
			want: spec(ISCSISpec{LUN: 1, Persistent: true, Multipath: true,
				Portals: []host.Portal{p3260("10.0.0.1"), {Address: "10.0.0.2", Port: 3261}, p3260("10.0.0.3")}}),
		},
		{
			name: "bracketed single portal in portals",
			req:  Request{VolumeContext: base("portals", "[fe80::1]:3260")},
			want: spec(ISCSISpec{LUN: 1, Persistent: true, Multipath: true,
				Portals: []host.Portal{p3260("10.0.0.1"), p3260("fe80::1")}}),
		},
		{
			name: "portals repeating targetPortal only",
			req:  Request{VolumeContext: base("portals", `["10.0.0.1:3260"]`)},
			want: spec(ISCSISpec{LUN: 1, Persistent: true}),
		},
		{name: "bad portals entry", req: Request{VolumeContext: base("Portals", `["10.0.0.1:0"]`)}, wantKey: "Portals"},
		{name: "bad portals JSON falls back to list", req: Request{VolumeContext: base("portals", `[1]`)}, wantKey: "portals"},
		{name: "multipath false with portals", req: Request{VolumeContext: base("portals", "10.0.0.2", "multipath", "false")},
			want: spec(ISCSISpec{LUN: 1, Persistent: true, Portals: []host.Portal{p3260("10.0.0.1"), p3260("10.0.0.2")}})},
		{name: "multipath true with one portal", req: Request{VolumeContext: base("multipath", "True")}, want: spec(ISCSISpec{LUN: 1, Persistent: true, Multipath: true})},
		{name: "multipath bad", req: Request{VolumeContext: base("multipath", "on")}, wantKey: "multipath"},
		{name: "persistent false", req: Request{VolumeContext: base("persistent", "0")}, want: spec(ISCSISpec{LUN: 1})},
		{name: "persistent bad", req: Request{VolumeContext: base("persistent", "no")}, wantKey: "persistent"},
		{name: "initiatorPortal", req: Request{VolumeContext: base("initiatorPortal", "192.168.1.10")}, want: spec(ISCSISpec{LUN: 1, Persistent: true, InitiatorPortal: "192.168.1.10"})},
		{name: "initiatorPortal IPv6", req: Request{VolumeContext: base("initiatorPortal", "FD00::0:10")}, want: spec(ISCSISpec{LUN: 1, Persistent: true, InitiatorPortal: "fd00::10"})},
		{name: "initiatorPortal host name", req: Request{VolumeContext: base("initiatorPortal", "node1")}, wantKey: "initiatorPortal"},
		{name: "initiatorPortal with port", req: Request{VolumeContext: base("initiatorPortal", "10.0.0.9:3260")}, wantKey: "initiatorPortal"},
		{name: "initiatorPortal zone", req: Request{VolumeContext: base("initiatorPortal", "fe80::1%3")}, wantKey: "initiatorPortal"},
		{name: "missing targetPortal", req: Request{VolumeContext: m("iqn", iqn, "lun", "1")}, wantKey: "targetPortal"},
		{name: "bad targetPortal", req: Request{VolumeContext: m("TargetPortal", "10.0.0.1:99999", "iqn", iqn, "lun", "1")}, wantKey: "TargetPortal"},
		{name: "missing iqn", req: Request{VolumeContext: m("backend", "iscsi", "targetPortal", "h", "lun", "1")}, wantKey: "iqn"},
		{name: "bad iqn", req: Request{VolumeContext: m("targetPortal", "h", "IQN", "iqn.x", "lun", "1")}, wantKey: "IQN"},
		{name: "upper-case iqn lower-cased", req: Request{VolumeContext: base("iqn", "IQN.2001-04.COM.EXAMPLE:TARGET")}, want: spec(ISCSISpec{LUN: 1, Persistent: true})},
		{name: "missing lun", req: Request{VolumeContext: m("targetPortal", "h", "iqn", iqn)}, wantKey: "lun"},
		{name: "lun abc", req: Request{VolumeContext: base("lun", "abc")}, wantKey: "lun"},
		{name: "lun max", req: Request{VolumeContext: base("lun", "65535")}, want: spec(ISCSISpec{LUN: 65535, Persistent: true})},
		{name: "lun too large", req: Request{VolumeContext: base("lun", "65536")}, wantKey: "lun"},

		{
			name: "session CHAP",
			req:  Request{VolumeContext: base("sessionCHAPAuth", "true"), Secrets: sessionSecrets()},
			want: spec(ISCSISpec{LUN: 1, Persistent: true, SessionAuth: host.AuthOneWay, SessionCHAP: chap("init", "twelve-bytes")}),
		},
		{
			name: "mutual CHAP",
			req: Request{VolumeContext: base("sessionCHAPAuth", "true"),
				Secrets: sessionSecrets("node.session.auth.username_in", "tgt", "node.session.auth.password_in", "sixteen-bytes-xx")},
			want: spec(ISCSISpec{LUN: 1, Persistent: true, SessionAuth: host.AuthMutual, SessionCHAP: chap("init", "twelve-bytes"),
				InitiatorSecret: host.NewSecret("sixteen-bytes-xx")}),
		},
		{
			name: "mutual CHAP without username_in",
			req:  Request{VolumeContext: base("sessionCHAPAuth", "true"), Secrets: sessionSecrets("node.session.auth.password_in", "sixteen-bytes-xx")},
			want: spec(ISCSISpec{LUN: 1, Persistent: true, SessionAuth: host.AuthMutual, SessionCHAP: chap("init", "twelve-bytes"),
				InitiatorSecret: host.NewSecret("sixteen-bytes-xx")}),
		},
		{
			name: "discovery CHAP",
			req: Request{VolumeContext: base("discoveryCHAPAuth", "true"),
				Secrets: m("node.sendtargets.auth.username", "disc", "node.sendtargets.auth.password", "discovery-pw")},
			want: spec(ISCSISpec{LUN: 1, Persistent: true, DiscoveryCHAP: &host.CHAP{User: "disc", Secret: host.NewSecret("discovery-pw")}}),
		},
		{
			name: "CHAP secrets without the flags are not used",
			req: Request{VolumeContext: base(),
				Secrets: sessionSecrets("node.session.auth.password_in", "short", "node.sendtargets.auth.password", "x")},
			want: spec(ISCSISpec{LUN: 1, Persistent: true}),
		},
		{
			name: "CHAP secrets with the flags false are not used",
			req: Request{VolumeContext: base("sessionCHAPAuth", "false", "discoveryCHAPAuth", "0"),
				Secrets: m("node.session.auth.password", "short")},
			want: spec(ISCSISpec{LUN: 1, Persistent: true}),
		},
		{name: "session CHAP without user", req: Request{VolumeContext: base("sessionCHAPAuth", "true"), Secrets: m("node.session.auth.password", "twelve-bytes")}, wantKey: "node.session.auth.username"},
		{name: "session CHAP without secret", req: Request{VolumeContext: base("sessionCHAPAuth", "true"), Secrets: m("node.session.auth.username", "u")}, wantKey: "node.session.auth.password"},
		{name: "session CHAP secret too short", req: Request{VolumeContext: base("sessionCHAPAuth", "true"), Secrets: m("node.session.auth.username", "u", "Node.Session.Auth.Password", "eleven-byte")}, wantKey: "Node.Session.Auth.Password"},
		{name: "session CHAP secret too long", req: Request{VolumeContext: base("sessionCHAPAuth", "true"), Secrets: m("node.session.auth.username", "u", "node.session.auth.password", "seventeen-bytes-x")}, wantKey: "node.session.auth.password"},
		{name: "session CHAP user with newline", req: Request{VolumeContext: base("sessionCHAPAuth", "true"), Secrets: m("node.session.auth.username", "u\n", "node.session.auth.password", "twelve-bytes")}, wantKey: "node.session.auth.username"},
		{name: "mutual secret too short", req: Request{VolumeContext: base("sessionCHAPAuth", "true"), Secrets: sessionSecrets("node.session.auth.password_in", "short")}, wantKey: "node.session.auth.password_in"},
		{name: "mutual secret equals session secret", req: Request{VolumeContext: base("sessionCHAPAuth", "true"), Secrets: sessionSecrets("node.session.auth.password_in", "twelve-bytes")}, wantKey: "node.session.auth.password_in"},
		{name: "discovery CHAP without user", req: Request{VolumeContext: base("discoveryCHAPAuth", "1"), Secrets: m("node.sendtargets.auth.password", "discovery-pw")}, wantKey: "node.sendtargets.auth.username"},
		{name: "discovery CHAP without secret", req: Request{VolumeContext: base("discoveryCHAPAuth", "1"), Secrets: m("node.sendtargets.auth.username", "d")}, wantKey: "node.sendtargets.auth.password"},
		{name: "discovery CHAP secret too long", req: Request{VolumeContext: base("discoveryCHAPAuth", "1"), Secrets: m("node.sendtargets.auth.username", "d", "node.sendtargets.auth.password", strings.Repeat("x", 17))}, wantKey: "node.sendtargets.auth.password"},
		{name: "sessionCHAPAuth bad", req: Request{VolumeContext: base("sessionCHAPAuth", "enabled")}, wantKey: "sessionCHAPAuth"},
		{name: "discoveryCHAPAuth bad", req: Request{VolumeContext: base("DiscoveryChapAuth", "2")}, wantKey: "DiscoveryChapAuth"},
		{name: "CHAP secret in volume_context", req: Request{VolumeContext: base("node.session.auth.password", "x")}, wantKey: "node.session.auth.password"},
		{
			name:  "IQN is lower case",
			req:   Request{VolumeContext: base("iqn", strings.ToUpper(iqn))},
			check: func(t *testing.T, v Volume) { mustEqual(t, v.ISCSI.IQN, iqn) },
		},
	})
}

func mustEqual(t *testing.T, got, want string) {
	t.Helper()
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
