// Package secrets checks that no secret value sent in a request (SMB
// password, session CHAP secret, mutual-CHAP initiator secret, discovery
// CHAP secret; values with quotes, backslashes, colons and format verbs)
// comes out of the plugin in the test process: the klog output at -v=10,
// every error and health message of the success and failure paths (wrong
// password, CHAP failure, unreachable server or portal), the simulated
// host's state, the stage journal and every other file the plugin writes,
// and what the Windows executor would log or report (pkg/winhost over the
// scripted executor). It also checks that hostile values cannot change the
// shape of a WQL query the Windows host sends. test/binary/secrets runs the
// same steps (test/harness/leakcheck) against the real binary.
package secrets
