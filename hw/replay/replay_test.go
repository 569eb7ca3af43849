package replay_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/replay"
)

// The recorded timeline plays at the given speed from the first Exchange,
// holds its last state or starts over, and commands do not move it.
func TestPlaysTheRecordedTimeline(t *testing.T) {
	samples := []replay.Sample{
		{TimeNs: 1000, Position: hw.Vec3{X: 1}},
		{TimeNs: 1000 + int64(10*time.Millisecond), Position: hw.Vec3{X: 2}},
		{TimeNs: 1000 + int64(20*time.Millisecond), Position: hw.Vec3{X: 3}},
	}
	tests := []struct {
		speed   float64
		loop    bool
		elapsed time.Duration
		want    float64
	}{
		{1, false, 0, 1},
		{1, false, 9 * time.Millisecond, 1},
		{1, false, 10 * time.Millisecond, 2},
		{2, false, 5 * time.Millisecond, 2},
		{2, false, 10 * time.Millisecond, 3},
		{1, false, time.Hour, 3},
		{1, true, 25 * time.Millisecond, 1},
		{1, true, 31 * time.Millisecond, 2},
	}
	for _, tt := range tests {
		var now time.Duration
		d := replay.New(replay.Options{Samples: samples, Speed: tt.speed, Loop: tt.loop, Now: func() time.Duration { return now }})
		var st hw.State
		if err := d.Exchange(&hw.Command{}, &st); err != nil || st.PositionM.X != 1 {
			t.Fatalf("first exchange: %v, %+v", err, st)
		}
		now = tt.elapsed
		if err := d.Exchange(&hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: 5}}, &st); err != nil {
			t.Fatal(err)
		}
		if st.PositionM.X != tt.want {
			t.Errorf("speed %v loop %v after %v: position %v, want %v", tt.speed, tt.loop, tt.elapsed, st.PositionM.X, tt.want)
		}
	}
	if !replay.New(replay.Options{Samples: samples}).Info().Simulated {
		t.Error("a replayed device must say it is simulated")
	}
}

// At another speed the velocities go as fast as the timeline: at 2 the
// positions a client sees move twice as fast as recorded, and a velocity
// as recorded disagreed with them (tourrec2).
func TestVelocitiesFollowTheSpeed(t *testing.T) {
	samples := []replay.Sample{{TimeNs: 1, Position: hw.Vec3{X: 1}, Velocity: hw.Vec3{X: 0.5, Y: -1, Z: 2},
		AngularVelocityDps: hw.Angles3{A0: 10, A1: -20, A2: 30}}}
	for _, speed := range []float64{0.5, 1, 2} {
		d := replay.New(replay.Options{Samples: samples, Speed: speed, Now: func() time.Duration { return 0 }})
		var st hw.State
		if err := d.Exchange(&hw.Command{}, &st); err != nil {
			t.Fatal(err)
		}
		v, w := samples[0].Velocity, samples[0].AngularVelocityDps
		if want := (hw.Vec3{X: v.X * speed, Y: v.Y * speed, Z: v.Z * speed}); st.VelocityMps != want {
			t.Errorf("speed %v: velocity %v, want %v", speed, st.VelocityMps, want)
		}
		if want := (hw.Angles3{A0: w.A0 * speed, A1: w.A1 * speed, A2: w.A2 * speed}); st.AngularVelocityDps != want {
			t.Errorf("speed %v: angular velocity %v, want %v", speed, st.AngularVelocityDps, want)
		}
	}
}

// A replayed grip reports its recorded orientation, buttons, hall sensor
// and battery.
func TestPlaysAGrip(t *testing.T) {
	want := replay.Sample{TimeNs: 5, Orientation: hw.Quat{W: 0.5, X: 0.5, Y: -0.5, Z: 0.5}, Buttons: hw.ButtonA | hw.ButtonC, Hall: 0.3, Battery: 0.9, Status: hw.StatusReady}
	d := replay.New(replay.Options{Info: hw.Info{Kind: hw.KindGrip}, Samples: []replay.Sample{want}})
	var st hw.State
	if err := d.Exchange(&hw.Command{}, &st); err != nil {
		t.Fatal(err)
	}
	if st.Orientation != want.Orientation || st.Buttons != want.Buttons || st.Hall != want.Hall || st.Battery != want.Battery || st.Status != want.Status {
		t.Fatalf("grip state %+v, want the sample %+v", st, want)
	}
}

// hw.Driver's contract: calls after Close return an error, and so does a
// second Close; a nil state is refused, not a panic.
func TestCallsAfterCloseFail(t *testing.T) {
	d := replay.New(replay.Options{Samples: []replay.Sample{{Position: hw.Vec3{X: 1}}}})
	var st hw.State
	if err := d.Exchange(&hw.Command{}, nil); err == nil {
		t.Error("Exchange with a nil state returned nil")
	}
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	tests := []struct {
		name string
		call func() error
	}{
		{"Exchange", func() error { return d.Exchange(&hw.Command{}, &st) }},
		{"Halt", d.Halt},
		{"Close", d.Close},
	}
	for _, tc := range tests {
		if err := tc.call(); !errors.Is(err, replay.ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", tc.name, err)
		}
	}
}
