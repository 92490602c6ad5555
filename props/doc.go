// Package props holds the rapid properties of flushproof: generated
// workloads and schedules run on the model (and, later, on impl code running
// inside the model), the spec's obligations checked, and the negative
// controls (deliberately wrong models) that the properties must catch. Run
// with `go test ./props`; raise -rapid.checks for longer searches.
package props
