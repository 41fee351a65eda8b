package backend

import "testing"

func TestCredentialCompare(t *testing.T) {
	alice := Credential{User: "CORP\\alice", SecretMAC: "aa"}
	tests := []struct {
		name string
		v    Credential
		want CredentialMatch
	}{
		{"same", Credential{User: "corp\\ALICE", SecretMAC: "aa"}, CredentialSame},
		{"another secret", Credential{User: "CORP\\alice", SecretMAC: "bb"}, CredentialDrift},
		{"another user", Credential{User: "CORP\\bob", SecretMAC: "aa"}, CredentialOtherUser},
		{"no user against a user", Credential{}, CredentialOtherUser},
		{"a record without a MAC", Credential{User: "CORP\\alice"}, CredentialSame},
	}
	for _, tt := range tests {
		if got := alice.Compare(tt.v, AccountNames); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
	if got := (Credential{User: "alice"}).Compare(Credential{User: "alice", SecretMAC: "aa"}, AccountNames); got != CredentialSame {
		t.Errorf("a resource record without a MAC: %s, want same", got)
	}
}

// TestCHAPNamesCompareExactly: a CHAP name is octets, which targets
// compare byte for byte; two names that differ in case are two users,
// never drift of one.
func TestCHAPNamesCompareExactly(t *testing.T) {
	node := Credential{User: "k8s-node", SecretMAC: "aa"}
	tests := []struct {
		v    Credential
		want CredentialMatch
	}{
		{Credential{User: "k8s-node", SecretMAC: "aa"}, CredentialSame},
		{Credential{User: "k8s-node", SecretMAC: "bb"}, CredentialDrift},
		{Credential{User: "K8S-NODE", SecretMAC: "aa"}, CredentialOtherUser},
		{Credential{User: "K8s-node", SecretMAC: "bb"}, CredentialOtherUser},
	}
	for _, tt := range tests {
		if got := node.Compare(tt.v, CHAPNames); got != tt.want {
			t.Errorf("%q against %q: %s, want %s", tt.v.User, node.User, got, tt.want)
		}
	}
}

func TestCredentialNote(t *testing.T) {
	c := Credential{User: "alice", SecretMAC: "0a1b"}
	if got := DecodeCredential(c.Encode()); got != c {
		t.Fatalf("round trip %+v, want %+v", got, c)
	}
	// Earlier versions kept the bare user name, "" for anonymous.
	for _, legacy := range []string{"alice", `CORP\alice`, "", "{not json"} {
		if got := DecodeCredential(legacy); got != (Credential{User: legacy}) {
			t.Errorf("legacy note %q read as %+v", legacy, got)
		}
	}
	// A field a later version adds does not turn the note into a user name.
	if got := DecodeCredential(`{"user":"alice","secretMAC":"0a1b","since":"later"}`); got != c {
		t.Errorf("note with a later field read as %+v", got)
	}
}
