package driver_test

import (
	"os"
	"sync"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/driver"
	"github.com/hapticd/hapticd/hw/emulator"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/serial"
	"github.com/hapticd/hapticd/hw/wire"
)

// resyncReplyTimeout is the reply deadline of the tests with echoArm. Only
// the held replies are meant to miss it, and each costs it; every other
// reply must meet it on a loaded machine, which may starve the firmware's
// goroutine for hundreds of milliseconds under -race.
const resyncReplyTimeout = time.Second

// echoStep scripts how echoArm answers one force command.
type echoStep struct {
	// hold keeps this command's reply back (a stalled firmware or link);
	// it goes out with a later step's lateFirst or with release.
	hold bool
	// lateFirst writes the replies held so far when this command
	// arrives, so they land after the host wrote it; then this
	// command's reply follows after gap (0: in the same write).
	lateFirst bool
	gap       time.Duration
	// garbage surrounds what is written for this command with noise
	// bytes that start no frame.
	garbage bool
}

// echoArm is lock-step arm firmware on the device side of a real
// pseudo-terminal whose state reply tells which command it answers: the
// position's X is the X of the force commanded (keep it within the wire's
// plausible 10 m), the velocity's X the command's number. Force commands are
// numbered from 0 (the zero force the driver sends after the wake-up).
type echoArm struct {
	master *os.File
	steps  map[int]echoStep

	mu      sync.Mutex // guards held, handled and writes to master
	held    [][]byte
	handled int // force commands answered or held so far
	done    chan struct{}
}

var noise = []byte{0xFF, 0x00, 0x55, 0x77, 0xFE}

func startEchoArm(t *testing.T, steps map[int]echoStep) (*echoArm, string) {
	t.Helper()
	p, err := emulator.OpenPTY()
	if err != nil {
		hwtest.SkipIfUnsupported(t, err)
		t.Fatalf("OpenPTY: %v", err)
	}
	f := &echoArm{master: p.Master, steps: steps, done: make(chan struct{})}
	go f.serve()
	t.Cleanup(func() {
		p.Close()
		<-f.done
	})
	return f, p.Path
}

func (f *echoArm) serve() {
	defer close(f.done)
	scan := wire.NewScanner(wire.ToDevice)
	var m wire.Message
	k := 0
	for {
		n, err := f.master.Read(scan.Space())
		scan.Fill(n)
		for _, ok := scan.Next(&m); ok; _, ok = scan.Next(&m) {
			switch m.Header {
			case wire.HeaderWake:
				f.write(wire.AppendWakeReply(nil, wire.WakeReply{ID: 0x1234, UUID: [16]byte{1, 2, 3}}))
			case wire.HeaderForce:
				f.answer(k, m.A)
				k++
				f.mu.Lock()
				f.handled = k
				f.mu.Unlock()
			}
		}
		if err != nil {
			return
		}
	}
}

func (f *echoArm) answer(k int, forceN hw.Vec3) {
	s := f.steps[k]
	reply := wire.AppendEndEffectorState(nil, hw.Vec3{X: forceN.X, Z: 0.1}, hw.Vec3{X: float64(k)})
	var out []byte
	if s.garbage {
		out = append(out, noise...)
	}
	if s.lateFirst {
		f.mu.Lock()
		for _, r := range f.held {
			out = append(out, r...)
		}
		f.held = nil
		f.mu.Unlock()
		if s.garbage {
			out = append(out, noise...)
		}
		if s.gap > 0 || s.hold {
			f.write(out)
			out = nil
			// Test support: the firmware-side delay of the answer.
			time.Sleep(s.gap)
		}
	}
	if s.hold {
		f.mu.Lock()
		f.held = append(f.held, reply)
		f.mu.Unlock()
		return
	}
	out = append(out, reply...)
	if s.garbage {
		out = append(out, noise...)
	}
	f.write(out)
}

// release writes the held replies now, the first n bytes of them if n > 0
// (the rest stays held); it returns once they are in the host's input.
func (f *echoArm) release(n int) {
	f.mu.Lock()
	var all []byte
	for _, r := range f.held {
		all = append(all, r...)
	}
	f.held = nil
	if n > 0 && n < len(all) {
		f.held = [][]byte{all[n:]}
		all = all[:n]
	}
	f.mu.Unlock()
	f.write(all)
}

// waitHandled paces a test like the real-time loop: a loop period is
// longer than the device takes to answer (the lock-step premise), so the
// next exchange starts once the firmware has dealt with every command so
// far, its injected delays included.
func (f *echoArm) waitHandled(t *testing.T, n int) {
	t.Helper()
	hwtest.Eventually(t, 10*time.Second, "the firmware handled the command", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.handled >= n
	})
}

func (f *echoArm) write(b []byte) {
	if len(b) == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	_, _ = f.master.Write(b)
}

// TestArmLateReplyAnswersNoLaterCommand injects replies that come later
// than ReplyTimeout, arriving before or after the next command was
// written, and checks that each Exchange soon returns the state that
// answers its own command again, and keeps doing so.
func TestArmLateReplyAnswersNoLaterCommand(t *testing.T) {
	const gap = 20 * time.Millisecond
	tests := []struct {
		name  string
		steps map[int]echoStep
		// release (after that exchange returned) writes the held
		// replies, releaseBytes of them if not 0, before the next
		// command.
		release, releaseBytes int
		// inStep: the late reply is in the input before or with the
		// next exchange's own, so that exchange already answers its
		// command (drain, the begun-before drop, takeNewest).
		inStep bool
	}{
		{name: "late reply after the next write, with its reply",
			steps: map[int]echoStep{5: {hold: true}, 6: {lateFirst: true}}, inStep: true},
		{name: "late reply after the next write, alone",
			steps: map[int]echoStep{5: {hold: true}, 6: {lateFirst: true, gap: gap}}},
		{name: "two late replies in a row",
			steps: map[int]echoStep{5: {hold: true}, 6: {hold: true}, 7: {lateFirst: true, gap: gap}}},
		{name: "two replies each one command late",
			steps: map[int]echoStep{5: {hold: true}, 6: {lateFirst: true, hold: true}, 7: {lateFirst: true, gap: gap}}},
		{name: "late reply before the next write",
			steps: map[int]echoStep{5: {hold: true}}, release: 5, inStep: true},
		{name: "late reply begun before the next write, ended after it",
			steps: map[int]echoStep{5: {hold: true}, 6: {lateFirst: true, gap: gap}}, release: 5, releaseBytes: 10, inStep: true},
		{name: "garbage around a late reply after the next write",
			steps: map[int]echoStep{5: {hold: true}, 6: {lateFirst: true, gap: gap, garbage: true}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fw, path := startEchoArm(t, tc.steps)
			a := openArm(t, path, driver.ArmOptions{ReplyTimeout: resyncReplyTimeout})
			lastHeld := 0
			for k, s := range tc.steps {
				if s.hold {
					lastHeld = max(lastHeld, k)
				}
			}
			// Every reply is in time again from lastHeld+1 on. The
			// exchange after the last miss may still take a late reply
			// that arrives alone after its write for its own (nothing
			// tells them apart); the next exchange drains its real
			// reply as stale. So from lastHeld+2 on, every state must
			// answer its own command, through and beyond the
			// resynchronisation window (MaxMisses exchanges, 20 by
			// default).
			// Where the late reply is in the input before or with the
			// next one (inStep), that next exchange answers its own.
			firstGood := lastHeld + 2
			if tc.inStep {
				firstGood = lastHeld + 1
			}
			const exchanges = 80
			var st hw.State
			for i := 1; i <= exchanges; i++ {
				cmd := commandNumber(i)
				if err := a.Exchange(&cmd, &st); err != nil {
					t.Fatalf("Exchange %d: %v", i, err)
				}
				if i >= firstGood && st.PositionM.X != cmd.ForceN.X {
					t.Fatalf("Exchange %d returned the state answering command %v; want its own from exchange %d on",
						i, st.VelocityMps.X, firstGood)
				}
				if i >= firstGood && st.ForceN != cmd.ForceN {
					t.Fatalf("Exchange %d reports force %v applied, want %v", i, st.ForceN, cmd.ForceN)
				}
				fw.waitHandled(t, i+1) // commands 0..i
				if i == tc.release {
					fw.release(tc.releaseBytes)
				}
			}
			// Lock-step: every reply either answered an exchange or was
			// dropped as stale, and every miss left one reply over.
			if a.Missed() == 0 || a.Stale() != a.Missed() {
				t.Errorf("Missed() = %d, Stale() = %d; want the same, not 0", a.Missed(), a.Stale())
			}
		})
	}
}

// commandNumber is the force command of exchange i: a force whose X is
// exact in float32 and keeps echoArm's position plausible.
func commandNumber(i int) hw.Command {
	return hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{X: float64(i) / 64}}
}

// TestArmRepeatsLastStateOnMiss checks what a miss reports: the state of
// the last good reply, marked as a repeat (StateAge, which the loop uses to
// keep the state's time), and the next exchange's own state after it.
func TestArmRepeatsLastStateOnMiss(t *testing.T) {
	_, path := startEchoArm(t, map[int]echoStep{2: {hold: true}, 3: {lateFirst: true}})
	a := openArm(t, path, driver.ArmOptions{ReplyTimeout: resyncReplyTimeout})
	var st hw.State
	for i := 1; i <= 3; i++ {
		cmd := commandNumber(i)
		if err := a.Exchange(&cmd, &st); err != nil {
			t.Fatalf("Exchange %d: %v", i, err)
		}
		want := commandNumber(i).ForceN.X
		if i == 2 {
			want = commandNumber(1).ForceN.X // the miss repeats the last good state
		}
		if st.PositionM.X != want {
			t.Errorf("Exchange %d: position x %v, want %v", i, st.PositionM.X, want)
		}
		if _, got := a.StateAge(); got != (i == 2) {
			t.Errorf("Exchange %d: StateAge() repeated = %v, want %v", i, got, i == 2)
		}
	}
}

// drainCountingPort is a real serial port that counts the zero-timeout
// reads a draining Exchange sets up before its write (after it, one is
// the last look at a reply whose deadline passed). The test clears wrote
// before each exchange.
type drainCountingPort struct {
	serial.Port
	drains int
	wrote  bool
}

func (p *drainCountingPort) SetReadTimeout(d time.Duration) error {
	if d == 0 && !p.wrote {
		p.drains++
	}
	return p.Port.SetReadTimeout(d)
}

func (p *drainCountingPort) Write(b []byte) (int, error) {
	p.wrote = true
	return p.Port.Write(b)
}

// TestArmResynchronisationEnds checks the cost side: no drain before a
// miss, drains after it, and none again once MaxMisses clean exchanges
// (and as many periods) have passed, for as long as replies come in time.
func TestArmResynchronisationEnds(t *testing.T) {
	const missAt = 3
	fw, path := startEchoArm(t, map[int]echoStep{missAt: {hold: true}, missAt + 1: {lateFirst: true}})
	sp, err := serial.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	p := &drainCountingPort{Port: sp}
	a, err := driver.OpenArm(p, driver.ArmOptions{Path: path, ReplyTimeout: resyncReplyTimeout, MaxMisses: 5, PeriodS: 0.002})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	var st hw.State
	exchange := func(i int) (drained bool) {
		t.Helper()
		before := p.drains
		p.wrote = false
		cmd := commandNumber(i)
		if err := a.Exchange(&cmd, &st); err != nil {
			t.Fatalf("Exchange %d: %v", i, err)
		}
		fw.waitHandled(t, i+1)
		return p.drains != before
	}
	i := 1
	for ; i <= missAt; i++ {
		if exchange(i) {
			t.Fatalf("Exchange %d drained the input before any miss", i)
		}
	}
	if !exchange(i) {
		t.Fatalf("Exchange %d, after the miss, did not drain", i)
	}
	// MaxMisses clean exchanges and 5 periods (10 ms) after the miss.
	deadline := time.Now().Add(10 * time.Second)
	for i++; exchange(i); i++ {
		if time.Now().After(deadline) {
			t.Fatalf("still draining at exchange %d, long after the last miss", i)
		}
	}
	if i < missAt+1+5 {
		t.Errorf("resynchronisation ended at exchange %d, before 5 clean exchanges after the miss at %d", i, missAt)
	}
	for end := i + 30; i < end; i++ {
		if exchange(i) {
			t.Fatalf("Exchange %d drained again with no miss since", i)
		}
	}
}
