package litmus

import (
	"slices"
	"sort"
	"strconv"
	"strings"
)

// How the parser resolves names: every identifier of a file must be a
// register the thread declares (int r;) or the initial state sets
// (0:r=1), a location parameter of the thread, a constant or a function
// of the language, or a header key it knows. A name that is none of these
// is an error at its line and column, with the closest known name offered
// ("did you mean log_flushed?"): read as a fresh register holding 0, a
// typo would change the program without a word.

// DidYouMean returns " (did you mean X?)" for the candidate closest to
// name, or "" if none is close: within two edits (one for a name of up
// to four letters), ignoring case, and not name itself.
func DidYouMean(name string, candidates ...[]string) string {
	best, bestD := "", 0
	limit := 2
	if len(name) <= 4 {
		limit = 1
	}
	for _, cs := range candidates {
		for _, c := range cs {
			if c == name || c == "" {
				continue
			}
			d := editDistance(strings.ToLower(name), strings.ToLower(c))
			if d > limit || best != "" && (d > bestD || d == bestD && c >= best) {
				continue
			}
			best, bestD = c, d
		}
	}
	if best == "" {
		return ""
	}
	return " (did you mean " + best + "?)"
}

// editDistance is the Levenshtein distance of a and b, counting an
// exchange of two adjacent letters as one edit (the commonest typo).
func editDistance(a, b string) int {
	// prev2, prev and cur are three rows of the distance table.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// keys returns the keys of m, sorted.
func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// functionNames are every function a thread may call.
func functionNames() []string {
	out := keys(prims)
	for k := range devPrims {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// useReg resolves name, read or written by the current thread's code,
// as one of its registers.
func (p *parser) useReg(name token) error {
	if _, ok := p.regs[name.text]; ok {
		p.used[name.text] = true
		return nil
	}
	th := len(p.test.Threads)
	return p.errf(name.at(), "undeclared name %s%s: a register is declared in its thread (int %s;) or set in the initial state ({ %d:%s=0; }), a constant is one of %s",
		name.text, DidYouMean(name.text, keys(p.regs), keys(constants)), name.text, th, name.text, strings.Join(keys(constants), ", "))
}

// locationsList reads herd7's "locations [x; 0:r0; y;]" (the word is
// read), whose names must resolve as the final condition's do.
func (p *parser) locationsList(kw token) error {
	if _, err := p.expect("[", "after locations"); err != nil {
		return err
	}
	for !p.is("]") {
		t := p.peek()
		switch {
		case t.kind == tokEOF:
			return p.errf(kw.at(), "locations [ not closed")
		case p.is(";"):
			p.next()
		case t.kind == tokNum && p.peekAt(1).text == ":":
			p.next()
			p.next()
			th, _ := strconv.Atoi(t.text)
			if th >= len(p.test.Threads) {
				return p.errf(t.at(), "locations names thread %d of %d", th, len(p.test.Threads))
			}
			reg, err := p.ident("a register")
			if err != nil {
				return err
			}
			if _, ok := p.threadRegs[th][reg.text]; !ok {
				return p.errf(reg.at(), "locations names %d:%s, but P%d has no register %s%s", th, reg.text, th, reg.text, DidYouMean(reg.text, keys(p.threadRegs[th])))
			}
			p.threadUsed[th][reg.text] = true
			p.test.Show = append(p.test.Show, t.text+":"+reg.text)
		case t.kind == tokIdent:
			p.next()
			if !slices.Contains(p.test.Locs, t.text) {
				return p.errf(t.at(), "locations names %s, which is no location%s", t.text, DidYouMean(t.text, p.test.Locs))
			}
			p.condLocs[t.text] = true
			p.test.Show = append(p.test.Show, t.text)
		default:
			return p.errf(t.at(), "want a location or a register (0:r0) in locations [...], got %q", t.text)
		}
	}
	p.next()
	return nil
}

// label is a name given to wait_event, wake_up or blkdev_issue_flush: a
// wait queue or the block device, which the checker does not model as
// data (wake_up is a step that does nothing, and there is one device),
// so nothing declares them. They are checked against each other
// instead: one name for the device, and a wait queue named once where a
// name within a typo of it is used too is refused as the typo it likely is.
type label struct {
	call DevKind
	tok  token
}

// checkNames refuses, once the whole file is read, what no part of it
// uses: a register the initial state sets that its thread never names, a
// location it sets that no thread takes and no condition reads, and
// labels that disagree.
func (p *parser) checkNames() error {
	for th, regs := range p.initRegs {
		for _, r := range keys(regs) {
			if th >= len(p.test.Threads) {
				return p.errf(regs[r], "the initial state names %d:%s, but the test has %d threads (P0 to P%d)", th, r, len(p.test.Threads), len(p.test.Threads)-1)
			}
			if th < len(p.threadUsed) && p.threadUsed[th][r] {
				continue
			}
			at := regs[r]
			var cands []string
			if th < len(p.threadRegs) {
				cands = keys(p.threadRegs[th])
			}
			return p.errf(at, "the initial state sets %d:%s, a register P%d never names%s", th, r, th, DidYouMean(r, cands))
		}
	}
	for _, l := range keys(p.initLocs) {
		if p.paramLocs[l] || p.condLocs[l] || p.addrLocs[l] {
			continue
		}
		return p.errf(p.initLocs[l], "the initial state sets %s, which no thread takes as a parameter and no condition reads%s", l, DidYouMean(l, keys(p.paramLocs)))
	}
	// The device: one name. Where two are used, the one used fewer
	// times (the later one on a tie) is taken for the typo.
	uses := map[DevKind]map[string]int{}
	for _, l := range p.labels {
		k := l.call
		if k != DevFlush {
			k = DevWait // wait_event and wake_up name the same queues
		}
		if uses[k] == nil {
			uses[k] = map[string]int{}
		}
		uses[k][l.tok.text]++
	}
	for i := len(p.labels) - 1; i >= 0; i-- {
		l := p.labels[i]
		if l.call != DevFlush {
			continue
		}
		for _, o := range p.labels {
			if o.call == DevFlush && o.tok.text != l.tok.text && uses[DevFlush][o.tok.text] >= uses[DevFlush][l.tok.text] {
				return p.errf(l.tok.at(), "blkdev_issue_flush(%s), but line %d flushes %s: the file has one block device, under one name", l.tok.text, o.tok.line, o.tok.text)
			}
		}
	}
	// A wait queue named once, a typo away from another that is used.
	queues := uses[DevWait]
	for i := len(p.labels) - 1; i >= 0; i-- {
		l := p.labels[i]
		if l.call == DevFlush || queues[l.tok.text] > 1 {
			continue
		}
		var others []string
		for q := range queues {
			if q != l.tok.text {
				others = append(others, q)
			}
		}
		if s := DidYouMean(l.tok.text, others); s != "" {
			return p.errf(l.tok.at(), "%s(%s): the only use of the wait queue %s%s", l.call, l.tok.text, l.tok.text, s)
		}
	}
	return nil
}
