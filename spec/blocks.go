package spec

// PermuteBlocks returns c with block b renamed bperm[b] (a permutation of
// 0..MaxBlocks-1): the same history, on other blocks. Blocks are
// independent (rule 6) and nothing else in a history names one, so
// renaming them renames what a crash may leave and what must survive,
// and nothing more. A model whose tasks each own blocks uses it, with
// Permute, to rename tasks.
func (c *Contract) PermuteBlocks(bperm *[MaxBlocks]uint8) Contract {
	var seen uint16
	for _, b := range bperm {
		if int(b) >= MaxBlocks || seen&(1<<b) != 0 {
			panic("spec: PermuteBlocks: not a permutation of the blocks")
		}
		seen |= 1 << b
	}
	out := *c
	for i := 0; i < int(c.nw); i++ {
		var m uint8
		for b := 0; b < MaxBlocks; b++ {
			if c.wBlocks[i]&(1<<b) != 0 {
				m |= 1 << bperm[b]
			}
		}
		out.wBlocks[i] = m
	}
	return out
}
