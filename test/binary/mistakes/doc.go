// Package mistakes runs the real plugin binary on the simulated network of
// docs/sim-config.yaml and makes the mistakes a new user makes, each of
// which must get a clear error (or its documented, reported outcome)
// instead of succeeding silently or failing slowly without a word: a typo
// in a key, another backend's secret on an inferred backend, an SMB volume
// without credentials, another volume's credentials on a shared share or
// target, a LUN the target does not have, a stage interrupted by its caller
// and a plugin interrupted twice.
package mistakes
