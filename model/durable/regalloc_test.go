package durable

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/model/memory"
)

// regsFile is a thread that computes a block's value from eight
// registers live at once, then uses four more names once those are dead
// (the register names of an inlined function's locals), beside a thread
// that changes what it loads. flush is what runs between the first
// write and its assertion. names renames the registers: the identity
// gives twelve names; sharing gives a file that reuses eight by hand.
func regsFile(flush string, names map[string]string) string {
	src := `C regs
(*
 * Device: cache+fua
 *)
{}
P0(int *x)
{
	int a; int b; int c; int d; int f; int g; int h; int k;
	int m; int e; int n; int p;
	a = READ_ONCE(*x);
	b = a + 1;
	c = a + 2;
	d = a + 3;
	f = a + 4;
	g = a + 5;
	h = a + 6;
	k = a + 7;
	m = a + b + c + d + f + g + h + k;
	e = submit_bio_wait(0, m, 0);
	FLUSH
	assert_durable(0, m);
	n = READ_ONCE(*x);
	p = n + 1;
	e = submit_bio_wait(1, p, REQ_FUA);
	assert_durable(1, p);
}
P1(int *x)
{
	WRITE_ONCE(*x, 1);
}
`
	src = strings.Replace(src, "FLUSH", flush, 1)
	// Rename whole words (the registers are one letter; no keyword or
	// call is).
	var b strings.Builder
	for i := 0; i < len(src); i++ {
		c := src[i]
		word := i+1 < len(src) && !isIdent(src[i+1]) && (i == 0 || !isIdent(src[i-1]))
		if r, ok := names[string(c)]; ok && word {
			b.WriteString(r)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// byHand shares eight register names among the twelve of regsFile as a
// writer reusing dead registers would.
var byHand = map[string]string{"a": "r0", "b": "r1", "c": "r2", "d": "r3", "f": "r4", "g": "r5", "h": "r6", "k": "r7",
	"m": "r1", "e": "r2", "n": "r0", "p": "r3"}

// TestRegAllocVerdicts: a thread with twelve register names, at most
// eight live at once, is checked, and gets the verdict and the state
// count of the same thread written with eight names reused by hand,
// SAFE with a flush before the first assertion and UNSAFE without,
// under each memory model.
func TestRegAllocVerdicts(t *testing.T) {
	for _, tc := range []struct {
		flush string
		safe  bool
	}{
		{"e = blkdev_issue_flush(bdev);", true},
		{"", false},
	} {
		for _, m := range []memory.Model{memory.SC, memory.TSO, memory.LKMM} {
			t.Run(fmt.Sprintf("safe=%v/%v", tc.safe, m), func(t *testing.T) {
				run := func(src string) (string, int) {
					tt, err := litmus.Parse("regs.litmus", []byte(src))
					require.NoError(t, err)
					r, err := searchFile(t, tt, m)
					require.NoError(t, err)
					if r.Violation != nil {
						return "UNSAFE " + r.Violation.Err.Error(), r.States
					}
					require.True(t, r.Exhausted)
					return "SAFE", r.States
				}
				hand := regsFile(tc.flush, byHand)
				decl := "\tint r1; int r2; int r0; int r3;\n" // declared twice: dropped, the lines kept
				require.Contains(t, hand, decl)
				hand = strings.Replace(hand, decl, "\n", 1)
				v12, n12 := run(regsFile(tc.flush, nil))
				v8, n8 := run(hand)
				if tc.safe {
					assert.Equal(t, "SAFE", v12)
				} else {
					assert.Contains(t, v12, "UNSAFE line 21: P0: assert_durable(0, m) fails")
				}
				assert.Equal(t, strings.ReplaceAll(v8, "r1", "m"), v12, "the same verdict as with names reused by hand")
				assert.Equal(t, n8, n12, "the same states as with names reused by hand")
			})
		}
	}
}

// TestRegAllocTooManyLive: nine registers live at once are refused at
// the assignment that makes them nine, naming them.
func TestRegAllocTooManyLive(t *testing.T) {
	src := regsFile("", nil)
	src = strings.Replace(src, "int m;", "int l; int m;", 1)
	src = strings.Replace(src, "\tm = a + b", "\tl = a + 8;\n\tm = l + a + b", 1)
	tt, err := litmus.Parse("regs9.litmus", []byte(src))
	require.NoError(t, err)
	_, err = Read("regs9.litmus", tt)
	require.Error(t, err)
	assert.ErrorIs(t, err, litmus.ErrUnsupported)
	assert.Equal(t, "regs9.litmus:18:2: unsupported: P0 holds 9 registers here (a, b, c, d, f, g, h, k, l), and a thread holds at most 8 live at once: end a register's use before another's begins, or reuse one whose value is no longer needed", err.Error())
}

// compiled compiles src (durability checker, SC).
func compiled(t *testing.T, src string) *opSystem {
	t.Helper()
	tt, err := litmus.Parse("alloc.litmus", []byte(src))
	require.NoError(t, err)
	op, err := compileDurable(memory.SC, tt, "alloc.litmus")
	require.NoError(t, err)
	return op
}

// chain is a thread body of n register names t0..t(n-1), each live only
// until the next is set, whose last writes block blk.
func chain(n int, blk string) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "\tint t%d;\n", i)
	}
	b.WriteString("\tint e;\n\tt0 = 1;\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "\tt%d = t%d + 1;\n", i, i-1)
	}
	fmt.Fprintf(&b, "\te = submit_bio_wait(%s, t%d, REQ_FUA);\n", blk, n-1)
	return b.String()
}

// TestRegAllocOnlyBeyondEight: a thread with at most eight register names
// keeps one register per name, numbered as met, though their live ranges
// would let them share one (every example file keeps its states); with
// more, names share registers, all below MaxRegs.
func TestRegAllocOnlyBeyondEight(t *testing.T) {
	op := compiled(t, "C few\n{}\nP0()\n{\n"+chain(7, "0")+"}\nforall (blk0=0 \\/ blk0=7)\n")
	want := map[string]int{"e": 7}
	for i := 0; i < 7; i++ {
		want[fmt.Sprintf("t%d", i)] = i
	}
	assert.Equal(t, want, op.regs[0])

	op = compiled(t, "C many\n{}\nP0()\n{\n"+chain(11, "0")+"}\nforall (blk0=0 \\/ blk0=11)\n")
	require.Len(t, op.regs[0], 12)
	shared := map[int]int{}
	for r, i := range op.regs[0] {
		assert.Less(t, i, MaxRegs, r)
		shared[i]++
	}
	assert.Less(t, len(shared), 12, "names share registers: %v", op.regs[0])
}

// TestRegAllocExclusive: a register the final condition names and one the
// initial state sets share their index with no other name, though the
// others' live ranges do not cross theirs.
func TestRegAllocExclusive(t *testing.T) {
	src := "C excl\n{ 0:blk=1; }\nP0()\n{\n\tint blk;\n\tint q;\n" + chain(10, "blk") + "\tq = 1;\n}\nforall (0:q=1 \\/ blk1=0)\n"
	op := compiled(t, src)
	regs := op.regs[0]
	require.Len(t, regs, 13)
	for _, r := range []string{"blk", "q"} {
		for o, i := range regs {
			if o != r {
				assert.NotEqual(t, regs[r], i, "%s shares its register with %s: %v", r, o, regs)
			}
		}
	}
}

// TestRegAllocSymmetry: two threads with the same code and more than eight
// names get the same registers, and stay interchangeable (findSymmetry).
func TestRegAllocSymmetry(t *testing.T) {
	src := "C sym\n(*\n * Device: cache+fua\n *)\n{ 0:b=0; 1:b=1; }\nP0()\n{\n\tint b;\n" + chain(10, "b") + "}\nP1()\n{\n\tint b;\n" + chain(10, "b") + "}\n"
	src = strings.Replace(src, "REQ_FUA);\n}", "REQ_FUA);\n\tassert_durable(b, t9);\n}", 2)
	tt, err := litmus.Parse("sym.litmus", []byte(src))
	require.NoError(t, err)
	d, err := Read("sym.litmus", tt)
	require.NoError(t, err)
	sys, err := d.system(Config{Model: memory.SC, Device: d.Devices[0]})
	require.NoError(t, err)
	require.Len(t, sys.op.regs[0], 12)
	assert.Equal(t, sys.op.regs[0], sys.op.regs[1])
	require.Len(t, sys.sym, 1)
	assert.Equal(t, []int{0, 1}, sys.sym[0].members)
}
