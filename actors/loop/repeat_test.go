package loop

import (
	"testing"

	"github.com/hapticd/hapticd/actors/loop/looptest"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/driver"
)

// The serial arm driver says when it repeats a state after a missed reply.
var _ RepeatReporter = (*driver.Arm)(nil)

// repeatingArm is looptest's fake arm whose device misses the reply of
// chosen exchanges: Exchange then succeeds with the last good state again,
// as hw/driver's Arm does, and Repeated says so.
type repeatingArm struct {
	*looptest.Driver
	miss     func(n int) bool
	n        int
	last     hw.State
	repeated bool
}

func (r *repeatingArm) Exchange(cmd *hw.Command, st *hw.State) error {
	r.n++
	if r.miss(r.n) {
		*st, r.repeated = r.last, true
		return nil
	}
	if err := r.Driver.Exchange(cmd, st); err != nil {
		return err
	}
	r.last, r.repeated = *st, false
	return nil
}

func (r *repeatingArm) Repeated() bool { return r.repeated }

func newRepeatingArm(miss func(n int) bool) *repeatingArm {
	f := looptest.NewArm()
	// Every fresh state differs: position x counts the replies (mm).
	f.SetStateFunc(func(n uint64, _ *hw.Command, st *hw.State) { st.PositionM.X = float64(n) * 1e-3 })
	return &repeatingArm{Driver: f, miss: miss}
}

// TestLoadCurrentStopsWhileRepliesAreMissed: while the driver repeats the
// last good state, LoadCurrent's as-of time stays at the tick that state is
// from (a reader must not take it as current), and it moves with the ticks
// again from the first fresh reply on.
func TestLoadCurrentStopsWhileRepliesAreMissed(t *testing.T) {
	const startNs = 1_000 * ms
	tests := []struct {
		name       string
		from, upto int // exchanges from..upto miss their reply
	}{
		{"one missed reply", 5, 5},
		{"a run of missed replies", 5, 12},
		{"missed from the first exchange", 1, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			arm := newRepeatingArm(func(n int) bool { return n >= tc.from && n <= tc.upto })
			clock := looptest.NewClock(startNs)
			d := NewDevice(arm, DeviceOptions{PeriodNs: ms, Clock: clock})
			freshNs, freshX := int64(startNs), 0.0 // before the first tick: the driver's open
			replies := 0
			for i := 1; i <= tc.upto+5; i++ {
				nowNs := clock.Advance(ms)
				d.Step(nowNs)
				var snap Snapshot
				currentNs := d.LoadCurrent(&snap)
				missed := i >= tc.from && i <= tc.upto
				if !missed {
					replies++
					freshNs, freshX = nowNs, float64(replies)*1e-3
				}
				if currentNs != freshNs || snap.State.PositionM.X != freshX {
					t.Fatalf("tick %d (missed %v): current as of %d with position x %v, want as of %d (the tick of the last fresh state, x %v)",
						i, missed, currentNs, snap.State.PositionM.X, freshNs, freshX)
				}
				if snap.TimeNs != nowNs {
					t.Fatalf("tick %d: published at %d, want the tick's time %d", i, snap.TimeNs, nowNs)
				}
			}
		})
	}
}

// TestRepeatingDriverTickDoesNotAllocate: asking a driver whether its state
// was a repeat keeps the tick allocation-free, missed replies or not.
func TestRepeatingDriverTickDoesNotAllocate(t *testing.T) {
	arm := newRepeatingArm(func(n int) bool { return n%3 == 0 })
	clock := looptest.NewClock(ms)
	d := NewDevice(arm, DeviceOptions{PeriodNs: ms, Clock: clock})
	d.Step(clock.Advance(ms))
	if n := testing.AllocsPerRun(300, func() { d.Step(clock.Advance(ms)) }); n != 0 {
		t.Errorf("a tick allocates %v times", n)
	}
}
