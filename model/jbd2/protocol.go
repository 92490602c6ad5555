package jbd2

import "github.com/flushproof/flushproof/model/verdict"

// Protocol is the catalog entry: the verdict table's rows (no cost table).
func Protocol() verdict.Protocol {
	return verdict.Protocol{
		Name:    "jbd2",
		Summary: "the jbd2 journal commit: journal blocks, then a commit block with PREFLUSH|FUA, async_commit or nobarrier; recovery replays whole committed transactions",
		Doc:     "docs/jbd2.md",
		Rows:    Rows,
		NoBound: "transactions committed one after the other x journal blocks each",
	}
}
