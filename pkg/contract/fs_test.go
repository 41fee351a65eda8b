package contract

import (
	"strings"
	"testing"
)

func TestParseFS(t *testing.T) {
	disk := func(kv ...string) map[string]string { return m(append([]string{"diskSerial", "s"}, kv...)...) }
	fsIs := func(want FileSystem) func(*testing.T, Volume) {
		return func(t *testing.T, v Volume) {
			t.Helper()
			if v.FS != want {
				t.Fatalf("FS %+v, want %+v", v.FS, want)
			}
		}
	}
	iscsi := func(kv ...string) map[string]string {
		return m(append([]string{"targetPortal", "h", "iqn", "iqn.2001-04.com.example", "lun", "0"}, kv...)...)
	}
	smb := func(kv ...string) map[string]string {
		return m(append([]string{"source", `\\s\x`, "mapWithoutCredentials", "true"}, kv...)...)
	}
	runParseCases(t, []parseCase{
		{name: "default NTFS", req: Request{VolumeContext: disk()}, check: fsIs(FileSystem{Type: FSNTFS})},
		{name: "capability ntfs", req: Request{VolumeContext: disk(), FsType: "ntfs"}, check: fsIs(FileSystem{Type: FSNTFS, Explicit: true})},
		{name: "capability REFS", req: Request{VolumeContext: disk(), FsType: "REFS"}, check: fsIs(FileSystem{Type: FSReFS, Explicit: true})},
		{name: "context refs", req: Request{VolumeContext: disk("fsType", "refs")}, check: fsIs(FileSystem{Type: FSReFS, Explicit: true})},
		{name: "csi fstype key", req: Request{VolumeContext: disk("csi.storage.k8s.io/fstype", "ReFS")}, check: fsIs(FileSystem{Type: FSReFS, Explicit: true})},
		{name: "capability and context agree", req: Request{VolumeContext: disk("fsType", "NTFS"), FsType: "ntfs"}, check: fsIs(FileSystem{Type: FSNTFS, Explicit: true})},
		{name: "capability and context differ", req: Request{VolumeContext: disk("fsType", "refs"), FsType: "ntfs"}, wantKey: "fsType"},
		{name: "fsType and csi fstype differ", req: Request{VolumeContext: disk("FSTYPE", "ntfs", "csi.storage.k8s.io/fstype", "refs")}, wantKey: "csi.storage.k8s.io/fstype"},
		{name: "capability ext4", req: Request{VolumeContext: disk(), FsType: "ext4"}, wantKey: "fsType"},
		{name: "context ext4", req: Request{VolumeContext: disk("FsType", "ext4")}, wantKey: "FsType"},
		{name: "iscsi refs", req: Request{VolumeContext: iscsi("fsType", "refs")}, check: fsIs(FileSystem{Type: FSReFS, Explicit: true})},
		{name: "iscsi xfs", req: Request{VolumeContext: iscsi(), FsType: "xfs"}, wantKey: "fsType"},

		{name: "smb no fsType", req: Request{VolumeContext: smb()}, check: fsIs(FileSystem{})},
		{name: "smb cifs", req: Request{VolumeContext: smb("fsType", "CIFS")}, check: fsIs(FileSystem{})},
		{name: "smb smb and ntfs capability", req: Request{VolumeContext: smb("fsType", "smb"), FsType: "ntfs"}, check: fsIs(FileSystem{})},
		{name: "smb ext4 capability", req: Request{VolumeContext: smb(), FsType: "ext4"}, wantKey: "fsType"},
		{name: "smb refs", req: Request{VolumeContext: smb("fsType", "refs")}, wantKey: "fsType"},

		{name: "label", req: Request{VolumeContext: disk("fsLabel", "Data 1")}, check: fsIs(FileSystem{Type: FSNTFS, Label: "Data 1"})},
		{name: "label 32 characters", req: Request{VolumeContext: disk("fsLabel", strings.Repeat("é", 32))}, check: fsIs(FileSystem{Type: FSNTFS, Label: strings.Repeat("é", 32)})},
		{name: "label 33 characters", req: Request{VolumeContext: disk("fsLabel", strings.Repeat("a", 33))}, wantKey: "fsLabel"},
		{name: "label astral characters count twice", req: Request{VolumeContext: disk("fsLabel", strings.Repeat("😀", 17))}, wantKey: "fsLabel"},
		{name: "label with colon", req: Request{VolumeContext: disk("fsLabel", "a:b")}, wantKey: "fsLabel"},
		{name: "label with quote", req: Request{VolumeContext: disk("fsLabel", `a"b`)}, wantKey: "fsLabel"},
		{name: "label with control character", req: Request{VolumeContext: disk("fsLabel", "a\tb")}, wantKey: "fsLabel"},
		{name: "label invalid UTF-8", req: Request{VolumeContext: disk("fsLabel", "a\xffb")}, wantKey: "fsLabel"},
		{name: "label on iscsi", req: Request{VolumeContext: iscsi("fsLabel", "x")}, check: fsIs(FileSystem{Type: FSNTFS, Label: "x"})},

		{name: "AU bytes", req: Request{VolumeContext: disk("allocationUnitSize", "4096")}, check: fsIs(FileSystem{Type: FSNTFS, AllocationUnitSize: 4096})},
		{name: "AU 64K", req: Request{VolumeContext: disk("allocationUnitSize", "64K")}, check: fsIs(FileSystem{Type: FSNTFS, AllocationUnitSize: 65536})},
		{name: "AU 64kib", req: Request{VolumeContext: disk("allocationUnitSize", "64kib")}, check: fsIs(FileSystem{Type: FSNTFS, AllocationUnitSize: 65536})},
		{name: "AU 2M", req: Request{VolumeContext: disk("allocationUnitSize", "2M")}, check: fsIs(FileSystem{Type: FSNTFS, AllocationUnitSize: 2 << 20})},
		{name: "AU 1MiB", req: Request{VolumeContext: disk("allocationUnitSize", "1MiB")}, check: fsIs(FileSystem{Type: FSNTFS, AllocationUnitSize: 1 << 20})},
		{name: "AU 512", req: Request{VolumeContext: disk("allocationUnitSize", "512")}, check: fsIs(FileSystem{Type: FSNTFS, AllocationUnitSize: 512})},
		{name: "AU 256 too small for NTFS", req: Request{VolumeContext: disk("allocationUnitSize", "256")}, wantKey: "allocationUnitSize"},
		{name: "AU 4M too large for NTFS", req: Request{VolumeContext: disk("allocationUnitSize", "4M")}, wantKey: "allocationUnitSize"},
		{name: "AU not a power of two", req: Request{VolumeContext: disk("allocationUnitSize", "3000")}, wantKey: "allocationUnitSize"},
		{name: "AU zero", req: Request{VolumeContext: disk("allocationUnitSize", "0")}, wantKey: "allocationUnitSize"},
		{name: "AU KB suffix", req: Request{VolumeContext: disk("allocationUnitSize", "64KB")}, wantKey: "allocationUnitSize"},
		{name: "AU negative", req: Request{VolumeContext: disk("allocationUnitSize", "-4096")}, wantKey: "allocationUnitSize"},
		{name: "AU overflow", req: Request{VolumeContext: disk("allocationUnitSize", "99999999999999999999")}, wantKey: "allocationUnitSize"},
		{name: "AU ReFS 4K", req: Request{VolumeContext: disk("allocationUnitSize", "4K"), FsType: "refs"}, check: fsIs(FileSystem{Type: FSReFS, Explicit: true, AllocationUnitSize: 4096})},
		{name: "AU ReFS 64K", req: Request{VolumeContext: disk("allocationUnitSize", "65536", "fsType", "refs")}, check: fsIs(FileSystem{Type: FSReFS, Explicit: true, AllocationUnitSize: 65536})},
		{name: "AU ReFS 8K", req: Request{VolumeContext: disk("allocationUnitSize", "8K", "fsType", "refs")}, wantKey: "allocationUnitSize"},
	})
}
