package backend

import (
	"context"
	"time"
)

// CleanupTimeout bounds the work that undoes a failed stage: the backend's
// rollback of what it made (a mapping, a session, a portal) and the node's
// drop of the stage's intent record.
const CleanupTimeout = 30 * time.Second

// CleanupContext returns the context that undoes a failed stage. It keeps
// ctx's values (the logger, the host-call tracker that holds the volume's
// lock until the calls made under it have ended) but not its cancellation
// or deadline: a stage cancelled by its caller or by the plugin's shutdown,
// or one whose deadline ran out (a LUN that never appeared), must still
// undo what it did, or the node keeps a mapping nobody uses and diagnose
// shows the stage as incomplete until someone unstages it by hand. The
// clean-up has a deadline of its own, CleanupTimeout from now, so that it
// too ends.
func CleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), CleanupTimeout)
}
