package linearize_test

import (
	"errors"
	"fmt"

	"github.com/flushproof/flushproof/linearize"
	"github.com/flushproof/flushproof/model/device"
	"github.com/flushproof/flushproof/spec"
)

// A FUA write completed, power failed, and the block came back with its old
// content: the contract does not allow it, whatever the landing order.
func ExampleCheck() {
	cfg := spec.Config{VolatileCache: true, NativeFUA: true}
	r := linearize.NewRecorder()
	w, _ := r.SubmitWrite(0, 1<<0, true) // task A writes b0 with REQ_FUA
	_ = r.EndWrite(w, true)              // ... and is told it completed
	_ = r.Crash()
	rd, _ := r.BeginRead(0, 0)
	_ = r.EndRead(rd, 0) // b0 holds its initial content
	h := r.History()
	fmt.Print(h)

	err := linearize.Check("contract", linearize.ContractModel(cfg), h, 0)
	var nl *linearize.NotLinearizable
	fmt.Println("contract:", errors.As(err, &nl), nl.Result)
	err = linearize.Check("crash-reverts-durable", linearize.DeviceModel(cfg, device.CrashRevertsDurable), h, 0)
	fmt.Println("a device that reverts durable writes explains it:", err == nil)
	// Output:
	// step | A                 | device
	//    1 | W1 submit b0 FUA  |
	//    2 | W1 complete       |
	//    3 |                   | crash
	//    4 | read b0 = initial |
	// contract: true Illegal
	// a device that reverts durable writes explains it: true
}
