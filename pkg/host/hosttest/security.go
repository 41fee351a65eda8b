package hosttest

import (
	"context"
	"slices"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// securityCases are the cases of host.Security: a volume root's DACL, the
// allow entries volumeRootAccess adds there, and account names.
var securityCases = []Case{
	{Name: "security/missing-volume", Given: Nothing, Check: func(t *testing.T, ctx context.Context, f Fixture) {
		_, err := f.Host.Security.RootDACL(ctx, f.MissingVolume)
		is(t, "RootDACL of a missing volume", err, host.ErrNotFound)
		_, err = f.Host.Security.AddRootAllowEntries(ctx, f.MissingVolume, []host.ACE{containerUserModify})
		is(t, "AddRootAllowEntries on a missing volume", err, host.ErrNotFound)
	}},
	// The entries a fresh root has are not documented (MSFT_Volume.Format
	// takes no security descriptor, and public dumps of Windows Server and
	// Windows 11 differ: docs/windows.md): any is accepted. What must hold
	// is that the grant is added once, after every entry there, which stay
	// as they were, and that asking again adds nothing.
	{Name: "security/add-root-allow-entries", Given: FormattedVolume, Check: func(t *testing.T, ctx context.Context, f Fixture) {
		before, err := f.Host.Security.RootDACL(ctx, f.Volume.GUIDPath)
		is(t, "RootDACL", err, nil)
		if before.Null {
			t.Skip("the root of a fresh volume has a NULL DACL here")
		}
		added, err := f.Host.Security.AddRootAllowEntries(ctx, f.Volume.GUIDPath, []host.ACE{containerUserModify})
		is(t, "AddRootAllowEntries", err, nil)
		if len(added) != 1 || added[0] != containerUserModify {
			t.Fatalf("added %+v, want the one entry", added)
		}
		after, err := f.Host.Security.RootDACL(ctx, f.Volume.GUIDPath)
		is(t, "RootDACL after", err, nil)
		want := slices.Insert(slices.Clone(before.Entries), before.InsertAt(), containerUserModify)
		if !slices.Equal(after.Entries, want) || after.Protected != before.Protected {
			t.Fatalf("root DACL after the grant:\n %+v\nwant\n %+v", after, want)
		}
		added, err = f.Host.Security.AddRootAllowEntries(ctx, f.Volume.GUIDPath, []host.ACE{containerUserModify})
		is(t, "AddRootAllowEntries again", err, nil)
		if len(added) != 0 {
			t.Fatalf("added again: %+v", added)
		}
		again, err := f.Host.Security.RootDACL(ctx, f.Volume.GUIDPath)
		is(t, "RootDACL after asking again", err, nil)
		if !slices.Equal(again.Entries, after.Entries) {
			t.Fatalf("asking again changed the DACL: %+v", again)
		}
	}},
	{Name: "security/invalid-entry", Given: FormattedVolume, Check: func(t *testing.T, ctx context.Context, f Fixture) {
		deny := containerUserModify
		deny.Type = host.ACEAccessDenied
		_, err := f.Host.Security.AddRootAllowEntries(ctx, f.Volume.GUIDPath, []host.ACE{deny})
		is(t, "AddRootAllowEntries of a deny entry", err, host.ErrInvalid)
		bad := containerUserModify
		bad.SID = "S-1-5-x"
		_, err = f.Host.Security.AddRootAllowEntries(ctx, f.Volume.GUIDPath, []host.ACE{bad})
		is(t, "AddRootAllowEntries of a malformed SID", err, host.ErrInvalid)
	}},
	{Name: "security/unknown-account", Given: Nothing, Check: func(t *testing.T, ctx context.Context, f Fixture) {
		_, err := f.Host.Security.LookupAccountName(ctx, "csi-windows-node-no-such-account")
		is(t, "LookupAccountName of an unknown name", err, host.ErrNotFound)
	}},
}

// containerUserModify is the entry volumeRootAccess "ContainerUser:modify"
// adds: allow, inherited by files and directories below, modify rights
// (0x1301bf), for S-1-5-93-2-2.
var containerUserModify = host.ACE{Type: host.ACEAccessAllowed, Flags: host.ACEInheritedBelow, Mask: 0x1301bf, SID: "S-1-5-93-2-2"}
