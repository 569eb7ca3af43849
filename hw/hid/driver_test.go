package hid_test

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/hid"
)

var board = hid.Info{ID: 0xB0A2, Model: 1, UUID: [16]byte{0xde, 0xad, 15: 1}}

func open(t *testing.T) (*hid.Driver, *hid.Fake) {
	t.Helper()
	f := hid.NewFake(board)
	d, err := hid.NewDriver(f, hid.Options{Path: "hid:test"})
	if err != nil {
		t.Fatal(err)
	}
	return d, f
}

func TestReportLayoutGolden(t *testing.T) {
	var r hid.Report
	r.PutForce(7, hw.Vec3{X: 1, Z: -2.5})
	want := []byte{0x01, 7, 0, 0, 0x80, 0x3f, 0, 0, 0, 0, 0, 0, 0x20, 0xc0}
	for i, b := range want {
		if r[i] != b {
			t.Fatalf("force report byte %d = %#x, want %#x (report % x)", i, r[i], b, r[:16])
		}
	}
	for i := len(want); i < hid.ReportLen; i++ {
		if r[i] != 0 {
			t.Fatalf("unused byte %d = %#x, want 0", i, r[i])
		}
	}
	var s hid.StateReport
	r.PutState(9, &hid.StateReport{PositionM: hw.Vec3{Y: 0.5}, Buttons: 5, Status: 3})
	r.State(&s)
	if r.Type() != hid.TypeState || r.Seq() != 9 || s.PositionM != (hw.Vec3{Y: 0.5}) || s.Buttons != 5 || r[26] != 5 {
		t.Errorf("state report round trip: %+v % x", s, r[:28])
	}
}

func TestDriverIdentifiesAndExchanges(t *testing.T) {
	d, f := open(t)
	defer d.Close()
	info := d.Info()
	if info.ID != "B0A2" || info.UUID != "DEAD0000000000000000000000000001" || info.Port != "hid:test" || !info.HostGravityCompensation {
		t.Errorf("Info = %+v", info)
	}
	f.SetState(hid.StateReport{PositionM: hw.Vec3{Z: 0.125}, VelocityMps: hw.Vec3{X: 0.25}, Buttons: 3, Status: 3})
	tests := []struct {
		name      string
		cmd       hw.Command
		wantForce hw.Vec3
	}{
		{"force", hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: 1}}, hw.Vec3{Z: 1}},
		{"idle is a zero force", hw.Command{Mode: hw.ModeIdle, ForceN: hw.Vec3{Z: 1}}, hw.Vec3{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var st hw.State
			if err := d.Exchange(&tc.cmd, &st); err != nil {
				t.Fatal(err)
			}
			if f.ForceN() != tc.wantForce || st.ForceN != tc.wantForce {
				t.Errorf("board holds %v, state says %v; want %v", f.ForceN(), st.ForceN, tc.wantForce)
			}
			if st.PositionM != (hw.Vec3{Z: 0.125}) || st.Buttons != hw.ButtonA|hw.ButtonB || st.Status&hw.StatusReady == 0 {
				t.Errorf("state %+v", st)
			}
		})
	}
}

func TestDriverDropsLateReplies(t *testing.T) {
	d, f := open(t)
	defer d.Close()
	// A reply to an older command is already waiting.
	var old hid.Report
	old.PutForce(200, hw.Vec3{})
	f.SetState(hid.StateReport{PositionM: hw.Vec3{X: 0.5}})
	f.Write(&old)
	f.SetState(hid.StateReport{PositionM: hw.Vec3{X: 0.25}})
	var st hw.State
	if err := d.Exchange(&hw.Command{Mode: hw.ModeForce}, &st); err != nil {
		t.Fatal(err)
	}
	if st.PositionM.X != 0.25 {
		t.Errorf("position %v: the late reply was taken for the current one", st.PositionM)
	}
}

func TestDriverStopsForceOnTrouble(t *testing.T) {
	tests := []struct {
		name    string
		trouble func(d *hid.Driver, f *hid.Fake) error
		wantErr error
	}{
		{"stalled replies", func(d *hid.Driver, f *hid.Fake) error {
			f.Stall(1 << 20)
			var err error
			// The default budget at 1 kHz is 20 ms of silence: 20 misses.
			for i := 0; i < 20 && err == nil; i++ {
				err = d.Exchange(&hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: 2}}, &hw.State{})
			}
			return err
		}, hid.ErrNoReply},
		{"unsupported mode", func(d *hid.Driver, f *hid.Fake) error {
			return d.Exchange(&hw.Command{Mode: hw.ModePosition}, &hw.State{})
		}, hid.ErrMode},
		{"halt", func(d *hid.Driver, f *hid.Fake) error { return d.Halt() }, nil},
		{"close", func(d *hid.Driver, f *hid.Fake) error { return d.Close() }, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, f := open(t)
			if err := d.Exchange(&hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: 2}}, &hw.State{}); err != nil {
				t.Fatal(err)
			}
			err := tc.trouble(d, f)
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("error %v, want %v", err, tc.wantErr)
			}
			if f.ForceN() != (hw.Vec3{}) {
				t.Errorf("board still holds %v", f.ForceN())
			}
		})
	}
}

func TestExchangeDoesNotAllocate(t *testing.T) {
	d, _ := open(t)
	defer d.Close()
	cmd := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: 1}}
	var st hw.State
	if allocs := testing.AllocsPerRun(1000, func() { d.Exchange(&cmd, &st) }); allocs != 0 {
		t.Fatalf("Exchange allocates %v times per tick, want 0", allocs)
	}
}

func TestBuildReportsAvailability(t *testing.T) {
	_, err := hid.Enumerate()
	if !hid.Available() && !errors.Is(err, hid.ErrUnavailable) {
		t.Errorf("HID compiled out but Enumerate = %v", err)
	}
}

// TestMissBudgetFollowsPeriod checks the reply budget derives from the loop
// period, as the serial arm's does: a fast loop tolerates more misses, each
// waited for no longer than 80% of its period.
func TestMissBudgetFollowsPeriod(t *testing.T) {
	tests := []struct {
		name       string
		periodS    float64
		wantMisses int
	}{
		{"5 kHz", 0.0002, 100},
		{"default 1 kHz", 0, 20},
		{"100 Hz", 0.01, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := hid.NewFake(board)
			d, err := hid.NewDriver(f, hid.Options{Path: "hid:test", PeriodS: tc.periodS})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			timeout, _ := hw.ReplyBudget(tc.periodS)
			cmd := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: 1}}
			var st hw.State
			if err := d.Exchange(&cmd, &st); err != nil {
				t.Fatal(err)
			}
			f.Stall(1 << 20)
			start := time.Now()
			for i := 1; i < tc.wantMisses; i++ {
				if err := d.Exchange(&cmd, &st); err != nil {
					t.Fatalf("miss %d of %d: %v", i, tc.wantMisses, err)
				}
			}
			if err := d.Exchange(&cmd, &st); !errors.Is(err, hid.ErrNoReply) {
				t.Errorf("miss %d: error %v, want %v", tc.wantMisses, err, hid.ErrNoReply)
			}
			// Each miss waits out its whole deadline: the fake never blocks,
			// so the driver must poll until then.
			if took, min := time.Since(start), time.Duration(tc.wantMisses)*timeout; took < min {
				t.Errorf("%d misses took %v, want at least %v", tc.wantMisses, took, min)
			}
			if f.ForceN() != (hw.Vec3{}) {
				t.Errorf("board still holds %v", f.ForceN())
			}
		})
	}
}

// TestShortPeriodTakesLateReplyWithinBudget drives a board at a loop period
// whose reply deadline is under hidapi's 1 ms resolution: a reply that comes
// before the deadline is taken, one that comes after it is a miss.
func TestShortPeriodTakesLateReplyWithinBudget(t *testing.T) {
	const periodS = 0.0009 // deadline 720 µs
	f := hid.NewFake(board)
	d, err := hid.NewDriver(f, hid.Options{Path: "hid:test", PeriodS: periodS})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	cmd := hw.Command{Mode: hw.ModeForce}
	var st hw.State

	f.Delay(150 * time.Microsecond)
	f.SetState(hid.StateReport{PositionM: hw.Vec3{X: 0.25}, Status: 3})
	// A loaded test machine may deschedule the driver past its deadline
	// once; it must take the reply on some of a few tries.
	for i := 0; i < 5 && st.PositionM.X != 0.25; i++ {
		if err := d.Exchange(&cmd, &st); err != nil {
			t.Fatal(err)
		}
	}
	if st.PositionM.X != 0.25 {
		t.Errorf("a reply 150 µs late was missed with a 720 µs deadline; position %v", st.PositionM)
	}

	f.Delay(5 * time.Millisecond)
	f.SetState(hid.StateReport{PositionM: hw.Vec3{X: 0.5}, Status: 3})
	if err := d.Exchange(&cmd, &st); err != nil {
		t.Fatal(err)
	}
	if st.PositionM.X == 0.5 {
		t.Errorf("a reply 5 ms late was taken within a %v deadline", 720*time.Microsecond)
	}
}

func TestExchangeRejectsNil(t *testing.T) {
	d, f := open(t)
	defer d.Close()
	writes := f.Writes()
	if err := d.Exchange(nil, &hw.State{}); err == nil {
		t.Error("nil command accepted")
	}
	if err := d.Exchange(&hw.Command{Mode: hw.ModeForce}, nil); err == nil {
		t.Error("nil state accepted")
	}
	if f.Writes() != writes {
		t.Errorf("a rejected Exchange wrote %d reports", f.Writes()-writes)
	}
}

// stateAger is actors/loop's StateAgeReporter: how a driver says the state
// of its last Exchange is an earlier reply's again.
type stateAger interface {
	StateAge() (ageNs int64, repeated bool)
}

// TestBadOrMissingStateIsNotFresh: a state report whose numbers are not
// finite (a board whose sensor is not up, a firmware bug) is no state: it
// counts as a missed reply, as an implausible serial frame does, and the
// last good state is reported again. And, as the serial arm's, a missed
// reply's repeated state is marked as repeated (not fresh), so the loop
// stops advancing "current as of".
func TestBadOrMissingStateIsNotFresh(t *testing.T) {
	good := hid.StateReport{PositionM: hw.Vec3{X: 0.1, Y: 0.15, Z: 0.1}, Status: 3}
	nan := math.NaN()
	tests := []struct {
		name  string
		fault func(f *hid.Fake)
	}{
		{"NaN position", func(f *hid.Fake) { f.SetState(hid.StateReport{PositionM: hw.Vec3{X: nan}, Status: 3}) }},
		{"infinite velocity", func(f *hid.Fake) {
			f.SetState(hid.StateReport{PositionM: good.PositionM, VelocityMps: hw.Vec3{Z: math.Inf(-1)}, Status: 3})
		}},
		{"no reply", func(f *hid.Fake) { f.Stall(1 << 20) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, f := open(t)
			defer d.Close()
			ager, ok := any(d).(stateAger)
			if !ok {
				t.Fatal("the RawHID driver does not report its state's age; a missed reply would look fresh")
			}
			f.SetState(good)
			cmd := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: 1}}
			var st hw.State
			if err := d.Exchange(&cmd, &st); err != nil {
				t.Fatal(err)
			}
			if _, repeated := ager.StateAge(); repeated {
				t.Error("a fresh reply is reported as repeated")
			}
			last := st
			tc.fault(f)
			if err := d.Exchange(&cmd, &st); err != nil {
				t.Fatalf("one bad reply: %v, want a miss", err)
			}
			if st.PositionM != last.PositionM || st.VelocityMps != last.VelocityMps {
				t.Errorf("state after a bad reply = %+v, want the last good one", st)
			}
			if _, repeated := ager.StateAge(); !repeated {
				t.Error("the last good state, reported again, is not marked as repeated")
			}
		})
	}
}

// troubledBoard is a board whose reads fail as a pulled board's do while
// its writes still go through (hidapi's write may be the last to notice),
// or whose writes fail as those of a board that takes no data do.
type troubledBoard struct {
	*hid.Fake
	pulled, stalled bool
}

func (b *troubledBoard) Read(r *hid.Report, timeout time.Duration) (bool, error) {
	if b.pulled {
		return false, fmt.Errorf("hidapi: hid_error is not implemented yet: %w", hid.ErrDisconnected)
	}
	return b.Fake.Read(r, timeout)
}

func (b *troubledBoard) Write(r *hid.Report) error {
	if b.stalled {
		return fmt.Errorf("%w (the write failed after 1s: hidapi: hid_error is not implemented yet)", hid.ErrWriteStalled)
	}
	return b.Fake.Write(r)
}

// TestUnpluggedBoardIsGone: a board pulled mid-session fails its exchange
// with hw.ErrGone, so the loop fails it at once (as it does a serial arm),
// instead of keeping it listed for half a second of failed exchanges. The
// error comes at the first exchange after the pull, whether the write or
// the read sees it first. So does a board that takes no data (its firmware
// hung with its USB link up), whose every write would hold the loop for
// hidapi's 1 s timeout.
func TestUnpluggedBoardIsGone(t *testing.T) {
	tests := []struct {
		name string
		pull func(b *troubledBoard)
		want error
	}{
		{"the write sees it", func(b *troubledBoard) { b.Unplug() }, hid.ErrDisconnected},
		{"the read sees it", func(b *troubledBoard) { b.pulled = true }, hid.ErrDisconnected},
		{"the board takes no data", func(b *troubledBoard) { b.stalled = true }, hid.ErrWriteStalled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := &troubledBoard{Fake: hid.NewFake(board)}
			d, err := hid.NewDriver(b, hid.Options{Path: "hid:test"})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			cmd := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: 1}}
			var st hw.State
			if err := d.Exchange(&cmd, &st); err != nil {
				t.Fatal(err)
			}
			tc.pull(b)
			err = d.Exchange(&cmd, &st)
			if !errors.Is(err, hw.ErrGone) || !errors.Is(err, tc.want) {
				t.Errorf("exchange: %v; want an error wrapping hw.ErrGone and %v", err, tc.want)
			}
		})
	}
}
