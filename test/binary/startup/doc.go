// Package startup runs the plugin binary to check what a user meets when it
// starts: --help, flag errors (exit status 2, before the "Starting" line),
// the order of start-up (the HTTP endpoint is bound before the CSI socket
// exists, so a taken port never leaves a socket a sidecar could reach),
// plugins racing for one socket (the loser always says the endpoint is
// served by another process), a stale socket replaced with a log line, and
// --sim-config (its errors, its idempotence, and the SMB and iSCSI volumes
// it makes possible). Nothing but tests belongs here.
package startup
