package iowq_test

import (
	"fmt"

	"github.com/flushproof/flushproof/model/explore"
	"github.com/flushproof/flushproof/model/iowq"
)

// The 2011 ext4 race: two unaligned direct writes into one unwritten block,
// both under the shared i_rwsem, on parallel io-wq workers. Each zeroes the
// rest of the block; W2's zeroing lands after W1's data.
func ExampleCheck() {
	c := iowq.Race2011Config(iowq.Unhashed, iowq.MutantExt4Unwritten2011, false)
	v, err := iowq.Check(c, explore.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Println(v.Model, "on", v.Config+":", v.Result())
	fmt.Print(v.Violation.Timeline())
	// Output:
	// iowq unhashed on mutant-ext4-2011-shared-unwritten, async DIO: UNSAFE
	// step | A                                       | B                                       | disk
	//    1 | W1 s0: takes it                         |                                         |
	//    2 | i_rwsem shared                          |                                         |
	//    3 | iomap: b0 unwritten, zero s1, submit W1 |                                         |
	//    4 |                                         | W2 s1: takes it                         |
	//    5 |                                         | i_rwsem shared                          |
	//    6 |                                         | iomap: b0 unwritten, zero s0, submit W2 |
	//    7 |                                         |                                         | s1 zeroed (W1's sub-block zeroing)
	//    8 |                                         |                                         | W1 lands on s0
	//    9 |                                         |                                         | W1 end_io: b0 written, i_size 2, dio 1; completes
	//   10 |                                         |                                         | s0 zeroed (W2's sub-block zeroing)
	// => safety violation: lost write: W1 (A: s0) completed, but s0 reads zeros/initial content
}
