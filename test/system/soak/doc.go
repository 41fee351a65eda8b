// Package soak is the concurrency soak: hundreds of volumes of every
// backend (two or eight per SMB share and per iSCSI target) through random
// interleavings of stage, publish, stats, expand, health, unpublish and
// unstage from a goroutine per volume, with duplicated calls and chaos
// goroutines, in library mode under -race. Shares and targets of two
// volumes are left by their last volume while the other stages again, or
// reached by two first stages at once, over and over. A checker asserts
// that the mapping or session of every staged volume is on the host
// whenever it looks. At the end every volume is unstaged, the host and the
// journal are empty, every mapping, session and portal made was removed
// exactly once (never a removal of something already gone), with no
// goroutine left behind. make test runs the short variant (200 volumes, one round each);
// make test-soak the long one (CSI_SOAK_VOLUMES, CSI_SOAK_DURATION,
// CSI_SOAK_SEED, CSI_SOAK_CHAOS).
package soak
