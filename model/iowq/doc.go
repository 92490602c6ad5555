// Package iowq checks io-wq's hashing of O_DIRECT writes, from the patch
// "io_uring: avoid hashing O_DIRECT writes if the filesystem doesn't need
// it": hashed writes to one inode run one at a time, unhashed ones in
// parallel, and a file system's own locking must then keep the file's
// contents right.
//
//   - [System]: the explicit-state model: io-wq workers ([Submit]: hashed or
//     unhashed) writing sub-block ranges of one file, under each modelled
//     file system's locking ([FS]: xfs, ext4, one without the flag, and the
//     Mutant* file systems with historical bugs); a write acknowledged and
//     then lost is a violation.
//   - [Check], [Rows], [Checks], [StandardConfig], [Race2011Config]: its
//     rows of the verdict table.
//   - [Event]: the read and write histories that porcupine checks
//     (package linearize).
//   - [Simulate], [ContentionReport], [Latency], [WriteContention]: lock
//     waits per write under a latency model; [Protocol]'s cost table.
package iowq
