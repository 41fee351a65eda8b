// Package docs holds tests that keep docs/metrics.md in step with the code
// (every metric the plugin registers and every key it logs is documented,
// and nothing documented is missing from the code), reading the source
// only. The flags reference is checked next to the flags, in pkg/config;
// the examples of docs/sim-config.md in test/system/simconfig; the keys the
// binary logs in both formats in test/binary/logformats.
//
// It also keeps the repository standing alone (references_test.go): no
// tracked text file may cite a research note kept outside the repository,
// a path on the machine it was written on (absolute work or home
// directories, the notes' shared directory), or a
// Markdown link that leaves the repository or names a missing file. Nothing
// but tests belongs here.
package docs
