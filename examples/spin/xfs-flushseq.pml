/*
 * The xfs fsync flush sequence of the patch "xfs: skip the fsync flush
 * when a later flush has completed" (fs/xfs/xfs_file.c xfs_file_fsync(),
 * fs/xfs/xfs_buf.c xfs_buftarg_flush_seq() and its neighbours), written
 * for SPIN apart from flushproof's Go models: a second, independent
 * semantics to check their verdicts against and to compare their search
 * costs with (docs/spin.md).
 *
 * TASKS tasks each own one block and, ROUNDS times, write it, wait for the
 * write to complete, and fsync it. The device has a volatile write cache:
 * a flush makes durable the writes that had completed when it was
 * submitted, once it completes, and nothing else makes a write durable (a
 * cache that never writes back on its own is the worst case for the
 * obligation). With FAILURES, a flush may fail with EIO and make nothing
 * durable. Memory is Promela's, sequentially consistent, so smp_mb has
 * nothing to do here.
 *
 * The obligation: when fsync returns 0, the write of that round is
 * durable (a crash at that moment keeps it).
 *
 * VARIANT
 *   0  baseline: every fsync flushes
 *   1  patched: skip the flush when a flush numbered above the sequence
 *      read after the write has completed
 *   2  mutant: the sequence read before the write
 *   3  mutant: skip when completed >= the sequence
 *   4  mutant: raise completed after a failed flush too (needs FAILURES)
 *   5  mutant: number the flush after submitting it
 *   6  benign: raise completed with a plain store of the number
 */
#ifndef TASKS
#define TASKS 3
#endif
#ifndef ROUNDS
#define ROUNDS 2
#endif
#ifndef VARIANT
#define VARIANT 1
#endif
#ifndef FAILURES
#define FAILURES 0
#endif

byte submitted;      /* bt_flush_submitted: flushes numbered so far */
byte completed;      /* bt_flush_completed: the highest number known done */
byte written[TASKS]; /* per block: the round whose write has completed */
byte durable[TASKS]; /* per block: the newest round a completed flush covers */

proctype fsyncer(byte b)
{
	byte round = 1;
	byte seq;
	byte c;
	byte old;
	byte i;
	bool ok;
	byte cover[TASKS]; /* what the task's flush in flight covers */

	do
	:: round > ROUNDS -> break
	:: else ->
#if VARIANT == 2
		seq = submitted;
#endif
		/* file_write_and_wait_range(): the write completes */
		written[b] = round;
#if VARIANT != 2
		/* smp_mb(); xfs_buftarg_flush_seq() */
		seq = submitted;
#endif
#if VARIANT != 0
		/* xfs_buftarg_flushed_since() */
		c = completed;
#if VARIANT == 3
		if
		:: c >= seq -> ok = 1; goto ret
		:: else
		fi;
#else
		if
		:: c > seq -> ok = 1; goto ret
		:: else
		fi;
#endif
#endif
		/* xfs_buftarg_flush(): number the flush, submit it, wait */
#if VARIANT != 5
		d_step { submitted++; seq = submitted };
#endif
		d_step {
			i = 0;
			do
			:: i < TASKS -> cover[i] = written[i]; i++
			:: else -> i = 0; break
			od
		};
#if VARIANT == 5
		d_step { submitted++; seq = submitted };
#endif
		if
		:: d_step {
			i = 0;
			do
			:: i < TASKS ->
				if
				:: durable[i] < cover[i] -> durable[i] = cover[i]
				:: else
				fi;
				cover[i] = 0; i++
			:: else -> i = 0; break
			od;
			ok = 1
		   }
#if FAILURES
		:: d_step {
			i = 0;
			do
			:: i < TASKS -> cover[i] = 0; i++
			:: else -> i = 0; break
			od;
			ok = 0
		   }
#endif
		fi;
		/* xfs_buftarg_flush_done(): raise completed to seq */
#if VARIANT != 4
		if
		:: ok ->
#else
		if
		:: true ->
#endif
#if VARIANT == 6
			completed = seq
#else
			do
			:: c = completed;
				if
				:: c >= seq -> break
				:: else ->
					d_step {
						if
						:: completed == c -> completed = seq; old = c
						:: else -> old = completed
						fi
					};
					if
					:: old == c -> break
					:: else
					fi
				fi
			od
#endif
		:: else
		fi;
ret:		/* fsync returns: 0 when ok */
		atomic {
			assert(!ok || durable[b] >= round);
			round++; seq = 0; c = 0; old = 0; ok = 0
		}
	od
}

init
{
	byte t;
	atomic {
		do
		:: t < TASKS -> run fsyncer(t); t++
		:: else -> break
		od
	}
}
