// Package backend holds what the volume backends (disk, smb, iscsi, in the
// sub-packages) have in common: the interface the node service uses them
// through (Backend), the requests it hands them,
// the health conditions they report, the store they keep their records and
// notes in (Store, the stage journal) and the shape of those records
// (Record), the host work every backend shares (Publisher: publishing, and
// what is at a request's paths), how a caller that is not a volume asks a
// backend to release a shared host resource nothing uses (Releaser), and
// small algorithms they share (retrying a lookup until the RPC deadline,
// reading free space). The state of the shared resources themselves is in
// pkg/backend/shared.
//
// A backend is OS-neutral: it decides what to do and in which order, and
// asks pkg/host to do it. It never imports gRPC or CSI types and never
// builds Windows-specific strings beyond what pkg/winpath offers.
package backend
