// Package recording writes and reads recordings of executor calls: JSON
// lines, a header (where, what scenario, with which inputs), then one line
// per call with its inputs, its answer or error (with WMI's extended error
// object), and its duration, then the scenario's result.
//
// What belongs here: the format (Header, Line, Value's typed encoding,
// Read) and Recorder, the executor decorator that writes it (selftest
// --record, the plugin's --record-host-calls). Secrets never reach a
// recording: a method parameter marked Sensitive and a host.Secret argument
// are written by name only. What does not: answering from a recording,
// which is test tooling (pkg/winhost/replay).
//
// docs/selftest.md describes the format for whoever contributes a
// recording.
package recording
