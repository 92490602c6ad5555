// Package jbd2 checks the jbd2 journal commit (fs/jbd2/commit.c,
// jbd2_journal_commit_transaction and journal_submit_commit_record)
// against its recovery (fs/jbd2/recovery.c, do_one_pass): after a crash,
// every transaction whose commit returned is replayed whole, and no
// transaction is replayed in part.
//
//   - [System]: the explicit-state model: the committer (kjournald2)
//     writing the journal blocks and the commit block of each transaction,
//     and the device of spec.Contract, one [Variant] per mount (Barrier,
//     NoBarrier, AsyncCommit) or mutant (Mutant*). The obligation is
//     checked after every step against every crash image the contract
//     allows ([Image], [System.Recover], [BadRecovery]).
//   - [Check], [Rows], [Checks], [ProofChecks], [StandardConfig]: its rows
//     of the verdict table; [Protocol] is its catalog entry.
//   - [Config.PreflushAsFlush]: the commit block's REQ_PREFLUSH | REQ_FUA
//     fed as blk-flush.c's two commands (an empty flush, then the FUA data
//     write) instead of one write with the flag; the tests hold the two
//     to each other.
package jbd2
