package discovery_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw/discovery"
	"github.com/hapticd/hapticd/hw/driver"
	"github.com/hapticd/hapticd/hw/emulator"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/serial"
)

// TestLostPortStaysHeldUntilItsDeviceGoes: the watcher closed a lost
// device's port and left it unlocked until its reopen after the backoff: a
// second hapticd scanning in between opened the port, woke the arm and
// kept it. Now the port stays held from its first load until the service
// lets it go or its device goes: a second watcher finds it busy and sends
// it no byte, and the first one reopens it. Once the device is unplugged
// the watcher keeps no descriptor on its port (on Linux a tty held open
// after its unplug keeps its number, so the arm plugged back in would come
// back under another name).
func TestLostPortStaysHeldUntilItsDeviceGoes(t *testing.T) {
	tests := []struct {
		name string
		// end ends the hold on path, which first holds for a reopen.
		end func(t *testing.T, first *discovery.Watcher, e *emulator.Emulator, path string)
		// check checks that the hold ended.
		check func(t *testing.T, path string)
	}{
		{
			name: "the service stops",
			end: func(t *testing.T, first *discovery.Watcher, _ *emulator.Emulator, _ string) {
				first.Release()
			},
			check: func(t *testing.T, path string) {
				p, err := serial.Open(path)
				if err != nil {
					t.Fatalf("open after the watcher released the port: %v", err)
				}
				p.Close()
			},
		},
		{
			name: "the device is unplugged",
			end: func(t *testing.T, first *discovery.Watcher, e *emulator.Emulator, path string) {
				if runtime.GOOS != "linux" {
					t.Skip("counts the descriptors in /proc/self/fd")
				}
				if n := descriptorsOn(t, path); n == 0 {
					t.Fatalf("no descriptor on %s while the watcher holds it", path)
				}
				if err := e.Unplug(); err != nil {
					t.Fatal(err)
				}
				first.Scan(&recorder{})
			},
			check: func(t *testing.T, path string) {
				if n := descriptorsOn(t, path); n != 0 {
					t.Errorf("%d descriptors still on %s after its device was unplugged", n, path)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, path := startEmulator(t, 8)
			clock := newClock()
			opts := discovery.WatcherOptions{ExplicitPorts: []string{path}, Enumerate: noPorts, HIDEnumerate: noBoards,
				Now: clock.Now, Arm: driver.ArmOptions{ReplyTimeout: 500 * time.Millisecond}}
			first := discovery.NewWatcher(opts)
			rec := &recorder{}
			defer rec.closeAll()
			lose := func() {
				t.Helper()
				if first.Scan(rec); len(rec.found) == 0 {
					t.Fatal("the first watcher did not load the arm")
				}
				first.Lost(path) // closes the driver: the port is not open now
				clock.Add(time.Minute)
			}
			lose()

			wakes := e.Stats().Wakeups
			other := &recorder{}
			defer other.closeAll()
			p, _ := portOf(discovery.NewWatcher(opts).Scan(other), path)
			if p.Outcome != discovery.Failed || !strings.Contains(p.Reason, serial.ErrBusy.Error()) || len(other.found) != 0 {
				t.Errorf("a second watcher on a port the first holds for a reopen: %+v, %d found; want failed, busy", p, len(other.found))
			}
			if n := e.Stats().Wakeups; n != wakes {
				t.Errorf("the arm was woken %d times by the second watcher, want 0", n-wakes)
			}

			lose() // reopened under the hold, and lost again
			if len(rec.found) != 2 {
				t.Fatalf("the first watcher loaded the arm %d times, want 2", len(rec.found))
			}
			tc.end(t, first, e, path)
			tc.check(t, path)
		})
	}
}

// descriptorsOn counts this process's descriptors open on the node at path
// (a node removed since reads "<path> (deleted)").
func descriptorsOn(t *testing.T, path string) int {
	t.Helper()
	dir := "/proc/self/fd"
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err == nil && strings.TrimSuffix(target, " (deleted)") == path {
			n++
		}
	}
	return n
}

// TestLostPortIsNotReopenedWhileItCloses: Lost let the port be scanned
// again before it had closed the lost driver, which waits for the arm's
// reply to its zero force. A scan in that window, its backoff already
// over, reopened the port under the old driver: as root it woke the arm
// while the old driver still read the port (and the old close then cleared
// the port's exclusive mode under the new one); as a user it failed busy on
// the service's own port, reported a spurious failure and doubled the
// backoff. Now a port whose driver is closing is left alone until the close
// ends, and is reopened then, its failures counting the loss only.
func TestLostPortIsNotReopenedWhileItCloses(t *testing.T) {
	e, path := startEmulator(t, 11)
	clock := newClock()
	const closeTakes = 3 * time.Second // the arm's silence Halt waits out
	w := discovery.NewWatcher(discovery.WatcherOptions{ExplicitPorts: []string{path}, Enumerate: noPorts, HIDEnumerate: noBoards,
		Now: clock.Now, BackoffMin: 10 * time.Millisecond,
		Arm: driver.ArmOptions{ReplyTimeout: 500 * time.Millisecond, HaltTimeout: closeTakes}})
	rec := &recorder{}
	defer rec.closeAll()
	if w.Scan(rec); len(rec.found) != 1 {
		t.Fatalf("the watcher loaded the arm %d times, want 1", len(rec.found))
	}
	wakes := e.Stats().Wakeups

	// The arm leaves the close's zero force unanswered: the close waits.
	e.Stall(1)
	lost := make(chan struct{})
	go func() {
		defer close(lost)
		w.Lost(path)
	}()
	hwtest.Eventually(t, 10*time.Second, "the closing driver's zero force to reach the arm", func() bool {
		return e.Stats().Stalled == 1
	})
	clock.Add(time.Minute) // the backoff is over long before the close is
	select {
	case <-lost:
		t.Fatalf("the close ended before the scan meant to run during it (a loaded machine?); it should take %v", closeTakes)
	default:
	}
	// (On the old code this scan's wake-up could also end the close early:
	// the old driver read the reply meant for the new one.)
	during, _ := portOf(w.Scan(rec), path)
	if n := e.Stats().Wakeups; n != wakes || len(rec.found) != 1 || during.Outcome != discovery.Failed || during.Failures != 1 {
		t.Errorf("a scan while the lost driver closes: %d wake-ups, %d loads, port %+v; want no wake-up, no load, failed once",
			n-wakes, len(rec.found)-1, during)
	}

	<-lost
	after, _ := portOf(w.Scan(rec), path)
	if after.Outcome != discovery.Loaded || after.Failures != 1 || len(rec.found) != 2 {
		t.Errorf("the scan after the close: port %+v, %d loads in all; want loaded again, failed once, 2 loads", after, len(rec.found))
	}
}

// TestRefusedPortIsLeftAlone: a service that took no device (serial
// devices disabled) was handed each one and refused it: the port was
// opened and the arm woken at every retry, for as long as the setting
// stayed off. Now a scan while the service refuses devices opens no port:
// the arm gets no byte, its port is not held (a hold kept since an earlier
// load ends), and it is listed failed with the service's reason, with no
// backoff: the first scan once the service takes devices again loads it.
func TestRefusedPortIsLeftAlone(t *testing.T) {
	e, path := startEmulator(t, 12)
	clock := newClock()
	w := discovery.NewWatcher(discovery.WatcherOptions{ExplicitPorts: []string{path}, Enumerate: noPorts, HIDEnumerate: noBoards,
		Now: clock.Now, Arm: driver.ArmOptions{ReplyTimeout: 500 * time.Millisecond}})
	rec := &recorder{}
	defer rec.closeAll()
	if w.Scan(rec); len(rec.found) != 1 {
		t.Fatalf("the watcher loaded the arm %d times, want 1", len(rec.found))
	}
	w.Lost(path) // held for a reopen

	rec.mu.Lock()
	rec.refusing = true
	rec.mu.Unlock()
	wakes := e.Stats().Wakeups
	for i := range 4 {
		clock.Add(2 * time.Minute) // past any backoff
		p, _ := portOf(w.Scan(rec), path)
		if p.Outcome != discovery.Failed || p.Reason != "devices are disabled" || p.Hint != "enable them" ||
			p.Failures != 0 || !p.RetryAt.IsZero() {
			t.Errorf("scan %d while devices are refused: port %+v; want failed with the refusal, no failures, no retry time", i, p)
		}
	}
	if n := e.Stats().Wakeups; n != wakes || len(rec.found) != 1 {
		t.Errorf("while devices are refused: %d wake-ups, %d loads; want none", n-wakes, len(rec.found)-1)
	}
	other, err := serial.Open(path)
	if err != nil {
		t.Fatalf("another program opening the port while the service refuses devices: %v", err)
	}
	other.Close()

	rec.mu.Lock()
	rec.refusing = false
	rec.mu.Unlock()
	if p, _ := portOf(w.Scan(rec), path); p.Outcome != discovery.Loaded || len(rec.found) != 2 {
		t.Errorf("the first scan once devices are taken again: port %+v, %d loads in all; want loaded, 2", p, len(rec.found))
	}
}
