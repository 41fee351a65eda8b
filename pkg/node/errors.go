package node

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wincsi/csi-windows-node/pkg/contract"
	"github.com/wincsi/csi-windows-node/pkg/host"
	"github.com/wincsi/csi-windows-node/pkg/winpath"
)

// codeOf maps an error from the layers below onto a gRPC code. It is the
// only place where host errors become codes.
func codeOf(err error) codes.Code {
	var ce *contract.Error
	var pe *winpath.Error
	switch {
	case err == nil:
		return codes.OK
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	case errors.Is(err, host.ErrSchema):
		// Checked first: a missing class, method or parameter is a
		// plugin or Windows-version problem, never "the object is gone".
		// The message (the error's own text) names what was missing.
		return codes.Internal
	case errors.As(err, &ce), errors.As(err, &pe), errors.Is(err, host.ErrInvalid):
		return codes.InvalidArgument
	case errors.Is(err, host.ErrNotFound):
		return codes.NotFound
	case errors.Is(err, host.ErrAlreadyExists):
		return codes.AlreadyExists
	case errors.Is(err, host.ErrLogonFailure):
		return codes.Unauthenticated
	case errors.Is(err, host.ErrAccessDenied):
		return codes.PermissionDenied
	case errors.Is(err, host.ErrDirNotEmpty), errors.Is(err, host.ErrInUse),
		errors.Is(err, host.ErrConflict), errors.Is(err, host.ErrCredentialConflict),
		errors.Is(err, host.ErrGuestLogonBlocked), errors.Is(err, host.ErrReadOnly):
		return codes.FailedPrecondition
	case errors.Is(err, host.ErrUnreachable), errors.Is(err, host.ErrNotReady), errors.Is(err, host.ErrBusy):
		return codes.Unavailable
	case errors.Is(err, host.ErrOutOfRange):
		return codes.OutOfRange
	case errors.Is(err, host.ErrNotImplemented):
		return codes.Unimplemented
	}
	return codes.Internal
}

// toStatus turns err into a gRPC status error; a status error passes through.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.Error(codeOf(err), err.Error())
}

func invalid(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, format, args...)
}
