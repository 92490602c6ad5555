// Package props keeps flushproof's cross-package and differential tests:
// rapid properties and their negative controls that hold one model to
// another. The operational device (model/device) against spec.Contract;
// the protocols' device histories against model/device; the memory models
// against the LKMM reference, on the litmus corpus and on random programs;
// and the example files in examples/litmus against the built-in models'
// rows. Each protocol's own tests (its verdict table, random walks,
// negative controls, cost table) live with it in model/<p>. Run with
// `go test ./props`; raise -rapid.checks for longer searches.
package props
