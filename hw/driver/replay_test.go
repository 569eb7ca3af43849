package driver_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/driver"
	"github.com/hapticd/hapticd/hw/emulator"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/serial"
	"github.com/hapticd/hapticd/hw/sim"
)

// session is what the driver does in the recorded test: open, a few force
// ticks, close.
func session(p serial.Port, ticks int, forceN hw.Vec3) ([]hw.State, error) {
	a, err := driver.OpenArm(p, driver.ArmOptions{Path: "replay", ReplyTimeout: testReplyTimeout})
	if err != nil {
		return nil, err
	}
	cmd := hw.Command{Mode: hw.ModeForce, ForceN: forceN}
	states := make([]hw.State, ticks)
	for i := range states {
		if err := a.Exchange(&cmd, &states[i]); err != nil {
			a.Close()
			return nil, err
		}
	}
	return states, a.Close()
}

func TestRecordReplayRoundTrip(t *testing.T) {
	_, path := startEmulator(t, emulator.Options{Index: 100})
	real, err := serial.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	tap := serial.Tap(real)
	recorded, err := session(tap, 20, hw.Vec3{Z: 2})
	if err != nil {
		t.Fatalf("recorded session: %v", err)
	}
	// Through the file format, as a committed fixture would be.
	var file bytes.Buffer
	if err := serial.WriteRecording(&file, tap.Records()); err != nil {
		t.Fatal(err)
	}
	records, err := serial.ReadRecording(&file)
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		ticks   int
		forceN  hw.Vec3
		wantErr string
	}{
		{"same session replays exactly", 20, hw.Vec3{Z: 2}, ""},
		{"driver stops early: its zero force comes too soon", 10, hw.Vec3{Z: 2}, "the recording has"},
		{"driver sends other bytes", 20, hw.Vec3{Z: 3}, "the recording has"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			states, err := session(serial.Replay(records), tc.ticks, tc.forceN)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("replay error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("replay: %v", err)
			}
			for i := range states {
				if states[i] != recorded[i] {
					t.Fatalf("tick %d: replayed %+v, recorded %+v", i, states[i], recorded[i])
				}
			}
		})
	}
}

// A reply that comes after its deadline is a miss (the state repeated)
// when recorded, and must be one when replayed: the replay serves it no
// earlier than the recorded driver read it, after its read timed out. Here
// the emulator answers one command late and the host then pauses (as a
// loaded machine preempts it), so the late reply is in the input at the
// next exchange; the replayed driver used to take it at once and report a
// fresh state where the recorded one repeated the last.
func TestReplayedLateReplyIsMissedAsRecorded(t *testing.T) {
	const timeout = 50 * time.Millisecond
	e, path := startEmulator(t, emulator.Options{Index: 102})
	real, err := serial.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	tap := serial.Tap(real)
	opts := driver.ArmOptions{Path: "replay", ReplyTimeout: timeout, HaltTimeout: testReplyTimeout}
	a, err := driver.OpenArm(tap, opts)
	if err != nil {
		t.Fatalf("OpenArm: %v", err)
	}
	cmd := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: 2}}
	const late = 5
	recorded := make([]hw.State, 12)
	for i := range recorded {
		if i == late {
			e.SetFaults(emulator.Faults{Latency: timeout + 100*time.Millisecond})
		}
		if err := a.Exchange(&cmd, &recorded[i]); err != nil {
			t.Fatalf("tick %d: %v", i, err)
		}
		if i == late {
			e.SetFaults(emulator.Faults{})
			time.Sleep(300 * time.Millisecond) // the host preempted past the late reply
		}
	}
	if a.Missed() == 0 {
		t.Fatal("the recorded session missed no reply: the late one came in time")
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	var file bytes.Buffer // through the file format: it keeps the reads that timed out
	if err := serial.WriteRecording(&file, tap.Records()); err != nil {
		t.Fatal(err)
	}
	records, err := serial.ReadRecording(&file)
	if err != nil {
		t.Fatal(err)
	}
	b, err := driver.OpenArm(serial.Replay(records), opts)
	if err != nil {
		t.Fatalf("replayed OpenArm: %v", err)
	}
	for i := range recorded {
		var st hw.State
		if err := b.Exchange(&cmd, &st); err != nil {
			t.Fatalf("replayed tick %d: %v", i, err)
		}
		if st != recorded[i] {
			t.Fatalf("tick %d: replayed %+v, recorded %+v (the recording missed %d replies, the replay %d)", i, st, recorded[i], a.Missed(), b.Missed())
		}
	}
	if b.Missed() != a.Missed() {
		t.Errorf("the replay missed %d replies, the recording %d", b.Missed(), a.Missed())
	}
	if err := b.Close(); err != nil {
		t.Fatalf("replayed Close: %v", err)
	}
}

func TestGripThroughPTY(t *testing.T) {
	e, path := startEmulator(t, emulator.Options{Kind: hw.KindGrip, Index: 3, Motion: sim.MotionCircle})
	g := openGrip(t, path, driver.GripOptions{})
	// A grip found on a port is the dongle's wireless grip unless told.
	if info := g.Info(); info.Kind != hw.KindGrip || info.ID != itoa(e.ID()) || info.Port != path || info.Link != hw.LinkWireless {
		t.Errorf("Info = %+v, want grip %d on %s", info, e.ID(), path)
	}
	var st hw.State
	var first hw.Quat
	hwtest.Eventually(t, 10*time.Second, "the connected grip's orientation to change", func() bool {
		if err := g.Exchange(nil, &st); err != nil {
			t.Fatalf("Exchange: %v", err)
		}
		if first == (hw.Quat{}) {
			first = st.Orientation
		}
		return st.Status&hw.StatusConnected != 0 && st.Orientation != first
	})
	if st.Battery <= 0 || st.Battery > 1 {
		t.Errorf("battery %v, want within (0, 1]", st.Battery)
	}
	e.Unplug()
	var err2 error
	hwtest.Eventually(t, 10*time.Second, "Exchange to fail after the unplug", func() bool { err2 = g.Exchange(nil, &st); return err2 != nil })
	if err2 == nil || errors.Is(err2, driver.ErrClosed) {
		t.Errorf("Exchange after unplug = %v, want a port error", err2)
	}
}

func itoa(v uint16) string {
	if v == 0 {
		return "0"
	}
	var b []byte
	for ; v > 0; v /= 10 {
		b = append([]byte{byte('0' + v%10)}, b...)
	}
	return string(b)
}

func TestGripGoesStaleWithoutStatus(t *testing.T) {
	// A grip that answers the query but never streams status. Its link
	// is named: told from its stream, it would not open
	// (TestAsleepGripIsNotGuessedWireless).
	_, path := startEmulator(t, emulator.Options{Kind: hw.KindGrip, Index: 4, GripStatusPeriod: time.Hour})
	p, err := serial.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := driver.OpenGrip(p, driver.GripOptions{Path: path, Link: hw.LinkWireless, StaleAfter: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	var st hw.State
	var xerr error
	hwtest.Eventually(t, 10*time.Second, "Exchange to fail on a grip that streams no status", func() bool { xerr = g.Exchange(nil, &st); return xerr != nil })
	if !errors.Is(xerr, driver.ErrStale) {
		t.Fatalf("Exchange = %v, want ErrStale", xerr)
	}
}

// A grip streams status slower than most loops: an Exchange between two
// frames returns the last one again, and StateAge says how old it is, so a
// recording or a reader of LoadCurrent does not take it for fresh. A new
// frame is as old as the time since the Exchange before it, at most.
func TestGripStateAgeCountsFromItsFrame(t *testing.T) {
	const period = 150 * time.Millisecond
	_, path := startEmulator(t, emulator.Options{Kind: hw.KindGrip, Index: 5, Motion: sim.MotionCircle, GripStatusPeriod: period})
	p, err := serial.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := driver.OpenGrip(p, driver.GripOptions{Path: path, StaleAfter: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	var st hw.State
	var last hw.Quat
	prev := time.Now()
	fresh, aged := 0, false
	hwtest.Eventually(t, 20*time.Second, "new frames with a small age and a repeated one aged past half the status period", func() bool {
		began := time.Now()
		if err := g.Exchange(nil, &st); err != nil {
			t.Fatalf("Exchange: %v", err)
		}
		age, repeated := g.StateAge()
		if repeated || age < 0 {
			t.Fatalf("StateAge = %d, %v: want a non-negative age, never repeated", age, repeated)
		}
		if st.Orientation != last && last != (hw.Quat{}) {
			// The frame came after the previous Exchange read the port.
			if bound := time.Since(prev); time.Duration(age) > bound {
				t.Fatalf("a new frame aged %v, more than the %v since the Exchange before it", time.Duration(age), bound)
			}
			fresh++
		} else if last != (hw.Quat{}) && time.Duration(age) >= period/2 {
			aged = true
		}
		last, prev = st.Orientation, began
		time.Sleep(5 * time.Millisecond)
		return fresh >= 3 && aged
	})
}
