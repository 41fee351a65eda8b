// Package simconfig keeps the examples of docs/sim-config.md and
// docs/sim-config.yaml valid: they parse, the example uses every key the
// page's tables document, and the volumes the page lists stage on a
// simulated host started with them.
package simconfig
