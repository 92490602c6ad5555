package props

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flushproof/flushproof/model/litmus"
	"github.com/flushproof/flushproof/model/lkmm"
	"pgregory.net/rapid"
)

// TestMemoryLKMMReleaseThenAcquire draws the shape where a thread's
// acquire reads the store of its own release of the same location while
// both are left pending (model/durable ahead.go's forward), and the
// shapes around it: an optional load before the release (of another
// location or of the acquire's: a plain load then an acquire of its
// location, ahead.go's plainLoads), the release (a release store or
// release RMW, or none), an acquire of the same location (load,
// xchg, cmpxchg or fetch_add), a store to another location, and one or two
// other threads that read that location and store to the release's
// location. memory.LKMM either refuses a program or gives exactly the
// reference's outcomes, with and without reductions.
func TestMemoryLKMMReleaseThenAcquire(t *testing.T) {
	start := time.Now()
	var ran, refused, skipped int
	rapid.Check(t, func(rt *rapid.T) {
		src := drawReleaseThenAcquire(rt)
		test, err := litmus.Parse("rel-acq", []byte(src))
		if err != nil {
			rt.Fatalf("parse: %v\n%s", err, src)
		}
		got, err := outcomeKeys(opMem, test)
		if errors.Is(err, litmus.ErrUnsupported) && strings.Contains(err.Error(), "LKMM lets this store be seen before") {
			refused++
			return
		}
		if err != nil {
			rt.Fatalf("memory.LKMM: %v\n%s", err, src)
		}
		full, err := outcomeKeys(opMemFull, test)
		if err != nil {
			rt.Fatalf("memory.LKMM without reductions: %v\n%s", err, src)
		}
		ref, err := outcomeKeys(lkmm.Reference{Candidates: nestCandidates}, test)
		if errors.Is(err, lkmm.ErrTooLarge) {
			skipped++
			return
		}
		if err != nil {
			rt.Fatalf("LKMM reference: %v\n%s", err, src)
		}
		rt.Log(src)
		within(rt, got, "memory.LKMM", full, "memory.LKMM without reductions")
		within(rt, full, "memory.LKMM without reductions", got, "memory.LKMM")
		within(rt, got, "memory.LKMM", ref, "the LKMM reference")
		within(rt, ref, "the LKMM reference", got, "memory.LKMM")
		ran++
	})
	t.Logf("%d programs equal, %d refused (load buffering it cannot run), %d over the reference's bounds, in %v", ran, refused, skipped, time.Since(start).Round(time.Millisecond))
}

func drawReleaseThenAcquire(rt *rapid.T) string {
	var b strings.Builder
	b.WriteString("C rel-acq\n\n{}\n\n")
	var p0 []string
	if first := rapid.SampledFrom([]string{"", "r3 = atomic_read(y);", "r3 = atomic_read(x);"}).Draw(rt, "load first"); first != "" {
		p0 = append(p0, first)
	}
	p0 = append(p0, rapid.SampledFrom([]string{
		"",
		"smp_store_release(x, 1);",
		"r0 = atomic_fetch_add_release(1, x);",
		"r0 = atomic_xchg_release(x, 1);",
	}).Draw(rt, "release"))
	p0 = append(p0, rapid.SampledFrom([]string{
		"r1 = smp_load_acquire(x);",
		"r1 = atomic_xchg_acquire(x, 2);",
		"r1 = atomic_cmpxchg_acquire(x, 1, 2);",
		"r1 = atomic_cmpxchg_acquire(x, 2, 3);",
		"r1 = atomic_fetch_add_acquire(1, x);",
	}).Draw(rt, "acquire"))
	p0 = append(p0, rapid.SampledFrom([]string{
		"WRITE_ONCE(*y, 1);",
		"atomic_inc(y);",
		"if (r1 == 1) WRITE_ONCE(*y, 1);",
		"WRITE_ONCE(*y, r1);",
	}).Draw(rt, "store"))
	fmt.Fprintf(&b, "P0(atomic_t *x, atomic_t *y)\n{\n\tint r0;\n\tint r1;\n\tint r3;\n\n\t%s\n}\n\n", strings.Join(p0, "\n\t"))
	p1 := []string{"r2 = atomic_read(y);", rapid.SampledFrom([]string{
		"atomic_set(x, 3);",
		"if (r2 == 1) atomic_set(x, 3);",
		"atomic_set(x, r2);",
		"r4 = atomic_xchg_relaxed(x, 3);",
		"smp_mb(); atomic_set(x, 3);",
	}).Draw(rt, "P1 store")}
	fmt.Fprintf(&b, "P1(atomic_t *x, atomic_t *y)\n{\n\tint r2;\n\tint r4;\n\n\t%s\n}\n\n", strings.Join(p1, "\n\t"))
	if rapid.Bool().Draw(rt, "P2") {
		fmt.Fprintf(&b, "P2(atomic_t *x)\n{\n\t%s\n}\n\n", rapid.SampledFrom([]string{
			"atomic_set(x, 4);",
			"atomic_inc(x);",
		}).Draw(rt, "P2 store"))
	}
	b.WriteString("exists (0:r1=0)\n")
	return b.String()
}
