package sim

import (
	"errors"
	"math"
	"testing"

	"github.com/hapticd/hapticd/hw"
)

func TestGripStill(t *testing.T) {
	g := NewGrip(GripOptions{Index: 2, PeriodS: testPeriodS})
	var st hw.State
	for i := 0; i < 5000; i++ {
		if err := g.Exchange(nil, &st); err != nil {
			t.Fatal(err)
		}
		if st.Orientation != (hw.Quat{W: 1}) || st.Buttons != 0 || st.Hall != 0 {
			t.Fatalf("a grip without motion moved: %+v", st)
		}
	}
	want := hw.StatusConnected | hw.StatusAwake | hw.StatusReady
	if st.Status != want {
		t.Errorf("status %b, want %b", st.Status, want)
	}
	if st.PositionM != (hw.Vec3{}) || st.ForceN != (hw.Vec3{}) {
		t.Errorf("grip reported arm fields: %+v", st)
	}
}

func TestGripMotion(t *testing.T) {
	for _, m := range []Motion{MotionCircle, MotionRandom} {
		t.Run(m.String(), func(t *testing.T) {
			g := NewGrip(GripOptions{PeriodS: testPeriodS, Motion: m, Seed: 5})
			var st hw.State
			var seen hw.Buttons
			minHall, maxHall, maxTurn := 1.0, 0.0, 0.0
			for i := 0; i < 30000; i++ { // 30 s
				if err := g.Exchange(&hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: 5}}, &st); err != nil {
					t.Fatal(err)
				}
				q := st.Orientation
				if n := math.Sqrt(q.W*q.W + q.X*q.X + q.Y*q.Y + q.Z*q.Z); math.Abs(n-1) > 1e-9 {
					t.Fatalf("orientation not unit: %+v", q)
				}
				if st.Hall < 0 || st.Hall > 1 {
					t.Fatalf("hall %g outside 0..1", st.Hall)
				}
				seen |= st.Buttons
				minHall, maxHall = math.Min(minHall, st.Hall), math.Max(maxHall, st.Hall)
				maxTurn = math.Max(maxTurn, 2*math.Acos(math.Min(1, math.Abs(q.W))))
			}
			if seen != hw.ButtonA|hw.ButtonB|hw.ButtonC {
				t.Errorf("buttons pressed over 30 s: %03b, want all three", seen)
			}
			if maxHall-minHall < 0.5 {
				t.Errorf("hall only spanned %.2f..%.2f", minHall, maxHall)
			}
			if maxTurn < 0.2 {
				t.Errorf("grip turned at most %.3f rad", maxTurn)
			}
			if st.ForceN != (hw.Vec3{}) {
				t.Errorf("grip applied a force: %+v", st.ForceN)
			}
		})
	}
}

func TestGripBattery(t *testing.T) {
	g := NewGrip(GripOptions{PeriodS: MaxPeriodS}) // a second per step
	var st hw.State
	prev := 1.0
	for i := 0; i < 24*3600; i++ { // a day
		if err := g.Exchange(nil, &st); err != nil {
			t.Fatal(err)
		}
		if st.Battery > prev || st.Battery < MinBattery || st.Battery > 1 {
			t.Fatalf("second %d: battery %g after %g", i, st.Battery, prev)
		}
		prev = st.Battery
	}
	if st.Battery != MinBattery {
		t.Errorf("battery after a day is %g, want the floor %g", st.Battery, MinBattery)
	}
}

func TestGripRandomIsReproducible(t *testing.T) {
	trace := func(seed int64) hw.State {
		g := NewGrip(GripOptions{PeriodS: testPeriodS, Motion: MotionRandom, Seed: seed})
		var st hw.State
		for i := 0; i < 7000; i++ {
			_ = g.Exchange(nil, &st)
		}
		return st
	}
	if trace(3) != trace(3) {
		t.Error("same seed, different grip states")
	}
	if trace(3) == trace(4) {
		t.Error("different seeds, same grip state")
	}
}

func TestGripHaltAndClose(t *testing.T) {
	g := NewGrip(GripOptions{})
	if info := g.Info(); info.Kind != hw.KindGrip || !info.Simulated || info.MaxForceN != 0 || info.ID != GripID(0) {
		t.Errorf("info %+v", info)
	}
	var st hw.State
	if err := g.Exchange(nil, nil); err == nil {
		t.Error("nil state accepted")
	}
	if err := g.Halt(); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"exchange": g.Exchange(nil, &st), "halt": g.Halt(), "close": g.Close(),
	} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after close: %v, want ErrClosed", name, err)
		}
	}
}

// Grips in circle motion are spread in phase by index, as arms are: a
// dashboard of eight grips showed eight identical orientations, halls and
// button presses.
func TestGripCirclePhaseSpreadByIndex(t *testing.T) {
	const grips = 8
	states := make([]hw.State, grips)
	for i := range grips {
		g := NewGrip(GripOptions{Index: i, PeriodS: testPeriodS, Motion: MotionCircle})
		for range int(2 / testPeriodS) { // 2 s
			if err := g.Exchange(nil, &states[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range grips {
		for j := range i {
			a, b := states[i], states[j]
			dq := math.Abs(a.Orientation.W-b.Orientation.W) + math.Abs(a.Orientation.X-b.Orientation.X) +
				math.Abs(a.Orientation.Y-b.Orientation.Y) + math.Abs(a.Orientation.Z-b.Orientation.Z)
			if dq < 0.01 && math.Abs(a.Hall-b.Hall) < 0.01 {
				t.Errorf("grips %d and %d move alike: %+v and %+v", j, i, a.Orientation, b.Orientation)
			}
		}
	}
}
