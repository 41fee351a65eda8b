// Package secrets checks that no secret value sent in a request (SMB
// password, session CHAP secret, mutual-CHAP initiator secret, discovery
// CHAP secret; values with quotes, backslashes, colons and format verbs)
// comes out anywhere: the plugin's logs at -v=10 (the real binary's stderr,
// and the klog output in library mode), every error message of the
// success and failure paths (wrong password, CHAP failure, unreachable
// server or portal), /metrics, the simulated host's state, the stage
// journal and every other file the plugin writes, and what the Windows
// executor would log or report (pkg/winhost over the scripted
// executor). It also checks that hostile values cannot change the shape of
// a WQL query the Windows host sends.
package secrets
