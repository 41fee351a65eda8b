// Package docs holds tests that keep docs/metrics.md in step with the code
// (every metric the plugin registers and every key it logs is documented,
// and nothing documented is missing from the code) and the examples of
// docs/sim-config.md and docs/sim-config.yaml valid: they parse, and the
// volumes the page lists stage on a simulated host started with them. The flags reference is
// checked next to the flags, in pkg/config. Nothing but tests belongs here.
package docs
