// Package logformats runs the plugin binary in both log formats
// (--logging-format=text and json) through the same RPCs: every json line
// is one JSON object with the envelope fields of docs/metrics.md, every key
// it carries is documented and is a key of the text format too, and no
// secret appears in either.
package logformats
