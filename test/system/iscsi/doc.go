// Package iscsi tests the iSCSI backend through the whole plugin
// (plugin.New) on the simulated host, as kubelet drives it: the life of a
// LUN volume (portals, discovery and session CHAP, persistent and
// multipath sessions, then the disk), CHAP and host failures, bad
// parameters, several LUNs of one target, reboots, late LUNs, a path going
// down, portals shared by targets, interleavings of first stages and last
// unstages of a target, and the release of unused sessions and portals.
// The backend's own unit tests stay in pkg/backend/iscsi.
package iscsi
