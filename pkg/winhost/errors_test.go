package winhost

import (
	"errors"
	"testing"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

func TestMethodErrorSentinels(t *testing.T) {
	tests := []struct {
		class, method string
		rv            uint32
		want          error // nil: no sentinel
		msg           string
	}{
		// Source for each: the method's page (see errors.go).
		{classDisk, "SetAttributes", 41002, host.ErrReadOnly, "the disk is read only"},
		{classDisk, "SetAttributes", 41003, host.ErrNotReady, "the disk is offline"},
		{classDisk, "SetAttributes", 41009, host.ErrConflict, "operation not supported on a critical disk"},
		{classDisk, "Initialize", 41001, host.ErrAlreadyExists, "the disk has already been initialized"},
		{classDisk, "Online", 41018, host.ErrConflict, "the object is managed by the Microsoft Failover Clustering component"},
		{classDisk, "Online", 6, host.ErrInUse, "disk is in use"},
		{classDisk, "CreatePartition", 40000, host.ErrOutOfRange, "not enough available capacity"},
		{classDisk, "CreatePartition", 42002, host.ErrAlreadyExists, "the requested access path is already in use"},
		{classDisk, "CreatePartition", 41017, host.ErrConflict, "the specified partition layout is invalid"},
		{classPartition, "Resize", 4097, host.ErrOutOfRange, "size not supported"},
		{classPartition, "Resize", 42009, host.ErrConflict, "cannot resize a partition containing an unknown file system"},
		{classPartition, "GetSupportedSize", 40001, host.ErrAccessDenied, "access denied"},
		{classPartition, "GetSupportedSize", 4, nil, "failed"},
		{classVolume, "Format", 43000, host.ErrInvalid, "the specified cluster size is invalid"},
		{classVolume, "Format", 43006, host.ErrReadOnly, "cannot perform the requested operation when the drive is read only"},
		{classVolume, "Format", 40018, host.ErrConflict, "the object is managed by the Microsoft Failover Clustering component"},
		{classStorageSetting, "UpdateHostStorageCache", 2, nil, "unspecified error"},
		{classStorageSetting, "UpdateHostStorageCache", 40001, host.ErrAccessDenied, "access denied"},
		// iSCSI classes: an iSCSI status (iscsi.go), else a common code.
		{classTarget, "Connect", 0xEFFF0003, host.ErrUnreachable, "connection failed"},
		{classSession, "Unregister", 0xEFFF0042, nil, "failed to remove persistent login information"},
		{classSession, "Unregister", 2, nil, "unspecified error"},
		// A disk code reported by another class still carries no meaning.
		{classStorageSetting, "UpdateHostStorageCache", 41002, nil, ""},
		{classDisk, "Online", 99999, nil, ""},
	}
	sentinels := []error{host.ErrNotFound, host.ErrAlreadyExists, host.ErrInUse, host.ErrConflict,
		host.ErrAccessDenied, host.ErrNotReady, host.ErrReadOnly, host.ErrOutOfRange, host.ErrInvalid}
	for _, tt := range tests {
		t.Run(tt.class+"."+tt.method, func(t *testing.T) {
			err := methodError(tt.class, tt.method, tt.rv)
			var me *MethodError
			if !errors.As(err, &me) {
				t.Fatalf("%v is not a *MethodError", err)
			}
			if me.ReturnValue != tt.rv || me.Class != tt.class || me.Method != tt.method || me.Message != tt.msg {
				t.Fatalf("got %+v, want %s.%s %d %q", me, tt.class, tt.method, tt.rv, tt.msg)
			}
			for _, s := range sentinels {
				if got, want := errors.Is(err, s), errors.Is(tt.want, s); got != want {
					t.Errorf("errors.Is(%v, %v) = %t, want %t", err, s, got, want)
				}
			}
		})
	}
}

func TestCodeTablesComplete(t *testing.T) {
	for name, tab := range map[string]codeTable{"common": commonCodes, "disk": diskCodes,
		"partition": partitionCodes, "volume": volumeCodes, "iscsi": iscsiMethodCodes} {
		for code, info := range tab {
			if code == 0 || info.msg == "" {
				t.Errorf("%s table: code %d has message %q", name, code, info.msg)
			}
		}
		for code := range commonCodes {
			if _, ok := tab[code]; !ok {
				t.Errorf("%s table lacks common code %d", name, code)
			}
		}
	}
}

func TestMapHostErr(t *testing.T) {
	tests := []struct {
		err  error
		want error
	}{
		{&COMError{Op: "ExecQuery", HResult: hrWbemNotFound}, host.ErrNotFound},
		{&COMError{Op: "ExecQuery", HResult: hrWbemAccessDenied}, host.ErrAccessDenied},
		{&COMError{Op: "ExecMethod", HResult: hrAccessDenied}, host.ErrAccessDenied},
		{&COMError{Op: "ExecMethod", HResult: hrWbemInvalidParameter}, host.ErrInvalid},
		{&COMError{Op: "ConnectServer", HResult: hrRPCServerUnavailable}, host.ErrNotReady},
		{&COMError{Op: "ExecQuery", HResult: hrWbemTransportFailure}, host.ErrNotReady},
		{&COMError{Op: "ExecQuery", HResult: 0x80041017}, nil}, // WBEM_E_INVALID_QUERY: our bug
		{&Win32Error{Call: "SetVolumeMountPoint", Code: ErrorDirNotEmpty}, host.ErrDirNotEmpty},
		{&Win32Error{Call: "CreateSymbolicLink", Code: ErrorPrivilegeNotHeld}, host.ErrAccessDenied},
		{&Win32Error{Call: "FlushVolume", Code: ErrorInvalidFunction}, nil},
		{host.ErrBusy, host.ErrBusy},
	}
	for _, tt := range tests {
		got := mapHostErr(tt.err)
		if !errors.Is(got, tt.err) {
			t.Errorf("mapHostErr(%v) = %v, lost the original", tt.err, got)
		}
		if tt.want != nil && !errors.Is(got, tt.want) {
			t.Errorf("mapHostErr(%v) = %v, want %v", tt.err, got, tt.want)
		}
		if tt.want == nil && got != tt.err { //nolint:errorlint // identity is the point: no wrapping added
			t.Errorf("mapHostErr(%v) = %v, want it unchanged", tt.err, got)
		}
	}
}
