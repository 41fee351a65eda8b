package winhost

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"reflect"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// Identifiers modelled on csi-proxy PRs #116 and #155: a Hyper-V virtual disk
// reports "MSFT    " + a GUID as a binary T10 vendor identifier; a GCE
// persistent disk the ASCII "Google  persistent-disk-0".
var (
	hyperVID = append([]byte("MSFT    "), 0x5d, 0x06, 0xa3, 0x1b, 0x0c, 0x4e, 0x47, 0x49, 0x8e, 0x10, 0x9f, 0x2c, 0x73, 0x3a, 0x81, 0x02)
	gceID    = []byte("Google  persistent-disk-0")
)

const (
	codeBinary = 1
	codeASCII  = 2
	codeUTF8   = 3
	typeVendor = 1 // StorageIdTypeVendorId
	typeNAA    = 3 // StorageIdTypeFCPHName
	assocPort  = 1
)

func TestParseDeviceIDDescriptor(t *testing.T) {
	naa := []byte{0x60, 0x02, 0x24, 0x80, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc}
	// An NVMe 1.0 namespace's SCSI name string (NVME_SCSI_NAME_STRING,
	// learn.microsoft.com/windows/win32/api/nvme/ns-nvme-nvme_scsi_name_string):
	// PCI vendor ID, model, namespace ID and serial in UTF-8.
	nvmeName := []byte("1414MSFT NVMe Accelerator v1.0            0002000001              ")
	nguid := []byte{0xe6, 0xd8, 0x66, 0x42, 0x50, 0xd8, 0x47, 0xbd, 0x91, 0x6e, 0xaf, 0x1b, 0x0a, 0x1b, 0x2c, 0x3d}
	d := func(typ host.DesignatorType, cs host.CodeSet, assoc host.Association, v []byte) host.Designator {
		return host.Designator{Type: typ, CodeSet: cs, Association: assoc, Value: v}
	}
	tests := []struct {
		name    string
		buf     []byte
		want    []host.Designator
		page83  string // host.Page83 of the result: csi-proxy's value
		wantErr bool
	}{
		{"hyper-v binary vendor id",
			buildDeviceIDDescriptor(storageID{CodeSet: codeBinary, Type: typeVendor, ID: hyperVID}),
			[]host.Designator{d(host.DesignatorVendorID, host.CodeSetBinary, 0, hyperVID)},
			"4d534654202020205d06a31b0c4e47498e109f2c733a8102", false},
		{"gce ascii, spaces kept",
			buildDeviceIDDescriptor(storageID{CodeSet: codeASCII, Type: typeVendor, ID: gceID}),
			[]host.Designator{d(host.DesignatorVendorID, host.CodeSetASCII, 0, gceID)},
			"Google  persistent-disk-0", false},
		{"every association, type and code set, in order",
			buildDeviceIDDescriptor(
				storageID{CodeSet: codeBinary, Type: typeNAA, Assoc: assocPort, ID: naa},
				storageID{CodeSet: codeUTF8, Type: 8, ID: nvmeName},
				storageID{CodeSet: codeBinary, Type: 2, ID: nguid},
				storageID{CodeSet: codeASCII, Type: typeVendor, ID: gceID}),
			[]host.Designator{d(host.DesignatorFCPHName, host.CodeSetBinary, host.AssociationPort, naa),
				d(host.DesignatorSCSINameString, host.CodeSetUTF8, 0, nvmeName),
				d(host.DesignatorEUI64, host.CodeSetBinary, 0, nguid),
				d(host.DesignatorVendorID, host.CodeSetASCII, 0, gceID)},
			hex.EncodeToString(nguid), false},
		{"no identifiers", buildDeviceIDDescriptor(), nil, "", false},
		{"short header", []byte{1, 0, 0, 0, 12}, nil, "", true},
		{"count larger than buffer", func() []byte {
			b := buildDeviceIDDescriptor(storageID{CodeSet: codeUTF8, ID: []byte("x")})
			binary.LittleEndian.PutUint32(b[8:], 1000)
			return b
		}(), []host.Designator{d(0, host.CodeSetUTF8, 0, []byte("x"))}, "", true},
		{"identifier size overruns", func() []byte {
			b := buildDeviceIDDescriptor(storageID{CodeSet: codeBinary, ID: naa})
			binary.LittleEndian.PutUint16(b[12+8:], 0xffff)
			return b
		}(), nil, "", true},
		{"type out of range", buildDeviceIDDescriptor(storageID{CodeSet: codeBinary, Type: 0x100, ID: naa}), nil, "", true},
		{"NextOffset pointing into the header", func() []byte {
			b := buildDeviceIDDescriptor(
				storageID{CodeSet: codeUTF8, ID: []byte("a")},
				storageID{CodeSet: codeASCII, ID: gceID})
			binary.LittleEndian.PutUint16(b[12+10:], 4)
			return b
		}(), []host.Designator{d(0, host.CodeSetUTF8, 0, []byte("a"))}, "", true},
		{"NextOffset past the end", func() []byte {
			b := buildDeviceIDDescriptor(
				storageID{CodeSet: codeUTF8, ID: []byte("a")},
				storageID{CodeSet: codeASCII, ID: gceID})
			binary.LittleEndian.PutUint16(b[12+10:], 0xfff0)
			return b
		}(), []host.Designator{d(0, host.CodeSetUTF8, 0, []byte("a"))}, "", true},
		// csi-proxy stops at its first usable identifier: what precedes
		// a damaged tail is still returned, with the error.
		{"malformed tail after the first identifier", func() []byte {
			b := buildDeviceIDDescriptor(storageID{CodeSet: codeASCII, ID: gceID})
			binary.LittleEndian.PutUint32(b[8:], 7)
			return b
		}(), []host.Designator{d(0, host.CodeSetASCII, 0, gceID)}, "Google  persistent-disk-0", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseDeviceIDDescriptor(tt.buf)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %t", err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, errBadDescriptor) {
				t.Fatalf("err = %v, want errBadDescriptor", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			if p, _ := host.Page83(got); p != tt.page83 {
				t.Fatalf("page 83 %q, want %q", p, tt.page83)
			}
		})
	}
}

// A NextOffset of 0 would make csi-proxy re-read the same identifier; the
// builder's zero means "natural", so the field is patched by hand.
func TestParseDeviceIDDescriptorZeroNextOffset(t *testing.T) {
	b := buildDeviceIDDescriptor(
		storageID{CodeSet: codeUTF8, ID: []byte("a")},
		storageID{CodeSet: codeASCII, ID: gceID})
	binary.LittleEndian.PutUint16(b[12+10:], 0)
	if _, err := parseDeviceIDDescriptor(b); !errors.Is(err, errBadDescriptor) {
		t.Fatalf("err = %v, want errBadDescriptor", err)
	}
}

func TestParseSCSIAddress(t *testing.T) {
	tests := []struct {
		name    string
		buf     []byte
		want    host.SCSIAddress
		wantErr bool
	}{
		// Azure NVMe data disk at LUN 2: storport LUN 3 (NSID 4) under the
		// reading of docs/parameters.md; the bytes are the structure's.
		{"address", []byte{8, 0, 0, 0, 1, 0, 0, 3}, host.SCSIAddress{Port: 1, Path: 0, Target: 0, LUN: 3}, false},
		{"bytes in their fields", []byte{8, 0, 0, 0, 7, 2, 5, 0xfe}, host.SCSIAddress{Port: 7, Path: 2, Target: 5, LUN: 254}, false},
		{"short", []byte{8, 0, 0, 0, 1, 0, 0}, host.SCSIAddress{}, true},
		{"wrong length field", []byte{12, 0, 0, 0, 1, 0, 0, 3}, host.SCSIAddress{}, true},
	}
	for _, tt := range tests {
		got, err := parseSCSIAddress(tt.buf)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("%s: parseSCSIAddress = %v, %v; want %v, error %t", tt.name, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestParseVolumeDiskExtents(t *testing.T) {
	tests := []struct {
		name    string
		buf     []byte
		want    []uint32
		wantErr bool
	}{
		{"one extent", buildVolumeDiskExtents(1, 4), []uint32{4}, false},
		{"two extents", buildVolumeDiskExtents(2, 4, 7), []uint32{4, 7}, false},
		{"more announced than present (ERROR_MORE_DATA buffer)", buildVolumeDiskExtents(3, 4), []uint32{4}, false},
		{"fewer announced than room", append(buildVolumeDiskExtents(1, 9), make([]byte, 48)...), []uint32{9}, false},
		{"no extent", buildVolumeDiskExtents(0, 4), nil, true},
		{"short", make([]byte, 31), nil, true},
		{"empty", nil, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseVolumeDiskExtents(tt.buf)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %t", err, tt.wantErr)
			}
			if err != nil {
				if !errors.Is(err, errBadExtents) {
					t.Fatalf("err = %v, want errBadExtents", err)
				}
				return
			}
			var nums []uint32
			for _, e := range got {
				nums = append(nums, e.DiskNumber)
				if e.StartingOffset != 1<<20 {
					t.Errorf("StartingOffset = %d", e.StartingOffset)
				}
			}
			if !slices.Equal(nums, tt.want) {
				t.Fatalf("disks %v, want %v", nums, tt.want)
			}
		})
	}
}

func TestParseReparsePoint(t *testing.T) {
	const vol = `\??\Volume{1b7e5f0c-2b4d-4c6f-9a51-0e8d3a7c2f11}\`
	tests := []struct {
		name    string
		buf     []byte
		want    reparsePoint
		wantErr bool
	}{
		{"symlink absolute",
			buildReparse(ioReparseTagSymlink, `\??\C:\var\lib\kubelet\g`, `C:\var\lib\kubelet\g`, 0),
			reparsePoint{Tag: ioReparseTagSymlink, SubstituteName: `\??\C:\var\lib\kubelet\g`, PrintName: `C:\var\lib\kubelet\g`}, false},
		{"symlink relative",
			buildReparse(ioReparseTagSymlink, `..\g`, `..\g`, symlinkFlagRelative),
			reparsePoint{Tag: ioReparseTagSymlink, SubstituteName: `..\g`, PrintName: `..\g`, Relative: true}, false},
		{"mount point, empty print name",
			buildReparse(ioReparseTagMountPoint, vol, "", 0),
			reparsePoint{Tag: ioReparseTagMountPoint, SubstituteName: vol}, false},
		{"non-ASCII names",
			buildReparse(ioReparseTagSymlink, `\??\C:\données\𝄞`, `C:\données\𝄞`, 0),
			reparsePoint{Tag: ioReparseTagSymlink, SubstituteName: `\??\C:\données\𝄞`, PrintName: `C:\données\𝄞`}, false},
		{"other tag (dedup)", buildReparse(0x80000013, "", "", 0), reparsePoint{Tag: 0x80000013}, false},
		{"short header", []byte{3, 0, 0, 0xa0}, reparsePoint{}, true},
		{"data length overruns", func() []byte {
			b := buildReparse(ioReparseTagMountPoint, vol, "", 0)
			binary.LittleEndian.PutUint16(b[4:], uint16(len(b)))
			return b
		}(), reparsePoint{}, true},
		{"symlink without its fixed part", func() []byte {
			b := []byte{0x0c, 0, 0, 0xa0, 4, 0, 0, 0, 0, 0, 0, 0}
			return b
		}(), reparsePoint{}, true},
		{"name overruns path buffer", func() []byte {
			b := buildReparse(ioReparseTagMountPoint, vol, "", 0)
			binary.LittleEndian.PutUint16(b[10:], 0x7ffe)
			return b
		}(), reparsePoint{}, true},
		{"odd name length", func() []byte {
			b := buildReparse(ioReparseTagMountPoint, vol, "", 0)
			binary.LittleEndian.PutUint16(b[10:], 3)
			return b
		}(), reparsePoint{}, true},
		{"print name offset overruns", func() []byte {
			b := buildReparse(ioReparseTagSymlink, `\??\C:\x`, `C:\x`, 0)
			binary.LittleEndian.PutUint16(b[12:], 0xfff0)
			return b
		}(), reparsePoint{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseReparsePoint(tt.buf)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %t", err, tt.wantErr)
			}
			if err != nil {
				if !errors.Is(err, errBadReparse) {
					t.Fatalf("err = %v, want errBadReparse", err)
				}
				return
			}
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestWin32Target(t *testing.T) {
	tests := []struct{ in, want string }{
		{`\??\C:\var\lib\kubelet\x`, `C:\var\lib\kubelet\x`},
		{`\\?\C:\x`, `C:\x`},
		{`\??\UNC\srv\share\dir\`, `\\srv\share\dir\`},
		{`\\?\UNC\srv\share`, `\\srv\share`},
		{`\??\unc\srv\share`, `\\srv\share`},
		{`\??\Volume{1B7E5F0C-2B4D-4C6F-9A51-0E8D3A7C2F11}\`, `\\?\Volume{1b7e5f0c-2b4d-4c6f-9a51-0e8d3a7c2f11}\`},
		{`\??\Volume{1b7e5f0c-2b4d-4c6f-9a51-0e8d3a7c2f11}`, `\\?\Volume{1b7e5f0c-2b4d-4c6f-9a51-0e8d3a7c2f11}\`},
		{`\??\Volume{1b7e5f0c-2b4d-4c6f-9a51-0e8d3a7c2f11}\sub`, `\\?\Volume{1b7e5f0c-2b4d-4c6f-9a51-0e8d3a7c2f11}\sub`},
		{`\??\GLOBALROOT\Device\HarddiskVolume3\`, `\\?\GLOBALROOT\Device\HarddiskVolume3\`},
		{`..\relative`, `..\relative`},
		{`C:\plain`, `C:\plain`},
		{``, ``},
	}
	for _, tt := range tests {
		if got := win32Target(tt.in); got != tt.want {
			t.Errorf("win32Target(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// Fuzz targets: the parsers read buffers a device, a file system or a
// compromised executor fills; whatever the bytes, they must not panic,
// and what they return must be consistent with the input.

func FuzzParseDeviceIDDescriptor(f *testing.F) {
	for _, s := range descriptorSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ids, err := parseDeviceIDDescriptor(b)
		if err != nil && !errors.Is(err, errBadDescriptor) {
			t.Fatalf("error %v is not errBadDescriptor", err)
		}
		for _, d := range ids {
			if deviceIDHeaderLen+storageIDHeaderLen+len(d.Value) > len(b) {
				t.Fatalf("identifier of %d bytes from %d bytes", len(d.Value), len(b))
			}
		}
		if len(ids) > (len(b)-deviceIDHeaderLen)/storageIDHeaderLen+1 {
			t.Fatalf("%d identifiers from %d bytes", len(ids), len(b))
		}
		if id, ok := host.Page83(ids); ok && (id == "" || len(id) > len(b)*2) {
			t.Fatalf("page 83 %q from %d bytes", id, len(b))
		}
	})
}

func FuzzParseVolumeDiskExtents(f *testing.F) {
	for _, s := range extentSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ext, err := parseVolumeDiskExtents(b)
		if err != nil {
			if ext != nil || !errors.Is(err, errBadExtents) {
				t.Fatalf("error %v with %d extents", err, len(ext))
			}
			return
		}
		if len(ext) == 0 || diskExtentsHeaderLen+len(ext)*diskExtentLen > len(b) {
			t.Fatalf("%d extents from %d bytes", len(ext), len(b))
		}
		if uint64(len(ext)) > uint64(binary.LittleEndian.Uint32(b)) {
			t.Fatalf("%d extents, %d announced", len(ext), binary.LittleEndian.Uint32(b))
		}
	})
}

func FuzzParseReparsePoint(f *testing.F) {
	for _, s := range reparseSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rp, err := parseReparsePoint(b)
		if err != nil {
			if !errors.Is(err, errBadReparse) {
				t.Fatalf("error %v does not wrap errBadReparse", err)
			}
			return
		}
		if rp.Tag != binary.LittleEndian.Uint32(b) {
			t.Fatalf("tag 0x%08X, buffer says 0x%08X", rp.Tag, binary.LittleEndian.Uint32(b))
		}
		if !utf8.ValidString(rp.SubstituteName) || !utf8.ValidString(rp.PrintName) {
			t.Fatal("names are not valid UTF-8")
		}
		if len(rp.SubstituteName)+len(rp.PrintName) > 3*len(b) {
			t.Fatalf("names longer than the buffer allows")
		}
		// Classification must not panic, nor lose a name.
		if rp.SubstituteName != "" && win32Target(rp.SubstituteName) == "" {
			t.Fatalf("win32Target(%q) is empty", rp.SubstituteName)
		}
	})
}

func descriptorSeeds() [][]byte {
	return [][]byte{
		buildDeviceIDDescriptor(storageID{CodeSet: codeBinary, Type: typeVendor, ID: hyperVID}),
		buildDeviceIDDescriptor(storageID{CodeSet: codeASCII, Type: typeVendor, ID: gceID}),
		buildDeviceIDDescriptor(
			storageID{CodeSet: codeBinary, Type: typeNAA, Assoc: assocPort, ID: []byte{0x60, 1, 2, 3, 4, 5, 6, 7}},
			storageID{CodeSet: codeUTF8, ID: []byte("x")},
			storageID{CodeSet: codeBinary, Type: typeNAA, ID: []byte{0x60, 9, 9, 9, 9, 9, 9, 9}}),
		buildDeviceIDDescriptor(),
		{1, 0, 0, 0, 12, 0, 0, 0, 0xff, 0xff, 0xff, 0xff},
	}
}

func extentSeeds() [][]byte {
	return [][]byte{
		buildVolumeDiskExtents(1, 4),
		buildVolumeDiskExtents(2, 4, 7),
		buildVolumeDiskExtents(3, 4),
		buildVolumeDiskExtents(0),
		make([]byte, 31),
	}
}

func reparseSeeds() [][]byte {
	return [][]byte{
		buildReparse(ioReparseTagMountPoint, `\??\Volume{1b7e5f0c-2b4d-4c6f-9a51-0e8d3a7c2f11}\`, "", 0),
		buildReparse(ioReparseTagMountPoint, `\??\C:\target`, `C:\target`, 0),
		buildReparse(ioReparseTagSymlink, `\??\UNC\srv\share\dir\`, `\\?\UNC\srv\share\dir\`, 0),
		buildReparse(ioReparseTagSymlink, `..\rel`, `..\rel`, symlinkFlagRelative),
		buildReparse(0x80000013, "", "", 0),
		{0x0c, 0, 0, 0xa0, 0xff, 0xff, 0, 0},
	}
}
