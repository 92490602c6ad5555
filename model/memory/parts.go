package memory

// Part names components of an LKMM memory beyond its values, for
// measuring where a search's states come from (Without).
type Part uint8

const (
	// PartViews: the threads' views (cur, acq, rel), the global view and
	// the live stores' message views.
	PartViews Part = 1 << iota
	// PartCovered: LoadCovered's marks (a thread running ahead).
	PartCovered
	// PartOrderings: the views only UseOrderings keeps (lkOrd).
	PartOrderings
	// PartOther: the loads since the last barrier (unord, cond), the
	// read-modify-write glue and the pending barriers (post).
	PartOther
	PartsLKMM = PartViews | PartCovered | PartOrderings | PartOther
)

// Without returns m with parts p of its LKMM state zeroed. The result is
// for counting, not for running: how many of a search's states differ
// only in p is how much p multiplies them (model/durable's
// TestLKMMStateSources). Under the other models it returns m.
func (m Memory) Without(p Part) Memory {
	if m.model != LKMM {
		return m
	}
	tb := tablesOf(m.scope)
	x := tb.lk.get(uint32(m.ext))
	var o lkOrd
	if x.whole {
		o = tb.ord.get(uint32(x.ord))
	}
	if p&PartViews != 0 {
		x.cur, x.acq, x.rel, x.glob, x.mview = [MaxThreads]vw{}, [MaxThreads]vw{}, [MaxThreads]vw{}, 0, [MaxLocations][MaxStores]vw{}
	}
	if p&PartCovered != 0 {
		x.covered = [MaxThreads]LocSet{}
	}
	if p&PartOrderings != 0 {
		o = lkOrd{}
	}
	if p&PartOther != 0 {
		x.unord, x.cond, x.glued = [MaxThreads]LocSet{}, [MaxThreads]LocSet{}, [MaxLocations]uint16{}
		m.post = 0
	}
	if x.whole {
		x.ord = tb.ordPut(&o)
	}
	m.ext = lkID(tb.lk.put(&x, x.shard()))
	return m
}
