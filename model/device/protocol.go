package device

import "github.com/flushproof/flushproof/model/verdict"

// Protocol is the catalog entry of the device itself: its rows check the
// model device against spec.Contract in both directions. It has no cost
// table.
func Protocol() verdict.Protocol {
	return verdict.Protocol{
		Name:    "device",
		Summary: "the model device against the device contract: every crash image it leaves is allowed, and every allowed one is reachable",
		Doc:     "docs/semantics.md",
		Rows:    Rows,
		NoBound: "one workload per device configuration, 2 writers, 4 writes and a flush",
	}
}
