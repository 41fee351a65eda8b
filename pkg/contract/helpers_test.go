package contract

import (
	"errors"
	"reflect"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// m builds a map from key, value pairs.
func m(kv ...string) map[string]string {
	out := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

func u32(v uint32) *uint32 { return &v }

// parseCase is one Parse case: wantKey is the key of the expected *Error
// ("" for success); want, when set, is the whole expected Volume.
type parseCase struct {
	name    string
	req     Request
	opts    Options
	wantKey string
	want    *Volume
	check   func(t *testing.T, v Volume)
	// keepEmptyID keeps an empty VolumeID (otherwise "vol-1" is used).
	keepEmptyID bool
}

func runParseCases(t *testing.T, cases []parseCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.req
			if r.VolumeID == "" && !tc.keepEmptyID {
				r.VolumeID = "vol-1"
			}
			v, err := Parse(r, tc.opts)
			if tc.wantKey != "" {
				assertErrKey(t, err, tc.wantKey)
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if tc.want != nil && !reflect.DeepEqual(v, *tc.want) {
				t.Errorf("Parse =\n%+v\nwant\n%+v", v, *tc.want)
				if v.Disk != nil && tc.want.Disk != nil {
					t.Errorf("disk %+v want %+v", *v.Disk, *tc.want.Disk)
				}
				if v.SMB != nil && tc.want.SMB != nil {
					t.Errorf("smb %+v want %+v", *v.SMB, *tc.want.SMB)
				}
				if v.ISCSI != nil && tc.want.ISCSI != nil {
					t.Errorf("iscsi %+v want %+v", *v.ISCSI, *tc.want.ISCSI)
				}
			}
			if tc.check != nil {
				tc.check(t, v)
			}
		})
	}
}

func assertErrKey(t *testing.T, err error, key string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want *Error for key %q", key)
	}
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("error %v (%T) is not a *Error", err, err)
	}
	if ce.Key != key {
		t.Fatalf("error key %q, want %q (error: %v)", ce.Key, key, err)
	}
	if ce.Reason == "" {
		t.Fatalf("error for key %q has no reason", key)
	}
}

// Frequently used specs.
var (
	ntfs = FileSystem{Type: FSNTFS}

	p3260 = func(a string) host.Portal { return host.Portal{Address: a, Port: 3260} }
)

func diskVol(sel DiskSelector) *Volume {
	return &Volume{Kind: KindDisk, FS: ntfs, Disk: &DiskSpec{Selector: sel}}
}
