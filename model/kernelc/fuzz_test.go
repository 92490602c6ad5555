package kernelc_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/flushproof/flushproof/model/durable"
	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/kernelc"
	"github.com/flushproof/flushproof/model/litmus"
)

// FuzzParse: no input makes the front end panic or hang, every refusal
// is a *litmus.Error at a line and column of the file, and a harness it
// reads is checked under SC and LKMM with a small budget without a panic.
// The seeds are the example harnesses and this package's test harnesses.
func FuzzParse(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("..", "..", "examples", "*", "*.c"))
	for _, p := range paths {
		if src, err := os.ReadFile(p); err == nil {
			f.Add(src)
		}
	}
	for _, body := range []string{
		`if (write_block(&bdev, b, 1, 0) == 0 && blkdev_issue_flush(&bdev) == 0) assert_durable(b, 1);`,
		`int round; for (round = 1; round <= 2; round++) { switch (round) { case 1: continue; default: break; } }`,
	} {
		f.Add([]byte(fmt.Sprintf(writeFlush, body)))
	}
	f.Add([]byte(fmt.Sprintf(journal, "REQ_PREFLUSH | REQ_FUA")))
	f.Add([]byte(casLoopHarness))
	f.Fuzz(func(t *testing.T, src []byte) {
		tt, err := kernelc.Parse("f.c", src)
		if err != nil {
			var le *litmus.Error
			if !errors.As(err, &le) || le.Line <= 0 || le.Col <= 0 {
				t.Fatalf("a refusal without a line and column: %v", err)
			}
			return
		}
		d, err := durable.Read("f.c", tt)
		if err != nil {
			return
		}
		for _, r := range d.Rows(durable.AllModels()[0:1], false) {
			_, _ = r.Check(explore.Options{MaxStates: 2000})
		}
	})
}
