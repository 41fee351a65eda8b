package node

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wincsi/csi-windows-node/pkg/host"
)

// codeOf is the one place host errors become gRPC codes; these are the
// cases whose order matters.
func TestCodeOf(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want codes.Code
	}{
		{"nil", nil, codes.OK},
		{"not found", fmt.Errorf("disk 3: %w", host.ErrNotFound), codes.NotFound},
		// A WMI schema lookup that found no class, method or parameter
		// is never "the object is gone", even when the error also
		// carries ErrNotFound.
		{"schema", fmt.Errorf("ExecMethod MSFT_Disk.Online: looking up the method: %w", host.ErrSchema), codes.Internal},
		{"schema and not found", fmt.Errorf("%w: %w", host.ErrSchema, host.ErrNotFound), codes.Internal},
		{"not ready", fmt.Errorf("disk 3 is offline: %w", host.ErrNotReady), codes.Unavailable},
		// A read-only stage Windows refuses while the disk is offline
		// (pkg/backend/disk readOnlyUp): the refusal's ErrNotReady stays
		// in the chain, the conflict decides.
		{"refused offline read-only", fmt.Errorf("so it stays offline: %w: %w", fmt.Errorf("disk 3 is offline: %w", host.ErrNotReady), host.ErrConflict), codes.FailedPrecondition},
		{"read-only", host.ErrReadOnly, codes.FailedPrecondition},
		// The node's policy, not the caller's request, refuses a guest
		// logon: nothing the secret can fix.
		{"guest logon blocked", fmt.Errorf("map share: %w", host.ErrGuestLogonBlocked), codes.FailedPrecondition},
		{"deadline", fmt.Errorf("host call: %w", context.DeadlineExceeded), codes.DeadlineExceeded},
		{"other", errors.New("boom"), codes.Internal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := codeOf(tt.err); got != tt.want {
				t.Errorf("codeOf(%v) = %v, want %v", tt.err, got, tt.want)
			}
			if tt.err == nil {
				return
			}
			if got := status.Code(toStatus(tt.err)); got != tt.want {
				t.Errorf("toStatus(%v) has code %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}
