// Package implcheck proves the code that hwbench measures: impl's
// protocols, unchanged, run in the model world (model/world) and searched
// exhaustively (world.Search) at small bounds, every schedule, every value
// a load may read under the memory model, every device completion order,
// flush EIO and a crash at every step. Its rows stand in `flushproof
// check` after the state machines they correspond to; docs/world.md has
// the table and how to check code of one's own the same way.
package implcheck
