package device

import (
	"fmt"
	"math/bits"

	"github.com/flushproof/flushproof/spec"
)

// Device is a block device with a volatile write cache, as an operational
// state machine. It follows the physical story, not the contract's
// declarative rule, so that checking one against the other means something:
//
//   - a submitted write lands (its data reaches the cache, or the media if
//     there is no cache) at some moment before it completes, block by block;
//     landing order is the device's choice, so overlapping writes may be
//     applied in either order, and two overlapping multi-block writes may be
//     applied in different orders on different blocks (torn);
//   - for each block the device tracks cand: every landed data version that a
//     crash could still leave on the media (the cache may write back any
//     version at any time, in any order);
//   - when write D becomes durable (FUA completion, a covering flush, or
//     completion without a cache) the versions that landed on D's blocks
//     before D can no longer come back: they are removed from cand;
//   - a crash leaves, per block independently, any version in cand or the data
//     of a write still in flight that had not landed yet.
//
// Emulated FUA follows blk-flush.c: the data completes (WriteDataDone), the
// post-flush is submitted then and covers every write the device had
// completed, and the write completes when the post-flush does. A write with
// REQ_PREFLUSH has a preflush step before its data (blk-flush.c,
// REQ_FSEQ_PREFLUSH, then REQ_FSEQ_DATA from flush_end_io): it covers the
// writes the device had completed when the write was submitted; when it
// completes (WritePreflushed) they are persisted and only then is the data
// sent, so the write cannot land before it. A failed preflush ends the write
// with EIO, its data never sent.
//
// Device is comparable; use it directly as a map key. Its methods return the
// next state, or an error if the step is not enabled.
type Device struct {
	cfg     spec.Config
	bug     Bug
	crashed bool
	nw, nf  uint8

	wBlocks   [spec.MaxWrites]uint8
	wState    [spec.MaxWrites]wState
	wFUA      uint32
	wPre      uint32                 // writes with REQ_PREFLUSH (stripped without a cache)
	wPreReq   uint32                 // writes submitted with REQ_PREFLUSH, stripped or not
	preCover  [spec.MaxWrites]uint32 // what write i+1's preflush covers
	wLandedOn [spec.MaxWrites]uint8  // blocks write i+1 has landed on
	// landOrder[b][:landN[b]]: the writes in the order they landed on block b.
	landOrder [spec.MaxBlocks][spec.MaxWrites]uint8
	landN     [spec.MaxBlocks]uint8
	pfCover   [spec.MaxWrites]uint32 // emulated FUA: what write i+1's post-flush covers
	done      uint32                 // writes the device completed successfully (flush coverage)

	fState [spec.MaxFlushes]wState
	fCover [spec.MaxFlushes]uint32

	cand     [spec.MaxBlocks]uint32 // landed versions a crash may still leave
	initGone uint8                  // blocks whose initial content can no longer come back
	vis      [spec.MaxBlocks]uint8  // what a read returns: the last version landed
}

type wState uint8

const (
	wNone      wState = iota
	wPreflush         // REQ_PREFLUSH: the preflush step in flight, the data not sent
	wInFlight         // submitted, data not applied to every block yet (flush: submitted)
	wLanded           // data applied to the cache on every block, not completed
	wPostFlush        // emulated FUA: data done, post-flush in flight
	wOK               // completed successfully
	wFailed           // completed with EIO
)

// Bug selects a deliberately wrong device, used as a negative control: each
// must be caught by the explorer, the rapid properties and the porcupine check.
type Bug uint8

// The wrong devices.
const (
	Correct Bug = iota
	// FlushCoversInFlight: a flush also covers writes that complete while it
	// is in flight (coverage taken at flush completion, not submission). Too
	// strong: it hides real behaviours, so protocols look safer than they are.
	FlushCoversInFlight
	// EmulatedFUANoPostFlush: with emulated FUA, the write completes right
	// after its data, without the post-flush. Too weak: a completed FUA
	// write can be lost.
	EmulatedFUANoPostFlush
	// CrashRevertsDurable: a crash may leave any version that ever landed,
	// even one older than the newest durable write.
	CrashRevertsDurable
)

// Bugs lists every wrong device, for tables and tests.
func Bugs() []Bug { return []Bug{FlushCoversInFlight, EmulatedFUANoPostFlush, CrashRevertsDurable} }

func (b Bug) String() string {
	switch b {
	case Correct:
		return "device"
	case FlushCoversInFlight:
		return "bug-flush-covers-in-flight"
	case EmulatedFUANoPostFlush:
		return "bug-emulated-fua-no-postflush"
	case CrashRevertsDurable:
		return "bug-crash-reverts-durable"
	}
	return fmt.Sprintf("Bug(%d)", uint8(b))
}

// New returns a fresh device: every block holds its initial content.
func New(cfg spec.Config, bug Bug) Device { return Device{cfg: cfg, bug: bug} }

// Config returns the device configuration.
func (d *Device) Config() spec.Config { return d.cfg }

// Crashed reports whether the device has crashed.
func (d *Device) Crashed() bool { return d.crashed }

// Apply performs one event and returns the next state. Read events check
// that the read would return e.Value.
func (d Device) Apply(e spec.Event) (Device, error) {
	if d.crashed && e.Kind != spec.Read {
		return d, fmt.Errorf("%v: the device has crashed", e)
	}
	switch e.Kind {
	case spec.WriteSubmit:
		if e.ID != int(d.nw)+1 || e.ID > spec.MaxWrites || e.Blocks == 0 {
			return d, fmt.Errorf("%v: bad write (next is W%d, at most %d)", e, d.nw+1, spec.MaxWrites)
		}
		i := e.ID - 1
		d.nw++
		d.wBlocks[i] = e.Blocks
		d.wState[i] = wInFlight
		if e.FUA && d.cfg.VolatileCache {
			d.wFUA |= 1 << i
		}
		if e.Preflush {
			d.wPreReq |= 1 << i
		}
		if e.Preflush && d.cfg.VolatileCache {
			d.wPre |= 1 << i
			d.preCover[i] = d.done
			d.wState[i] = wPreflush
		}
		return d, nil
	case spec.WritePreflushed:
		if e.ID >= 1 && e.ID <= int(d.nw) && !d.cfg.VolatileCache && d.wPreReq&(1<<(e.ID-1)) != 0 {
			// The flag was stripped (blk_flush_policy): nothing to do, but
			// a history may still say so while the write is in flight.
			if s := d.wState[e.ID-1]; s != wInFlight && s != wLanded {
				return d, fmt.Errorf("%v: W%d is not in flight", e, e.ID)
			}
			return d, nil
		}
		i, err := d.write(e, wPreflush)
		if err != nil {
			return d, err
		}
		d.persist(d.preCover[i]) // flush_end_io: the preflush completed
		d.wState[i] = wInFlight  // REQ_FSEQ_DATA: the data is sent now
		return d, nil
	case spec.WriteLand:
		i, err := d.write(e, wInFlight)
		if err != nil {
			return d, err
		}
		if bits.OnesCount8(e.Blocks) != 1 || d.wBlocks[i]&e.Blocks == 0 || d.wLandedOn[i]&e.Blocks != 0 {
			return d, fmt.Errorf("%v: a write lands on one of its blocks at a time, once", e)
		}
		b := bits.TrailingZeros8(e.Blocks)
		d.wLandedOn[i] |= e.Blocks
		if d.wLandedOn[i] == d.wBlocks[i] {
			d.wState[i] = wLanded
		}
		d.landOrder[b][d.landN[b]] = uint8(i + 1)
		d.landN[b]++
		d.cand[b] |= 1 << i
		d.vis[b] = uint8(i + 1)
		return d, nil
	case spec.WriteDataDone:
		i, err := d.write(e, wLanded)
		if err != nil {
			return d, err
		}
		if !d.emulated(i) || d.bug == EmulatedFUANoPostFlush {
			return d, fmt.Errorf("%v: W%d has no post-flush", e, e.ID)
		}
		d.wState[i] = wPostFlush
		d.done |= 1 << i
		d.pfCover[i] = d.done
		return d, nil
	case spec.WriteComplete:
		want := wLanded
		if d.emulated(e.ID-1) && d.bug != EmulatedFUANoPostFlush {
			want = wPostFlush
		}
		i, err := d.write(e, want)
		if err != nil {
			return d, err
		}
		d.wState[i] = wOK
		d.done |= 1 << i
		switch {
		case d.emulated(i):
			if d.bug != EmulatedFUANoPostFlush {
				d.persist(d.pfCover[i])
			}
		case !d.cfg.VolatileCache || d.wFUA&(1<<i) != 0:
			d.persist(1 << i)
		}
		return d, nil
	case spec.WriteFail:
		if e.ID < 1 || e.ID > int(d.nw) {
			return d, fmt.Errorf("%v: W%d was not submitted", e, e.ID)
		}
		switch d.wState[e.ID-1] {
		case wPreflush, wInFlight, wLanded, wPostFlush: // wPreflush: the preflush failed, the data never sent
			d.wState[e.ID-1] = wFailed
			return d, nil
		}
		return d, fmt.Errorf("%v: W%d is not in flight", e, e.ID)
	case spec.FlushSubmit:
		if e.ID != int(d.nf)+1 || e.ID > spec.MaxFlushes {
			return d, fmt.Errorf("%v: bad flush (next is F%d, at most %d)", e, d.nf+1, spec.MaxFlushes)
		}
		d.nf++
		d.fState[e.ID-1] = wInFlight
		d.fCover[e.ID-1] = d.done
		return d, nil
	case spec.FlushComplete, spec.FlushFail:
		if e.ID < 1 || e.ID > int(d.nf) || d.fState[e.ID-1] != wInFlight {
			return d, fmt.Errorf("%v: F%d is not in flight", e, e.ID)
		}
		if e.Kind == spec.FlushFail {
			if !d.cfg.VolatileCache {
				return d, fmt.Errorf("%v: an empty flush without a volatile cache cannot fail", e)
			}
			d.fState[e.ID-1] = wFailed
			return d, nil
		}
		d.fState[e.ID-1] = wOK
		if d.bug == FlushCoversInFlight {
			d.persist(d.done)
		} else {
			d.persist(d.fCover[e.ID-1])
		}
		return d, nil
	case spec.Crash:
		d.crashed = true
		return d, nil
	case spec.Read:
		if b := bits.TrailingZeros8(e.Blocks); e.Blocks == 0 || d.crashed || int(d.vis[b]) != e.Value {
			return d, fmt.Errorf("%v: the device would not return that", e)
		}
		return d, nil
	}
	return d, fmt.Errorf("unknown event %v", e)
}

func (d *Device) write(e spec.Event, want wState) (int, error) {
	if e.ID < 1 || e.ID > int(d.nw) {
		return 0, fmt.Errorf("%v: W%d was not submitted", e, e.ID)
	}
	if d.wState[e.ID-1] != want {
		return 0, fmt.Errorf("%v: W%d is not in the right state", e, e.ID)
	}
	return e.ID - 1, nil
}

func (d *Device) emulated(i int) bool { return d.cfg.EmulatesFUA() && d.wFUA&(1<<i) != 0 }

// persist makes the writes in ws durable: on each of their blocks, the
// versions that landed there before them can no longer come back.
func (d *Device) persist(ws uint32) {
	for m := ws; m != 0; m &= m - 1 {
		i := bits.TrailingZeros32(m)
		for bm := d.wBlocks[i]; bm != 0; bm &= bm - 1 {
			b := bits.TrailingZeros8(bm)
			for _, w := range d.landOrder[b][:d.landN[b]] {
				if int(w) == i+1 {
					break
				}
				d.cand[b] &^= 1 << (w - 1)
			}
		}
		d.initGone |= d.wBlocks[i]
	}
}

// CrashSet returns what block b may hold if the device crashes now.
func (d *Device) CrashSet(b int) spec.CrashSet {
	mask := uint8(1) << b
	s := spec.CrashSet{Writes: d.cand[b], Initial: d.initGone&mask == 0}
	for i := 0; i < int(d.nw); i++ {
		if d.wBlocks[i]&mask != 0 && d.wLandedOn[i]&mask == 0 && d.wState[i] == wInFlight {
			s.Writes |= 1 << i // not landed here yet, may land as power fails
		}
	}
	if d.bug == CrashRevertsDurable {
		for i := 0; i < int(d.nw); i++ {
			if d.wLandedOn[i]&mask != 0 {
				s.Writes |= 1 << i
			}
		}
		s.Initial = true
	}
	return s
}

// ReadValue returns what a read of block b returns now (a write number, 0 =
// initial content).
func (d *Device) ReadValue(b int) int { return int(d.vis[b]) }

// Steps calls yield for every event the device itself may take next (not
// submissions, which are the tasks' choice, nor the crash). With failures,
// writes and flushes may also fail.
func (d *Device) Steps(failures bool, yield func(spec.Event)) {
	if d.crashed {
		return
	}
	for i := 0; i < int(d.nw); i++ {
		id := i + 1
		switch d.wState[i] {
		case wPreflush:
			yield(spec.Event{Kind: spec.WritePreflushed, ID: id})
		case wInFlight:
			for bm := d.wBlocks[i] &^ d.wLandedOn[i]; bm != 0; bm &= bm - 1 {
				yield(spec.Event{Kind: spec.WriteLand, ID: id, Blocks: 1 << bits.TrailingZeros8(bm)})
			}
		case wLanded:
			if d.emulated(i) && d.bug != EmulatedFUANoPostFlush {
				yield(spec.Event{Kind: spec.WriteDataDone, ID: id})
			} else {
				yield(spec.Event{Kind: spec.WriteComplete, ID: id})
			}
		case wPostFlush:
			yield(spec.Event{Kind: spec.WriteComplete, ID: id})
		}
		if failures && (d.wState[i] == wPreflush || d.wState[i] == wInFlight || d.wState[i] == wLanded || d.wState[i] == wPostFlush) {
			yield(spec.Event{Kind: spec.WriteFail, ID: id})
		}
	}
	for i := 0; i < int(d.nf); i++ {
		if d.fState[i] != wInFlight {
			continue
		}
		yield(spec.Event{Kind: spec.FlushComplete, ID: i + 1})
		if failures && d.cfg.VolatileCache {
			yield(spec.Event{Kind: spec.FlushFail, ID: i + 1})
		}
	}
}

// WriteDone reports whether write id has ended, and whether successfully.
func (d *Device) WriteDone(id int) (ended, ok bool) {
	s := d.wState[id-1]
	return s == wOK || s == wFailed, s == wOK
}

// FlushDone reports whether flush id has ended, and whether successfully.
func (d *Device) FlushDone(id int) (ended, ok bool) {
	s := d.fState[id-1]
	return s == wOK || s == wFailed, s == wOK
}
