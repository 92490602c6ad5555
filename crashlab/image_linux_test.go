package crashlab

import (
	"os"
	"syscall"
)

// diskBytes is the space a file uses on disk.
func diskBytes(fi os.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return 0
}
