package props

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"pgregory.net/rapid"

	"github.com/flushproof/flushproof/internal/rapidctl"
	"github.com/flushproof/flushproof/model/device"
	"github.com/flushproof/flushproof/spec"
)

// Bounds of one device lifetime (between crashes) in the generated runs.
const (
	deviceBlocks     = 3
	maxWritesPerLife = 10
	maxFlushPerLife  = 5
	// Explain enumerates every landing order of the writes in flight, block
	// by block: at most 3 in flight, each on at most 2 blocks, keeps that to
	// a few thousand device states (4 writes on 3 blocks each ran out of
	// memory).
	maxInFlight = 3
)

// writeBlocks are the block sets a generated write may cover: one block, or
// two (multi-block writes may tear).
var writeBlocks = []uint8{1, 2, 4, 3, 5, 6}

// deviceMachine runs random submit/land/complete/fail/flush/read/crash
// sequences on device.Device and, after every crash, checks both directions
// against spec.Contract:
//   - soundness: every content the device may leave is one the contract
//     allows, so every obligation met before the crash holds;
//   - completeness: every content the contract allows is left by the device
//     for the same visible history under some landing order (device.Explain).
type deviceMachine struct {
	cfg     spec.Config
	bug     device.Bug
	dev     device.Device
	con     spec.Contract
	visible []spec.Event // the history without landing events
	trace   []string     // the whole history, landing included, for failure messages
	inFlight, flushes,
	crashes int
	stats *coverage
}

// coverage counts what the checks actually exercised, so that a run that
// never crashes, or never has an obligation to check, cannot pass silently.
type coverage struct {
	crashes, obligations, lossAllowed int
}

func newDeviceMachine(cfg spec.Config, bug device.Bug, stats *coverage) *deviceMachine {
	m := &deviceMachine{cfg: cfg, bug: bug, stats: stats}
	m.reset()
	return m
}

func (m *deviceMachine) reset() {
	m.dev = device.New(m.cfg, m.bug)
	m.con = spec.NewContract(m.cfg)
	m.visible, m.trace = nil, nil
	m.inFlight, m.flushes = 0, 0
}

func (m *deviceMachine) apply(t *rapid.T, e spec.Event) {
	next, err := m.dev.Apply(e)
	if err != nil {
		t.Fatalf("model rejected its own step %v: %v", e, err)
	}
	m.dev = next
	m.trace = append(m.trace, e.String())
	if e.Kind == spec.WriteLand {
		return
	}
	m.visible = append(m.visible, e)
	if err := m.con.Apply(e); err != nil {
		t.Fatalf("the device did %v, which the contract says cannot happen: %v\n%s", e, err, m.history())
	}
	switch e.Kind {
	case spec.WriteSubmit:
		m.inFlight++
	case spec.WriteComplete, spec.WriteFail:
		m.inFlight--
	}
}

func (m *deviceMachine) history() string {
	var b strings.Builder
	fmt.Fprintf(&b, "history (%v, %v, life %d):\n", m.cfg, m.bug, m.crashes+1)
	for i, s := range m.trace {
		fmt.Fprintf(&b, "%4d  %s\n", i+1, s)
	}
	return b.String()
}

func (m *deviceMachine) actions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"write": func(t *rapid.T) {
			if m.con.Writes() >= maxWritesPerLife || m.inFlight >= maxInFlight {
				t.Skip("write bound reached")
			}
			blocks := rapid.SampledFrom(writeBlocks).Draw(t, "blocks")
			fua := rapid.Bool().Draw(t, "fua")
			m.apply(t, spec.Event{Kind: spec.WriteSubmit, ID: m.con.Writes() + 1, Blocks: blocks, FUA: fua})
		},
		"flush": func(t *rapid.T) {
			if m.flushes >= maxFlushPerLife {
				t.Skip("flush bound reached")
			}
			m.flushes++
			m.apply(t, spec.Event{Kind: spec.FlushSubmit, ID: m.flushes})
		},
		// The device takes a few steps at a time, so that commands complete
		// (and obligations arise) between crashes.
		"device": func(t *rapid.T) {
			n := rapid.IntRange(1, 6).Draw(t, "device steps")
			for i := 0; i < n; i++ {
				// Failures are drawn apart and less often, so that most
				// commands get through.
				var steps, failures []spec.Event
				m.dev.Steps(true, func(e spec.Event) {
					if e.Kind == spec.WriteFail || e.Kind == spec.FlushFail {
						failures = append(failures, e)
					} else {
						steps = append(steps, e)
					}
				})
				if len(failures) > 0 && (len(steps) == 0 || rapid.IntRange(0, 4).Draw(t, "fail?") == 0) {
					steps = failures
				}
				if len(steps) == 0 {
					if i == 0 {
						t.Skip("the device has nothing to do")
					}
					return
				}
				m.apply(t, rapid.SampledFrom(steps).Draw(t, "step"))
			}
		},
		"read": func(t *rapid.T) {
			b := rapid.IntRange(0, deviceBlocks-1).Draw(t, "block")
			m.apply(t, spec.Event{Kind: spec.Read, Blocks: 1 << b, Value: m.dev.ReadValue(b)})
		},
		"crash": func(t *rapid.T) {
			// Crash once something has ended: before that, nothing is
			// promised and nothing can be lost.
			if m.inFlight == m.con.Writes() {
				t.Skip("not crashing yet")
			}
			m.apply(t, spec.Event{Kind: spec.Crash})
			m.checkCrash(t)
			m.crashes++
			m.reset()
		},
	}
}

func (m *deviceMachine) checkCrash(t *rapid.T) {
	if _, err := device.Explain(m.cfg, m.bug, m.visible); err != nil {
		t.Fatalf("the device's own history is not explained by the device: %v\n%s", err, m.history())
	}
	// The contract says nothing about reads, and a read pins a landing
	// order, so completeness is judged on the history without its reads.
	var unread []spec.Event
	for _, e := range m.visible {
		if e.Kind != spec.Read {
			unread = append(unread, e)
		}
	}
	explained, err := device.Explain(m.cfg, m.bug, unread)
	if err != nil {
		t.Fatalf("the device's history without reads is not explained by the device: %v\n%s", err, m.history())
	}
	m.stats.crashes++
	m.stats.obligations += len(m.con.Obligations())
	for b := 0; b < deviceBlocks; b++ {
		if len(m.con.Allowed(b).Contents()) > 1 {
			m.stats.lossAllowed++
		}
		left := m.dev.CrashSet(b)
		// The content this crash leaves: rapid picks one, so shrinking
		// reports a concrete block content.
		content := rapid.SampledFrom(left.Contents()).Draw(t, fmt.Sprintf("b%d after crash", b))
		if msg := m.con.Broken(b, content); msg != "" {
			t.Fatalf("unsound device: %s\n%s", msg, m.history())
		}
		if extra := left.Minus(m.con.Allowed(b)); !extra.Empty() {
			t.Fatalf("unsound device: %s\n%s", m.con.Broken(b, extra.Contents()[0]), m.history())
		}
		missing := m.con.Allowed(b).Minus(device.CrashUnion(explained, b))
		if !missing.Empty() {
			t.Fatalf("incomplete device: the contract allows b%d = %s after this history, but under no landing order does the device leave it\n%s",
				b, spec.ContentName(missing.Contents()[0]), m.history())
		}
	}
}

func deviceProperty(cfg spec.Config, bug device.Bug, stats *coverage) func(*rapid.T) {
	return func(t *rapid.T) {
		m := newDeviceMachine(cfg, bug, stats)
		t.Repeat(m.actions())
	}
}

// TestDevice: the correct device passes both directions in every config
// (the false-positive control for the negative controls below).
func TestDevice(t *testing.T) {
	for _, cfg := range spec.Configs() {
		t.Run(cfg.String(), func(t *testing.T) {
			var c coverage
			rapid.Check(t, deviceProperty(cfg, device.Correct, &c))
			t.Logf("checked %d crashes, %d obligations, %d block states where the contract allowed more than one content", c.crashes, c.obligations, c.lossAllowed)
			if testing.Short() {
				return // -short runs a fifth of the cases: too few to promise coverage
			}
			assert.Positive(t, c.crashes, "no crash was checked")
			assert.Positive(t, c.obligations, "no obligation was checked")
			assert.Positive(t, c.lossAllowed, "no crash could lose anything")
		})
	}
}

// TestDeviceNegativeControls: each wrong device is caught, the counterexample
// is shrunk, and it replays from its seed.
func TestDeviceNegativeControls(t *testing.T) {
	cases := []struct {
		bug  device.Bug
		cfg  spec.Config
		want string
	}{
		{device.FlushCoversInFlight, spec.Config{VolatileCache: true, NativeFUA: true}, "incomplete device"},
		{device.EmulatedFUANoPostFlush, spec.Config{VolatileCache: true}, "must survive"},
		{device.CrashRevertsDurable, spec.Config{VolatileCache: true, NativeFUA: true}, "must survive"},
		{device.CrashRevertsDurable, spec.Config{}, "must survive"},
	}
	for _, tc := range cases {
		t.Run(tc.bug.String()+"/"+tc.cfg.String(), func(t *testing.T) {
			f := rapidctl.Expect(t, 2000, deviceProperty(tc.cfg, tc.bug, &coverage{}))
			assert.Contains(t, f.Output, tc.want)
			t.Logf("caught, replays with -rapid.seed=%s:\n%s", f.Seed, f.Output)
		})
	}
}
