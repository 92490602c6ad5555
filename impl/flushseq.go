package impl

import "github.com/flushproof/flushproof/spec"

// FlushSeq is the flush-sequence protocol of the patch "xfs: skip the fsync
// flush when a later flush has completed" (xfs_buftarg_flush_start /
// xfs_buftarg_flush_done), for any code that shares cache flushes between
// writers: two atomic64 counters, numbering each flush before it is
// submitted and recording the highest number of a flush that completed
// successfully.
//
// The rule a writer may rely on: once its data write has completed, it
// calls Sample (a full barrier, then a read of Submitted) and gets S; if
// later FlushedSince(S) holds, a flush numbered above S, hence submitted
// after the write completed, has completed successfully, and the write is
// durable. docs/flushseq.md has the proof obligations and the mutants that
// break them.
type FlushSeq struct {
	Submitted spec.Word  // numbers handed out: flush_start is inc_return
	Completed spec.Word  // highest number of a flush that succeeded
	MB        spec.Fence // smp_mb before reading Submitted
	_         struct{}
}

// Sample is smp_mb() followed by S = read(Submitted). Call it after the
// data write returned: S then bounds the numbers of the flushes that may
// have been submitted before the write completed.
func (f FlushSeq) Sample() int64 {
	f.MB.Full()
	return f.Submitted.Load()
}

// FlushedSince reports whether a flush numbered above s has completed
// successfully.
func (f FlushSeq) FlushedSince(s int64) bool { return f.Completed.Load() > s }

// Start numbers a flush that is about to be submitted (flush_start).
func (f FlushSeq) Start() int64 { return f.Submitted.IncReturn() }

// Done records that flush seq completed successfully (flush_done): it
// raises Completed to seq unless it is already higher. Never call it for a
// flush that failed.
func (f FlushSeq) Done(seq int64) {
	for {
		c := f.Completed.Load()
		if c >= seq || f.Completed.CompareAndSwap(c, seq) {
			return
		}
	}
}
