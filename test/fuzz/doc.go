// Package fuzz holds the node-level fuzz target: fuzzed volume IDs,
// volume_context, publish_context, secrets, fsType and staging paths go
// through NodeStageVolume (and NodeUnstageVolume) of the node service on
// the simulated host, wired as the binary wires it (test/harness/simnode). The
// package-level targets live next to their code: pkg/contract (FuzzParse,
// FuzzParseSMBSource, FuzzParsePortal, FuzzValidateIQN,
// FuzzParseRootAccess), pkg/winpath (FuzzResolve, FuzzCheckLinks),
// pkg/winacl (FuzzParseDescriptor), pkg/winhost/wql (FuzzQuote) and
// pkg/winhost (the IOCTL and reparse-point parsers). make fuzz runs every one of them
// for FUZZTIME each.
package fuzz
