// Package soak is the concurrency soak: hundreds of volumes of every
// backend (several per SMB share and per iSCSI target) through random
// interleavings of stage, publish, stats, expand, health, unpublish and
// unstage from a goroutine per volume, with duplicated calls and chaos
// goroutines, in library mode under -race. At the end every volume is
// unstaged and the host and the journal are empty, with no goroutine left
// behind. make test runs the short variant (200 volumes, one round each);
// make test-soak the long one (CSI_SOAK_VOLUMES, CSI_SOAK_DURATION,
// CSI_SOAK_SEED, CSI_SOAK_CHAOS).
package soak
