package winhost_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winhost"
	"github.com/wincsi/csi-windows-node/pkg/winhost/scripted"
)

// File attributes (winnt.h): what GetFileAttributesW returns for each kind
// of object, per the "File Attribute Constants" page: a symlink or mount
// point to a directory carries DIRECTORY|REPARSE_POINT.
const (
	attrDir     = 0x10
	attrArchive = 0x20
	attrReparse = 0x400
)

const (
	target  = `C:\var\lib\kubelet\pods\7c1e\volumes\kubernetes.io~csi\pv-1\mount`
	lTarget = `\\?\` + target
	lStage  = `\\?\` + staging
)

func TestFilesStat(t *testing.T) {
	type step struct {
		kind  string
		reply scripted.Reply
	}
	attrs := func(a uint32) step { return step{"GetFileAttributes", scripted.Reply{Uint32: a}} }
	reparse := func(b []byte) step { return step{"ReadReparsePoint", scripted.Reply{Bytes: b}} }
	fail := func(kind, call string, code uint32) step {
		return step{kind, scripted.Reply{Err: w32(call, code)}}
	}
	vol := `\??\Volume{1B7E5F0C-2B4D-4C6F-9A51-0E8D3A7C2F11}\`
	tests := []struct {
		name  string
		steps []step
		want  host.PathInfo
		err   error
	}{
		{"missing file", []step{fail("GetFileAttributes", "GetFileAttributesW", winhost.ErrorFileNotFound)}, host.PathInfo{Kind: host.PathMissing}, nil},
		{"missing parent", []step{fail("GetFileAttributes", "GetFileAttributesW", winhost.ErrorPathNotFound)}, host.PathInfo{Kind: host.PathMissing}, nil},
		{"directory", []step{attrs(attrDir)}, host.PathInfo{Kind: host.PathDir}, nil},
		{"file", []step{attrs(attrArchive)}, host.PathInfo{Kind: host.PathFile}, nil},
		// A mount point made by SetVolumeMountPoint: tag MOUNT_POINT,
		// substitute \??\Volume{GUID}\, empty print name (what fsutil
		// reparsepoint query shows for a mounted folder).
		{"volume mount point", []step{attrs(attrDir | attrReparse),
			reparse(winhost.BuildReparse(winhost.IOReparseTagMountPoint, vol, "", 0))},
			host.PathInfo{Kind: host.PathMountPoint, Target: guidA}, nil},
		// A junction (mklink /J): the same tag naming a directory.
		{"junction", []step{attrs(attrDir | attrReparse),
			reparse(winhost.BuildReparse(winhost.IOReparseTagMountPoint, `\??\D:\data`, `D:\data`, 0))},
			host.PathInfo{Kind: host.PathOther, Target: `D:\data`}, nil},
		// The substitute name is what Windows follows; the print name is
		// display text and is not trusted.
		{"directory symlink", []step{attrs(attrDir | attrReparse),
			reparse(winhost.BuildReparse(winhost.IOReparseTagSymlink, `\??\`+staging, `C:\elsewhere`, 0))},
			host.PathInfo{Kind: host.PathSymlink, Target: staging}, nil},
		{"symlink to a share", []step{attrs(attrDir | attrReparse),
			reparse(winhost.BuildReparse(winhost.IOReparseTagSymlink, `\??\UNC\fs1\share\dir\`, `\\?\UNC\fs1\share\dir\`, 0))},
			host.PathInfo{Kind: host.PathSymlink, Target: `\\fs1\share\dir\`}, nil},
		{"symlink to a volume GUID path (mklink /D)", []step{attrs(attrDir | attrReparse),
			reparse(winhost.BuildReparse(winhost.IOReparseTagSymlink, vol, vol, 0))},
			host.PathInfo{Kind: host.PathSymlink, Target: guidA}, nil},
		{"relative symlink", []step{attrs(attrDir | attrReparse),
			reparse(winhost.BuildReparse(winhost.IOReparseTagSymlink, `..\globalmount`, `..\globalmount`, winhost.SymlinkFlagRelative))},
			host.PathInfo{Kind: host.PathSymlink, Target: `..\globalmount`}, nil},
		// Not every name-surrogate is a mount point (reparse.go):
		// a dedup reparse point (IO_REPARSE_TAG_DEDUP 0x80000013) is other.
		{"other reparse tag", []step{attrs(attrArchive | attrReparse), reparse(winhost.BuildReparse(0x80000013, "", "", 0))},
			host.PathInfo{Kind: host.PathOther}, nil},
		{"reparse point removed meanwhile", []step{attrs(attrDir | attrReparse),
			fail("ReadReparsePoint", "DeviceIoControl", winhost.ErrorNotAReparsePoint)}, host.PathInfo{Kind: host.PathDir}, nil},
		{"path removed meanwhile", []step{attrs(attrDir | attrReparse),
			fail("ReadReparsePoint", "CreateFileW", winhost.ErrorFileNotFound)}, host.PathInfo{Kind: host.PathMissing}, nil},
		{"access denied", []step{fail("GetFileAttributes", "GetFileAttributesW", winhost.ErrorAccessDenied)}, host.PathInfo{}, host.ErrAccessDenied},
		{"reparse access denied", []step{attrs(attrDir | attrReparse),
			fail("ReadReparsePoint", "CreateFileW", winhost.ErrorAccessDenied)}, host.PathInfo{}, host.ErrAccessDenied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := scripted.New(t)
			for _, s := range tt.steps {
				e.ExpectWin32(s.kind, []any{lTarget}, s.reply)
			}
			got, err := filesOf(e).Stat(context.Background(), target)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Stat = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
	t.Run("malformed reparse data", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectWin32("GetFileAttributes", []any{lTarget}, scripted.Reply{Uint32: attrDir | attrReparse})
		e.ExpectWin32("ReadReparsePoint", []any{lTarget}, scripted.Reply{Bytes: []byte{3, 0, 0, 0xa0, 0xff}})
		if _, err := filesOf(e).Stat(context.Background(), target); err == nil {
			t.Fatal("want an error")
		}
	})
	t.Run("long path gets the \\\\?\\ prefix", func(t *testing.T) {
		e := scripted.New(t)
		long := `C:\var\lib\kubelet\pods\` + strings.Repeat("d", 250) + `\mount`
		e.ExpectWin32("GetFileAttributes", []any{`\\?\` + long}, scripted.Reply{Uint32: attrDir})
		if got, err := filesOf(e).Stat(context.Background(), long); err != nil || got.Kind != host.PathDir {
			t.Fatalf("Stat = %+v, %v", got, err)
		}
	})
	t.Run("hung file system", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectWin32("GetFileAttributes", []any{lTarget}, scripted.Reply{Block: true})
		if _, err := filesOf(e).Stat(e.BlockedContext(), target); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want DeadlineExceeded", err)
		}
	})
}

func TestFilesMakeDir(t *testing.T) {
	pod := `C:\var\lib\kubelet\pods\7c1e\volumes\kubernetes.io~csi\pv-1`
	exists := scripted.Reply{Err: w32("CreateDirectoryW", winhost.ErrorAlreadyExists)}
	noParent := scripted.Reply{Err: w32("CreateDirectoryW", winhost.ErrorPathNotFound)}
	t.Run("parent exists: one call", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectWin32("CreateDirectory", []any{`\\?\` + pod}, ok())
		if err := filesOf(e).MakeDir(context.Background(), pod); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("existing directory", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectWin32("CreateDirectory", []any{`\\?\` + pod}, exists)
		e.ExpectWin32("GetFileAttributes", []any{`\\?\` + pod}, scripted.Reply{Uint32: attrDir})
		if err := filesOf(e).MakeDir(context.Background(), pod); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a file is in the way", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectWin32("CreateDirectory", []any{`\\?\` + pod}, exists)
		e.ExpectWin32("GetFileAttributes", []any{`\\?\` + pod}, scripted.Reply{Uint32: attrArchive})
		if err := filesOf(e).MakeDir(context.Background(), pod); !errors.Is(err, host.ErrAlreadyExists) {
			t.Fatalf("err = %v, want ErrAlreadyExists", err)
		}
	})
	t.Run("missing ancestors created one by one", func(t *testing.T) {
		e := scripted.New(t)
		p1 := `C:\var\lib\kubelet\pods\7c1e\volumes\kubernetes.io~csi`
		p2 := `C:\var\lib\kubelet\pods\7c1e\volumes`
		p3 := `C:\var\lib\kubelet\pods\7c1e`
		e.ExpectWin32("CreateDirectory", []any{`\\?\` + pod}, noParent)
		e.ExpectWin32("CreateDirectory", []any{`\\?\` + p1}, noParent)
		e.ExpectWin32("CreateDirectory", []any{`\\?\` + p2}, noParent)
		e.ExpectWin32("CreateDirectory", []any{`\\?\` + p3}, ok())
		e.ExpectWin32("CreateDirectory", []any{`\\?\` + p2}, ok())
		e.ExpectWin32("CreateDirectory", []any{`\\?\` + p1}, exists) // made concurrently
		e.ExpectWin32("GetFileAttributes", []any{`\\?\` + p1}, scripted.Reply{Uint32: attrDir})
		e.ExpectWin32("CreateDirectory", []any{`\\?\` + pod}, ok())
		if err := filesOf(e).MakeDir(context.Background(), pod); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("missing drive stops at the root", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectWin32("CreateDirectory", []any{`\\?\Q:\a\b`}, noParent)
		e.ExpectWin32("CreateDirectory", []any{`\\?\Q:\a`}, noParent)
		if err := filesOf(e).MakeDir(context.Background(), `Q:\a\b`); !errors.Is(err, host.ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
	})
	t.Run("share root is never created", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectWin32("CreateDirectory", []any{`\\?\UNC\fs1\share\a`}, noParent)
		if err := filesOf(e).MakeDir(context.Background(), `\\fs1\share\a`); !errors.Is(err, host.ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
	})
	t.Run("access denied", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectWin32("CreateDirectory", []any{`\\?\` + pod}, scripted.Reply{Err: w32("CreateDirectoryW", winhost.ErrorAccessDenied)})
		if err := filesOf(e).MakeDir(context.Background(), pod); !errors.Is(err, host.ErrAccessDenied) {
			t.Fatalf("err = %v, want ErrAccessDenied", err)
		}
	})
	t.Run("hung", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectWin32("CreateDirectory", []any{`\\?\` + pod}, scripted.Reply{Block: true})
		if err := filesOf(e).MakeDir(e.BlockedContext(), pod); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want DeadlineExceeded", err)
		}
	})
}

func TestFilesRemove(t *testing.T) {
	mp := winhost.BuildReparse(winhost.IOReparseTagMountPoint, `\??\Volume{1b7e5f0c-2b4d-4c6f-9a51-0e8d3a7c2f11}\`, "", 0)
	link := winhost.BuildReparse(winhost.IOReparseTagSymlink, `\??\`+staging, staging, 0)
	junction := winhost.BuildReparse(winhost.IOReparseTagMountPoint, `\??\D:\data`, `D:\data`, 0)
	tests := []struct {
		name    string
		attrs   uint32
		reparse []byte
		remove  *scripted.Reply // nil: RemoveDirectory must not be called
		want    error
	}{
		{"empty directory", attrDir, nil, &scripted.Reply{}, nil},
		{"directory symlink", attrDir | attrReparse, link, &scripted.Reply{}, nil},
		{"junction", attrDir | attrReparse, junction, &scripted.Reply{}, nil},
		{"directory with entries", attrDir, nil, &scripted.Reply{Err: w32("RemoveDirectoryW", winhost.ErrorDirNotEmpty)}, host.ErrDirNotEmpty},
		{"volume mount point", attrDir | attrReparse, mp, nil, host.ErrInUse},
		{"plain file", attrArchive, nil, nil, host.ErrConflict},
		{"file symlink", attrArchive | attrReparse, link, nil, host.ErrConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := scripted.New(t)
			e.ExpectWin32("GetFileAttributes", []any{lTarget}, scripted.Reply{Uint32: tt.attrs})
			if tt.reparse != nil {
				e.ExpectWin32("ReadReparsePoint", []any{lTarget}, scripted.Reply{Bytes: tt.reparse})
			}
			if tt.remove != nil {
				e.ExpectWin32("RemoveDirectory", []any{lTarget}, *tt.remove)
			}
			err := filesOf(e).Remove(context.Background(), target)
			if tt.want == nil && err != nil {
				t.Fatal(err)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
	t.Run("missing", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectWin32("GetFileAttributes", []any{lTarget}, scripted.Reply{Err: w32("GetFileAttributesW", winhost.ErrorFileNotFound)})
		if err := filesOf(e).Remove(context.Background(), target); !errors.Is(err, host.ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
	})
}

func TestFilesSymlink(t *testing.T) {
	const both = 0x1 | 0x2 // SYMBOLIC_LINK_FLAG_DIRECTORY | ..._ALLOW_UNPRIVILEGED_CREATE
	tests := []struct {
		name, target, stored string
	}{
		{"drive target as given", staging, staging},
		{"share target in the long UNC form with a trailing backslash", `\\fs1\share\pv-1`, `\\?\UNC\fs1\share\pv-1\`},
		{"share root", `\\fs1\share`, `\\?\UNC\fs1\share\`},
		{"share target already long", `\\?\UNC\fs1\share\pv-1\`, `\\?\UNC\fs1\share\pv-1\`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := scripted.New(t)
			e.ExpectWin32("CreateSymbolicLink", []any{lTarget, tt.stored, uint32(both)}, ok())
			if err := filesOf(e).Symlink(context.Background(), target, tt.target); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("old Windows rejects the unprivileged flag: retried without", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectWin32("CreateSymbolicLink", []any{lTarget, staging, uint32(both)}, scripted.Reply{Err: w32("CreateSymbolicLinkW", winhost.ErrorInvalidParameter)})
		e.ExpectWin32("CreateSymbolicLink", []any{lTarget, staging, uint32(0x1)}, ok())
		if err := filesOf(e).Symlink(context.Background(), target, staging); err != nil {
			t.Fatal(err)
		}
	})
	for _, c := range []struct {
		code uint32
		want error
	}{{winhost.ErrorAlreadyExists, host.ErrAlreadyExists}, {winhost.ErrorPrivilegeNotHeld, host.ErrAccessDenied}, {winhost.ErrorPathNotFound, host.ErrNotFound}} {
		t.Run("error "+itoa(c.code), func(t *testing.T) {
			e := scripted.New(t)
			e.ExpectWin32("CreateSymbolicLink", []any{lTarget, staging, uint32(both)}, scripted.Reply{Err: w32("CreateSymbolicLinkW", c.code)})
			if err := filesOf(e).Symlink(context.Background(), target, staging); !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
		})
	}
	t.Run("empty target", func(t *testing.T) {
		e := scripted.New(t)
		if err := filesOf(e).Symlink(context.Background(), target, ""); !errors.Is(err, host.ErrInvalid) {
			t.Fatalf("err = %v, want ErrInvalid", err)
		}
	})
}

func TestFilesIsEmptyDir(t *testing.T) {
	t.Run("empty", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectWin32("GetFileAttributes", []any{lStage}, scripted.Reply{Uint32: attrDir})
		e.ExpectWin32("DirectoryHasEntries", []any{lStage}, scripted.Reply{Bool: false})
		if empty, err := filesOf(e).IsEmptyDir(context.Background(), staging); err != nil || !empty {
			t.Fatalf("IsEmptyDir = %t, %v", empty, err)
		}
	})
	t.Run("with entries", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectWin32("GetFileAttributes", []any{lStage}, scripted.Reply{Uint32: attrDir})
		e.ExpectWin32("DirectoryHasEntries", []any{lStage}, scripted.Reply{Bool: true})
		if empty, err := filesOf(e).IsEmptyDir(context.Background(), staging); err != nil || empty {
			t.Fatalf("IsEmptyDir = %t, %v", empty, err)
		}
	})
	t.Run("mount point is not a plain directory", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectWin32("GetFileAttributes", []any{lStage}, scripted.Reply{Uint32: attrDir | attrReparse})
		if empty, err := filesOf(e).IsEmptyDir(context.Background(), staging); err != nil || empty {
			t.Fatalf("IsEmptyDir = %t, %v", empty, err)
		}
	})
	t.Run("file", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectWin32("GetFileAttributes", []any{lStage}, scripted.Reply{Uint32: attrArchive})
		if empty, err := filesOf(e).IsEmptyDir(context.Background(), staging); err != nil || empty {
			t.Fatalf("IsEmptyDir = %t, %v", empty, err)
		}
	})
	t.Run("missing", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectWin32("GetFileAttributes", []any{lStage}, scripted.Reply{Err: w32("GetFileAttributesW", winhost.ErrorPathNotFound)})
		if _, err := filesOf(e).IsEmptyDir(context.Background(), staging); !errors.Is(err, host.ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
	})
	t.Run("listing fails", func(t *testing.T) {
		e := scripted.New(t)
		e.ExpectWin32("GetFileAttributes", []any{lStage}, scripted.Reply{Uint32: attrDir})
		e.ExpectWin32("DirectoryHasEntries", []any{lStage}, scripted.Reply{Err: w32("FindFirstFileW", winhost.ErrorAccessDenied)})
		if _, err := filesOf(e).IsEmptyDir(context.Background(), staging); !errors.Is(err, host.ErrAccessDenied) {
			t.Fatalf("err = %v, want ErrAccessDenied", err)
		}
	})
}

func TestFilesReadDir(t *testing.T) {
	ctx := context.Background()
	lStage := long(staging)
	tests := []struct {
		name   string
		script func(e *scripted.Executor)
		want   []string
		wantEr error
	}{
		{"plain directory", func(e *scripted.Executor) {
			e.ExpectWin32("GetFileAttributes", []any{lStage}, scripted.Reply{Uint32: attrDir})
			e.ExpectWin32("DirectoryEntries", []any{lStage}, scripted.Reply{Strings: []string{"a", "globalmount"}})
		}, []string{"a", "globalmount"}, nil},
		{"empty directory", func(e *scripted.Executor) {
			e.ExpectWin32("GetFileAttributes", []any{lStage}, scripted.Reply{Uint32: attrDir})
			e.ExpectWin32("DirectoryEntries", []any{lStage}, scripted.Reply{})
		}, nil, nil},
		// A link or mount point is never listed: what it leads to is
		// another volume's or a share's contents.
		{"mount point", func(e *scripted.Executor) {
			e.ExpectWin32("GetFileAttributes", []any{lStage}, scripted.Reply{Uint32: attrDir | attrReparse})
		}, nil, host.ErrInvalid},
		{"file", func(e *scripted.Executor) {
			e.ExpectWin32("GetFileAttributes", []any{lStage}, scripted.Reply{Uint32: attrArchive})
		}, nil, host.ErrInvalid},
		{"missing", func(e *scripted.Executor) {
			e.ExpectWin32("GetFileAttributes", []any{lStage}, scripted.Reply{Err: w32("GetFileAttributesW", winhost.ErrorPathNotFound)})
		}, nil, host.ErrNotFound},
		{"listing refused", func(e *scripted.Executor) {
			e.ExpectWin32("GetFileAttributes", []any{lStage}, scripted.Reply{Uint32: attrDir})
			e.ExpectWin32("DirectoryEntries", []any{lStage}, scripted.Reply{Err: w32("FindFirstFileW", winhost.ErrorAccessDenied)})
		}, nil, host.ErrAccessDenied},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := scripted.New(t)
			tc.script(e)
			got, err := filesOf(e).ReadDir(ctx, staging)
			if !errors.Is(err, tc.wantEr) || (tc.wantEr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tc.wantEr)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("names = %q, want %q", got, tc.want)
			}
		})
	}
	if _, err := filesOf(scripted.New(t)).ReadDir(ctx, ""); !errors.Is(err, host.ErrInvalid) {
		t.Fatalf("ReadDir(\"\") = %v, want ErrInvalid", err)
	}
}
