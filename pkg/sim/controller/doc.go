// Package controller stands in for the controller side of a CSI driver
// when the plugin runs on the simulated host (--host=sim): it does what a
// cloud's controller does for a disk volume before the node sees it, so
// that a CO with no controller of ours (csc in the README walk-through,
// csi-sanity with a foreign controller such as dell/gocsi's mock) can
// drive the plugin.
//
// It wraps the node service (Wrap, installed by plugin.New through
// plugin.Host.Controller, which only the sim wiring in cmd and the test
// harnesses set):
//
//   - NodeStageVolume of a disk volume that names no disk: the stand-in
//     names it, as ControllerPublishVolume names the disk it attached in
//     publish_context: diskSerial is the volume ID (docs/parameters.md).
//   - NodeStageVolume of a disk volume whose disk is the volume ID's serial
//     (named so by the stand-in or by the volume): with Attach, the disk is
//     attached first when the simulated host has none with that serial
//     (sim.AttachVolumeDisk: the disk detached earlier with that serial, so
//     its contents come back, else a blank one of DiskSize bytes). Volumes
//     of the smb and iscsi backends, and disk volumes that name another
//     disk, are passed on untouched: nothing is attached for them.
//   - NodeExpandVolume: with Attach, the disk whose serial is the volume ID
//     grows to the requested size first (sim.GrowVolumeDisk, logged), as
//     ControllerExpandVolume would; the node then finds the larger disk
//     after its rescan. A volume without such a disk is passed on.
//
// Every other call goes to the node service unchanged. The volume's
// backend and disk are read with the node's own contract options
// (pkg/contract), so the stand-in and the node agree on what a volume is.
//
// Why a wrapper of the node service, and not a gRPC interceptor or a
// Controller service: a Controller service is only called by a CO that
// knows of it; csc and a foreign controller never call ours, and a node
// plugin must not advertise CONTROLLER_SERVICE. An interceptor acts only on
// the socket, while the test harnesses and benchmarks call the node service
// in process (test/harness/simnode) and must meet the same stand-in as the
// binary; a typed wrapper also needs no type switch on requests. The
// wrapper is what plugin.Plugin serves and hands out, so the socket and the
// in-process callers see one node.
//
// What belongs here: the controller's part of sim mode, nothing the node
// needs on Windows. pkg/node, pkg/backend and pkg/config know nothing of
// it; pkg/plugin only takes a function that wraps the node service.
package controller
