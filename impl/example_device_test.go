//go:build linux

package impl_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/flushproof/flushproof/impl"
	"github.com/flushproof/flushproof/spec"
)

// Open a file as a spec.Device, make one block durable with a FUA write,
// flush the rest, and count what reached the device.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "flushproof-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "device")

	f, err := impl.Open(path, impl.OpenOptions{Create: true, Size: 1 << 20})
	if errors.Is(err, impl.ErrNoDirectIO) {
		// e.g. tmpfs before Linux 6.6: use the page cache instead.
		f, err = impl.Open(path, impl.OpenOptions{Create: true, Size: 1 << 20, Buffered: true})
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	dev := impl.NewCounting(f)

	block := impl.AlignedBuffer(dev.BlockSize(), f.MemoryAlignment())
	copy(block, "commit record 1")
	if err := dev.WriteAt(block, 0, spec.FUA); err != nil { // durable on return
		fmt.Println(err)
		return
	}
	copy(block, "data, not yet durable")
	if err := dev.WriteAt(block, int64(dev.BlockSize()), 0); err != nil {
		fmt.Println(err)
		return
	}
	if err := dev.Flush(); err != nil { // now it is
		fmt.Println(err)
		return
	}

	got := make([]byte, dev.BlockSize())
	if err := dev.ReadAt(got, 0); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s\n", got[:15])
	fmt.Printf("%+v\n", dev.Counts())
	// Output:
	// commit record 1
	// {Writes:2 FUAWrites:1 Flushes:1 Reads:1}
}
