// Package diocount checks the in-flight direct-I/O count with DAX, from
// the patch "ext4: Add DIO_SKIP_DIO_COUNT flag to dax_do_io()": a caller
// that counts (inode_dio_begin/end) may tell the callee not to count
// again; truncate waits for the count (inode_dio_wait) and must not free a
// block a direct write still lands in.
//
//   - [System]: the explicit-state model: writers of each [Kind] (DAX,
//     synchronous and asynchronous block DIO), a truncate, the counter in
//     memory under SC, TSO or Relaxed, one [Variant] per version (Baseline,
//     Patched, BenignSkipSync, Mutant*); each step an [Op].
//   - [Check], [Rows], [Checks], [StandardConfig]: its rows of the verdict
//     table.
//   - [CostOf], [Costs], [WriteCosts]: counter read-modify-writes per
//     direct I/O; [Protocol]'s cost table.
package diocount
