package driver_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/driver"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/serial"
	"github.com/hapticd/hapticd/hw/wire"
)

// preemptedPort is a port (an in-memory arm, or a real pseudo-terminal)
// whose reading thread, once armed, is
// preempted right after a waiting read returns the first byte of a reply:
// it runs again only once that read's deadline has passed. The rest of the
// reply is then already received (a reply that came in time), or, with
// withhold, never comes (a reply cut short: a real miss). It also counts
// drains: reads set up not to wait before an exchange's write.
type preemptedPort struct {
	serial.Port
	armed, withhold bool
	preempted       int

	waiting      bool // the last read timeout was positive
	readDeadline time.Time
	wrote        bool
	drains       int
}

func (p *preemptedPort) Write(b []byte) (int, error) {
	p.wrote = true
	return p.Port.Write(b)
}

func (p *preemptedPort) SetReadTimeout(d time.Duration) error {
	p.waiting, p.readDeadline = d > 0, time.Now().Add(d)
	if d == 0 && !p.wrote {
		p.drains++
	}
	return p.Port.SetReadTimeout(d)
}

func (p *preemptedPort) Read(b []byte) (int, error) {
	if !p.armed || len(b) == 0 {
		return p.Port.Read(b)
	}
	n, err := p.Port.Read(b[:1])
	if n == 0 || err != nil {
		return n, err
	}
	p.armed = false
	p.preempted++
	if p.withhold {
		_ = p.Port.ResetInputBuffer()
	}
	if !p.waiting {
		// The thread was preempted before this read (the host is
		// loaded): a read that does not wait gets what has arrived.
		m, err := p.Port.Read(b[n:])
		return n + m, err
	}
	// The preemption: the thread is back only after its deadline.
	for !time.Now().After(p.readDeadline) {
		time.Sleep(time.Until(p.readDeadline) + time.Microsecond)
	}
	return n, err
}

// TestArmReplyReceivedInTimeIsNoMiss: a thread preempted between a read
// and its deadline check (a loaded host) found the deadline passed and
// counted the reply waiting in the port as a miss. Each miss starts a
// resynchronisation, and a run of them fails the exchange, which then
// sends two more frames (the driver's zero force, the loop's Halt): in
// tests, that flood filled a starved in-process emulator's 4 KiB
// pseudo-terminal buffer. A reply received by the time the thread runs
// again came in time and counts; one that never completes is still a
// miss. Every way an exchange waits for its reply is covered: the plain
// read, the one that also takes configuration acknowledgements, the
// resynchronising one, and Halt's.
func TestArmReplyReceivedInTimeIsNoMiss(t *testing.T) {
	const timeout = 20 * time.Millisecond
	tests := []struct {
		name     string
		withhold bool
		wantMiss bool
	}{
		{"the rest of the reply already received", false, false},
		{"the rest of the reply never comes", true, true},
	}
	noSetup := func(*testing.T, *driver.Arm, *preemptedPort) {}
	waits := []struct {
		name string
		// setup readies the arm for the wait under test.
		setup func(t *testing.T, a *driver.Arm, p *preemptedPort)
		halt  bool // Halt's wait rather than Exchange's
	}{
		{"reply", noSetup, false},
		{"reply and acknowledgement", func(t *testing.T, a *driver.Arm, _ *preemptedPort) {
			if err := a.Configure(hw.Settings{GravityCompensation: true, GravityScale: 1}); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"resynchronising", missOnce, false},
		{"halt", noSetup, true},
	}
	cmd := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: 1}}
	for _, wait := range waits {
		for _, tc := range tests {
			t.Run(wait.name+"/"+tc.name, func(t *testing.T) {
				p := &preemptedPort{Port: hwtest.NewArmPort(0x049D, [16]byte{1})}
				a, err := driver.OpenArm(p, driver.ArmOptions{Path: "mem", ReplyTimeout: timeout, HaltTimeout: timeout, MaxMisses: 100})
				if err != nil {
					t.Fatal(err)
				}
				defer a.Close()
				wait.setup(t, a, p)
				missed := a.Missed()
				p.armed, p.withhold = true, tc.withhold
				var st hw.State
				if wait.halt {
					err = a.Halt()
				} else {
					err = a.Exchange(&cmd, &st)
				}
				if err != nil {
					t.Fatal(err)
				}
				if p.preempted != 1 {
					t.Fatalf("the reading thread was preempted %d times, want 1", p.preempted)
				}
				if wait.halt {
					// Halt counts no miss, but one leaves the driver
					// resynchronising: the next exchange drains the
					// input before its write.
					p.wrote = false
					drains := p.drains
					exchangeN(t, a, cmd, 1)
					if got := p.drains > drains; got != tc.wantMiss {
						t.Errorf("the exchange after Halt drained = %v, want %v (Halt missed its reply)", got, tc.wantMiss)
					}
					return
				}
				if got := a.Missed() > missed; got != tc.wantMiss {
					t.Errorf("reply counted as missed = %v, want %v", got, tc.wantMiss)
				}
				if _, repeated := a.StateAge(); repeated != tc.wantMiss {
					t.Errorf("state reported as repeated = %v, want %v", repeated, tc.wantMiss)
				}
			})
		}
	}
}

// missOnce makes the arm miss one reply, so the next exchange
// resynchronises.
func missOnce(t *testing.T, a *driver.Arm, p *preemptedPort) {
	t.Helper()
	p.armed, p.withhold = true, true
	exchangeN(t, a, hw.Command{}, 1)
	if a.Missed() != 1 {
		t.Fatalf("%d replies missed, want 1 to start resynchronising", a.Missed())
	}
	p.preempted = 0
}

// TestOpenTakesAnIdentityReceivedInTime: the wake-up of an arm and the
// grip query of a dongle had the same flaw as an exchange: a thread
// preempted past the attempt's deadline after a read failed the attempt
// with the reply waiting (a loaded host took more attempts to open a
// device, or reported an arm that "did not identify itself"). The
// identity is taken; one that never completes still fails the attempt.
func TestOpenTakesAnIdentityReceivedInTime(t *testing.T) {
	const timeout = 20 * time.Millisecond
	tests := []struct {
		name     string
		withhold bool
	}{
		{"the rest of the reply already received", false},
		{"the rest of the reply never comes", true},
	}
	for _, tc := range tests {
		t.Run("arm/"+tc.name, func(t *testing.T) {
			p := &preemptedPort{Port: hwtest.NewArmPort(0x049D, [16]byte{1}), armed: true, withhold: tc.withhold}
			a, err := driver.OpenArm(p, driver.ArmOptions{Path: "mem", WakeAttempts: 1, WakeTimeout: timeout})
			if err == nil {
				defer a.Close()
			}
			if p.preempted != 1 {
				t.Fatalf("the reading thread was preempted %d times, want 1", p.preempted)
			}
			if failed := errors.Is(err, driver.ErrWake); failed != tc.withhold || (err != nil && !failed) {
				t.Errorf("OpenArm with one wake-up attempt: %v; want it to fail with ErrWake: %v", err, tc.withhold)
			}
		})
		t.Run("grip/"+tc.name, func(t *testing.T) {
			const id = 0x1234
			status := wire.GripStatus{ID: id, Orientation: hw.Quat{W: 1}, Battery: 0.5}
			pty := playDongle(t, wire.AppendGripStatus(wire.AppendGripInfo(nil, wire.GripInfo{ID: id, Model: 3}), &status))
			sp, err := serial.Open(pty.Path)
			if err != nil {
				t.Fatal(err)
			}
			p := &preemptedPort{Port: sp, armed: true, withhold: tc.withhold}
			// The dongle answers within the timeout on a loaded machine;
			// the preemption waits it out.
			g, err := driver.OpenGrip(p, driver.GripOptions{Path: pty.Path, InfoAttempts: 1, InfoTimeout: testReplyTimeout})
			if err == nil {
				defer g.Close()
			}
			if p.preempted != 1 {
				t.Fatalf("the reading thread was preempted %d times, want 1", p.preempted)
			}
			if failed := errors.Is(err, driver.ErrNoGripInfo); failed != tc.withhold || (err != nil && !failed) {
				t.Errorf("OpenGrip with one query: %v; want it to fail with ErrNoGripInfo: %v", err, tc.withhold)
			}
		})
	}
}
