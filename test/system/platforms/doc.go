// Package platforms stages a disk volume on simulated nodes whose disk
// tables are real platforms' (testdata/*.yaml, loaded with --sim-config as
// a user would: Azure on SCSI and NVMe sizes, AWS Nitro with instance
// store, Google Compute Engine on SCSI and NVMe machine types, vSphere
// PVSCSI, Hyper-V VHDX, an on-premises iSCSI array). Each table is what
// Windows reports on such a node, every value with its public source or
// marked inferred. For each, the disk the controller's publish context
// names is staged and no other disk is touched; tables where the
// identification is ambiguous or cannot be read for certain (the variants,
// native NVMe among them) are refused with FailedPrecondition naming the
// candidates, before any disk changes.
package platforms
