package jbd2

import (
	"fmt"
	"math/bits"
	"strings"
)

// Image is a crash image of the log: bit b set means log block b holds the
// data of its write W(b+1); clear, its initial content (not a journal
// block of the sequence recovery expects there).
type Image uint8

// Recover is what recovery replays from image img: bit t set means
// transaction t (0-based) is replayed. It follows do_one_pass
// (fs/jbd2/recovery.c): the scan stops at the first block that is not the
// expected descriptor or commit block; with JBD2_FEATURE_COMPAT_CHECKSUM a
// commit block whose crc32 does not match the blocks before it sets
// end_transaction there, so neither it nor a later transaction is replayed
// (with async_commit the scan goes on only to report j_failed_commit).
// PASS_REPLAY then copies every tagged block of the transactions before
// the end, whatever the log holds for them.
func (s *System) Recover(img Image) uint8 {
	var replayed uint8
	for t := 0; t < s.cfg.Transactions; t++ {
		jm := s.journalMask(t)
		desc := bits.TrailingZeros32(jm)
		if img&(1<<desc) == 0 {
			break // not a descriptor of sequence t: the end of the log
		}
		if img&(1<<s.commitBlock(t)) == 0 {
			break // no commit block: an interrupted commit
		}
		if s.cfg.Variant.checksum() && uint32(img)&jm != jm {
			break // chksum_error: end_transaction = t
		}
		replayed |= 1 << t
	}
	return replayed
}

// BadRecovery is the violation: a crash now may leave a log from which
// recovery loses a committed transaction or replays one partially.
type BadRecovery struct {
	Txn     int   // 0-based
	Partial bool  // replayed with some of its blocks not on the disk; else committed and not replayed
	Image   Image // the crash image
	Missing []int // the transaction's log blocks that hold their initial content
	Why     string
}

func (e *BadRecovery) Error() string {
	missing := make([]string, len(e.Missing))
	for i, b := range e.Missing {
		missing[i] = fmt.Sprintf("b%d", b)
	}
	if e.Partial {
		return fmt.Sprintf("a crash now may leave T%d's commit block on the disk without %s: recovery replays T%d partially (%s)",
			e.Txn+1, strings.Join(missing, ","), e.Txn+1, e.Why)
	}
	return fmt.Sprintf("T%d's commit returned, but a crash now may leave the log without %s: recovery does not replay T%d (%s)",
		e.Txn+1, strings.Join(missing, ","), e.Txn+1, e.Why)
}

// Check implements System: for every crash image spec.Contract allows
// now, recovery replays every transaction whose commit returned, and
// every transaction it replays is whole.
func (s *System) Check(st State) error {
	n := s.cfg.Transactions * s.cfg.blocksPer()
	var can, must Image
	for b := 0; b < n; b++ {
		set := st.dev.Allowed(b)
		if set.Has(b + 1) {
			can |= 1 << b
		}
		if !set.Initial {
			must |= 1 << b
		}
	}
	free := can &^ must
	// Every subset of free, ascending (the empty one first).
	for sub := Image(0); ; sub = (sub - free) & free {
		img := must | sub
		if err := s.judge(&st, img); err != nil {
			return err
		}
		if sub == free {
			return nil
		}
	}
}

// judge checks one crash image.
func (s *System) judge(st *State, img Image) error {
	replayed := s.Recover(img)
	for t := 0; t < s.cfg.Transactions; t++ {
		all := s.journalMask(t) | 1<<s.commitBlock(t)
		missing := all &^ uint32(img)
		switch {
		case replayed&(1<<t) != 0 && missing != 0:
			return s.bad(st, t, true, img, missing)
		case replayed&(1<<t) == 0 && st.Acked(t):
			if missing == 0 {
				// Whole on the disk but an earlier transaction ends the log.
				missing = s.firstGap(img, t)
			}
			return s.bad(st, t, false, img, missing)
		}
	}
	return nil
}

// firstGap is the missing blocks of the first transaction before t that
// recovery stops at.
func (s *System) firstGap(img Image, t int) uint32 {
	for u := 0; u < t; u++ {
		all := s.journalMask(u) | 1<<s.commitBlock(u)
		if m := all &^ uint32(img); m != 0 {
			return m
		}
	}
	return 0
}

func (s *System) bad(st *State, t int, partial bool, img Image, missing uint32) error {
	e := &BadRecovery{Txn: t, Partial: partial, Image: img}
	var why []string
	for m := missing; m != 0; m &= m - 1 {
		b := bits.TrailingZeros32(m)
		e.Missing = append(e.Missing, b)
		why = append(why, s.whyMissing(st, b))
	}
	if partial {
		c := s.commitBlock(t)
		why = append(why, s.whyPresent(st, c))
	}
	e.Why = strings.Join(why, "; ")
	return e
}

// whyMissing says why log block b may hold its initial content.
func (s *System) whyMissing(st *State, b int) string {
	bit := uint32(1) << b
	w := b + 1
	switch {
	case st.dev.Writes() < w:
		return fmt.Sprintf("b%d was never written", b)
	case st.failed&bit != 0:
		return fmt.Sprintf("W%d (b%d) failed with EIO", w, b)
	case st.live&bit != 0:
		return fmt.Sprintf("W%d (b%d) is still in flight", w, b)
	}
	return fmt.Sprintf("W%d (b%d) completed into the volatile write cache and nothing made it durable", w, b)
}

// whyPresent says why the commit block b may be on the disk.
func (s *System) whyPresent(st *State, b int) string {
	w := b + 1
	for _, o := range st.dev.Obligations() {
		if o.Write == w {
			return fmt.Sprintf("the commit block W%d is durable by %s", w, o.By)
		}
	}
	if st.live&(1<<b) != 0 {
		return fmt.Sprintf("the commit block W%d is in flight and may reach the media first", w)
	}
	return fmt.Sprintf("the commit block W%d may have reached the media", w)
}
