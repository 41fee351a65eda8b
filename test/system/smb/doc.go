// Package smb tests the SMB backend through the whole plugin (plugin.New)
// on the simulated host, as kubelet drives it: one global mapping per share
// root shared by its volumes, a link per volume, subdirectories, password
// rotation and changed credentials, stale mappings, health, secrets in the
// log, failed unmaps retried, interleavings of first stages and last
// unstages of a share, and the release of unused mappings. The backend's
// own unit tests stay in pkg/backend/smb.
package smb
