package linearize

import (
	"errors"
	"fmt"
	"math/bits"
	"os"
	"regexp"
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/flushproof/flushproof/internal/rapidctl"
	"github.com/flushproof/flushproof/model/device"
	"github.com/flushproof/flushproof/spec"
)

// soundness: what the device (bug) does is explained by the contract.
func soundness(cfg spec.Config, bug device.Bug, opt GenOptions) func(*rapid.T) {
	opt.Config, opt.Bug = cfg, bug
	name := fmt.Sprintf("contract-%v-vs-%v", cfg, bug)
	return func(t *rapid.T) {
		h := DrawModelHistory(t, opt)
		if err := Check(name, ContractModel(cfg), h, 0); err != nil {
			t.Fatalf("unsound %v (%v): %v", bug, cfg, err)
		}
	}
}

// completeness: what the contract allows is explained by the device (bug).
func completeness(cfg spec.Config, bug device.Bug, opt GenOptions) func(*rapid.T) {
	opt.Config = cfg
	name := fmt.Sprintf("%v-%v-vs-contract", bug, cfg)
	return func(t *rapid.T) {
		h := DrawReferenceHistory(t, opt)
		if err := Check(name, DeviceModel(cfg, bug), h, 0); err != nil {
			t.Fatalf("incomplete %v (%v): %v", bug, cfg, err)
		}
	}
}

// TestContractModelSound: histories of the correct device are linearizable
// with respect to the contract, in every config.
func TestContractModelSound(t *testing.T) {
	for _, cfg := range spec.Configs() {
		t.Run(cfg.String(), func(t *testing.T) {
			rapid.Check(t, soundness(cfg, device.Correct, GenOptions{MultiBlock: true}))
		})
	}
}

// completenessOptions bound the reference histories checked against
// DeviceModel. With emulated FUA a FUA write's post-flush may cover writes to
// any block, so DeviceModel cannot be partitioned and porcupine searches the
// interleavings of every landing; three tasks keep that to milliseconds
// (with four, one history in a few hundred takes more than 10 s).
func completenessOptions(cfg spec.Config) GenOptions {
	if cfg.EmulatesFUA() {
		return GenOptions{MaxTasks: 3}
	}
	return GenOptions{}
}

// TestDeviceModelComplete: histories whose crash outcomes the contract
// allows are linearizable with respect to the correct device.
func TestDeviceModelComplete(t *testing.T) {
	for _, cfg := range spec.Configs() {
		t.Run(cfg.String(), func(t *testing.T) {
			rapid.Check(t, completeness(cfg, device.Correct, completenessOptions(cfg)))
		})
		// Torn multi-block writes: the contract lets each block of two
		// overlapping writes end up with either; the device must too.
		t.Run(cfg.String()+"/multi-block", func(t *testing.T) {
			rapid.Check(t, completeness(cfg, device.Correct, multiBlockOptions(cfg)))
		})
	}
}

// TestContractModelAcceptsReference: the contract model explains the
// contract's own histories (ContractModel is complete for spec.Contract).
func TestContractModelAcceptsReference(t *testing.T) {
	for _, cfg := range spec.Configs() {
		t.Run(cfg.String(), func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				h := DrawReferenceHistory(t, GenOptions{Config: cfg, MultiBlock: true})
				if err := Check("contract-"+cfg.String()+"-vs-reference", ContractModel(cfg), h, 0); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// TestContractModelMatchesSpec: on every history, with any content after
// the crash, ContractModel says yes exactly when spec.Contract, fed what the
// OS saw, allows every block's content. Both directions, so the model is
// spec.Contract, not just close to it.
func TestContractModelMatchesSpec(t *testing.T) {
	for _, cfg := range spec.Configs() {
		t.Run(cfg.String(), func(t *testing.T) {
			verdicts := map[bool]int{}
			rapid.Check(t, func(t *rapid.T) {
				h := DrawReferenceHistory(t, GenOptions{Config: cfg, MultiBlock: true})
				con := spec.NewContract(cfg)
				var onBlock [spec.MaxBlocks][]int // candidate contents: initial and every write to the block
				for b := range onBlock {
					onBlock[b] = []int{0}
				}
				want := true
				for i, r := range h.Records {
					e := r.Event
					if e.Kind == spec.WriteSubmit {
						for b := range onBlock {
							if e.Blocks&(1<<b) != 0 {
								onBlock[b] = append(onBlock[b], e.ID)
							}
						}
					}
					if e.Kind == spec.Read && con.Crashed() && !r.ReadCall {
						b := bits.TrailingZeros8(e.Blocks)
						v := rapid.SampledFrom(onBlock[b]).Draw(t, fmt.Sprintf("b%d after the crash", b))
						h.Records[i].Event.Value = v
						want = want && con.Allowed(b).Has(v)
						continue
					}
					if err := con.Apply(e); err != nil {
						t.Fatalf("spec.Contract rejects %v: %v", e, err)
					}
				}
				err := Check("contract-"+cfg.String()+"-vs-spec", ContractModel(cfg), h, 0)
				var nl *NotLinearizable
				if err != nil && !errors.As(err, &nl) {
					t.Fatal(err)
				}
				if got := err == nil; got != want {
					t.Fatalf("ContractModel says %v, spec.Contract says %v (%v)", got, want, err)
				}
				verdicts[want]++
			})
			assert.NotZero(t, verdicts[true], "no history allowed")
			assert.NotZero(t, verdicts[false], "no history rejected")
		})
	}
}

// multiBlockOptions bound histories with multi-block writes checked against
// DeviceModel. Without emulated FUA, DeviceModel is partitioned per block and
// the default bounds are cheap. With emulated FUA nothing can be partitioned
// (see completenessOptions) and a multi-block write lands on each block at
// its own moment, so porcupine has many more interleavings to search: those
// histories stay on two blocks, three tasks and six writes (with three
// blocks and eight writes, one history in a few hundred took over 10 s).
func multiBlockOptions(cfg spec.Config) GenOptions {
	if cfg.EmulatesFUA() {
		return GenOptions{MaxTasks: 3, MaxWrites: 6, Blocks: 2, MultiBlock: true}
	}
	return GenOptions{MultiBlock: true}
}

// TestDeviceModelAcceptsModelHistories: the lifted device explains the
// device's own histories, pre-crash reads included.
func TestDeviceModelAcceptsModelHistories(t *testing.T) {
	for _, cfg := range spec.Configs() {
		t.Run(cfg.String(), func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				opt := multiBlockOptions(cfg)
				opt.Config = cfg
				h := DrawModelHistory(t, opt)
				if err := Check("device-"+cfg.String()+"-vs-itself", DeviceModel(cfg, device.Correct), h, 0); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

var (
	cacheFUA = spec.Config{VolatileCache: true, NativeFUA: true}
	cacheEmu = spec.Config{VolatileCache: true}
	noCache  = spec.Config{}
)

// TestNegativeControls: each wrong device is caught by the direction it
// breaks, the counterexample replays from its seed and names the history;
// the correct device passes the very same property (false-positive control).
func TestNegativeControls(t *testing.T) {
	cases := []struct {
		bug      device.Bug
		cfg      spec.Config
		property func(spec.Config, device.Bug, GenOptions) func(*rapid.T)
		want     string
	}{
		{device.EmulatedFUANoPostFlush, cacheEmu, soundness, "unsound bug-emulated-fua-no-postflush"},
		{device.CrashRevertsDurable, cacheFUA, soundness, "unsound bug-crash-reverts-durable"},
		{device.CrashRevertsDurable, cacheEmu, soundness, "unsound bug-crash-reverts-durable"},
		{device.FlushCoversInFlight, cacheFUA, completeness, "incomplete bug-flush-covers-in-flight"},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%v/%v", tc.bug, tc.cfg), func(t *testing.T) {
			f := rapidctl.Expect(t, 1000, tc.property(tc.cfg, tc.bug, GenOptions{}))
			assert.Contains(t, f.Output, tc.want)
			assert.Contains(t, f.Output, "the history below is not linearizable with respect to")
			assert.Contains(t, f.Output, "crash")
			if m := regexp.MustCompile(`porcupine visualisation: (\S+\.html)`).FindStringSubmatch(f.Output); assert.NotNil(t, m, "no visualisation path") {
				assert.FileExists(t, m[1])
			}
			t.Logf("caught, replays with -rapid.seed=%s:\n%s", f.Seed, f.Output)

			rapid.Check(t, tc.property(tc.cfg, device.Correct, GenOptions{}))
		})
	}
}

// TestCheckReportsRejection: a rejected history comes back as a
// NotLinearizable that names the model, shows the history and points to a
// visualisation that was written.
func TestCheckReportsRejection(t *testing.T) {
	s := newScript(t)
	s.endWrite(s.write(0, 1, true), true)
	s.crash()
	s.read(0, 0, 0)
	err := Check("test-check-reports", ContractModel(cacheFUA), s.r.History(), 0)
	var nl *NotLinearizable
	require.ErrorAs(t, err, &nl)
	assert.Equal(t, porcupine.Illegal, nl.Result)
	assert.Equal(t, VisualizationPath("test-check-reports"), nl.Visualization)
	html, rerr := os.ReadFile(nl.Visualization)
	require.NoError(t, rerr)
	assert.Contains(t, string(html), "W1 lands on b0 FUA")
	msg := err.Error()
	assert.Contains(t, msg, "not linearizable with respect to test-check-reports")
	assert.Contains(t, msg, "W1 submit b0 FUA")
	assert.Contains(t, msg, "read b0 = initial")
	assert.Contains(t, msg, "porcupine visualisation: "+nl.Visualization)
}

// TestCheckMalformed: a malformed history is an error, not a verdict.
func TestCheckMalformed(t *testing.T) {
	h := History{Records: []Record{{Time: 1, Event: spec.Event{Kind: spec.WriteComplete, ID: 1}}}}
	err := Check("test-check-malformed", ContractModel(cacheFUA), h, 0)
	require.Error(t, err)
	var nl *NotLinearizable
	assert.False(t, errors.As(err, &nl))
	assert.Contains(t, err.Error(), "W1 is not in flight")
}

// TestCheckRejectsPreflush: the porcupine models have no preflush step, so a
// history with a REQ_PREFLUSH write is an error rather than a verdict on a
// weaker device.
func TestCheckRejectsPreflush(t *testing.T) {
	h := History{Records: []Record{{Time: 1, Event: spec.Event{Kind: spec.WriteSubmit, ID: 1, Blocks: 1, Preflush: true}}}}
	err := Check("test-check-preflush", ContractModel(cacheFUA), h, 0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "REQ_PREFLUSH")
}

// TestPowerSetAgreesWithToModel: Check's power-set construction accepts
// exactly the histories porcupine's own ToModel accepts, for both models,
// on histories of correct and wrong devices (so both verdicts occur).
func TestPowerSetAgreesWithToModel(t *testing.T) {
	verdicts := map[bool]int{}
	rapid.Check(t, func(t *rapid.T) {
		cfg := rapid.SampledFrom(spec.Configs()).Draw(t, "config")
		bug := rapid.SampledFrom(append([]device.Bug{device.Correct}, device.Bugs()...)).Draw(t, "bug")
		h := DrawModelHistory(t, GenOptions{Config: cfg, Bug: bug, MaxTasks: 3, MaxWrites: 6, MultiBlock: true})
		ops, err := h.Operations()
		if err != nil {
			t.Fatal(err)
		}
		for name, m := range map[string]porcupine.NondeterministicModel{
			"contract": ContractModel(cfg),
			"device":   DeviceModel(cfg, device.Correct),
		} {
			fast := porcupine.CheckOperations(powerSet(m), ops)
			slow := porcupine.CheckOperations(m.ToModel(), ops)
			if fast != slow {
				t.Fatalf("%s model: power set says %v, ToModel says %v on\n%s", name, fast, slow, h)
			}
			verdicts[fast]++
		}
	})
	assert.NotZero(t, verdicts[true], "no history accepted")
	assert.NotZero(t, verdicts[false], "no history rejected")
}
