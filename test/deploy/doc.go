// Package deploy holds the tests of the deployment artefacts under deploy/
// and of Dockerfile.windows: they render the kustomize base and overlays
// and the Helm chart, decode every object strictly into Kubernetes API
// types, check the HostProcess and CSI invariants, parse the plugin's
// arguments with the plugin's own flag set, and check that the chart and
// the overlays agree.
//
// It is a separate Go module (test/deploy/go.mod) so that kustomize, Helm
// and the Kubernetes API types stay out of the plugin's go.mod. Run it with
// `make test-deploy` (part of `make test`). Nothing but tests belongs here.
package deploy
