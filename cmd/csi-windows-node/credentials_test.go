package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"
)

// utf16File encodes s as Windows PowerShell 5.1's Out-File and > do:
// UTF-16 little endian after a byte order mark.
func utf16File(s string) []byte {
	b := []byte{0xFF, 0xFE}
	for _, u := range utf16.Encode([]rune(s)) {
		b = binary.LittleEndian.AppendUint16(b, u)
	}
	return b
}

// A credentials file reads the same whichever way an operator made it on
// the node; its values never appear in an error.
func TestReadCredentials(t *testing.T) {
	const secret = "pässw0rd=x"
	text := "# SMB\r\nusername=alice\r\npassword=" + secret + "\r\ndomain=CORP\r\n"
	tests := []struct {
		name    string
		content []byte
		wantErr string
	}{
		{name: "UTF-8", content: []byte(text)},
		{name: "UTF-8 with a byte order mark (Set-Content -Encoding UTF8)", content: append([]byte{0xEF, 0xBB, 0xBF}, text...)},
		{name: "UTF-16LE with a byte order mark (Out-File, >)", content: utf16File(text)},
		{name: "UTF-16 of an odd length", content: append(utf16File(text), 'x'), wantErr: "odd number of bytes"},
		{name: "neither", content: []byte("username=alice\npassword=\xff\xfe\xfd" + secret + "\n"), wantErr: "not UTF-8"},
		{name: "no password", content: []byte("username=alice\n"), wantErr: "username and password are both required"},
		{name: "unknown key", content: []byte("username=alice\nuser=" + secret + "\n"), wantErr: `unknown key "user"`},
		{name: "too long", content: []byte(strings.Repeat("#\n", maxCredentialsFile)), wantErr: "longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "creds")
			if err := os.WriteFile(path, tt.content, 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := readCredentials(path, "domain")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "pässw0rd") {
					t.Errorf("the error holds the password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.user != "alice" || c.password.Reveal() != secret || c.extra != "CORP" {
				t.Errorf("read user %q, domain %q, password ok %v", c.user, c.extra, c.password.Reveal() == secret)
			}
		})
	}
}
