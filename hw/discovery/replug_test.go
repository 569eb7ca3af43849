package discovery_test

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/discovery"
	"github.com/hapticd/hapticd/hw/driver"
	"github.com/hapticd/hapticd/hw/emulator"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/serial"
)

// plugNode makes the file at path anew, as the kernel makes a device node
// when a device is plugged in: a new file, never the old one, even when no
// scan saw the path missing in between (it is renamed into place).
func plugNode(t *testing.T, path string) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestReplugResetsBackoff: a port that kept failing was retried after a
// doubling backoff, up to a minute, whatever happened to it meanwhile: a
// user who replugged the arm waited up to that long to see it again. Now a
// port whose node went and came back, or was replaced between two scans,
// is tried at the next scan; one that stays present and failing keeps
// backing off.
func TestReplugResetsBackoff(t *testing.T) {
	remove := func(t *testing.T, path string) {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
	chmod := func(t *testing.T, path string) {
		if err := os.Chmod(path, 0o660); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name     string
		explicit bool
		// gone runs a scan with the port's node removed first.
		gone bool
		// change is done to the node before the next scan; nil: nothing.
		change   func(t *testing.T, path string)
		wantOpen bool
	}{
		{name: "explicit port gone then back", explicit: true, gone: true, change: plugNode, wantOpen: true},
		{name: "explicit port's node replaced between scans", explicit: true, change: plugNode, wantOpen: discovery.NodeReplacementSeen},
		{name: "scanned port's node replaced between scans", change: plugNode, wantOpen: discovery.NodeReplacementSeen},
		{name: "scanned port gone then back", gone: true, change: plugNode, wantOpen: true},
		{name: "explicit port's mode fixed", explicit: true, change: chmod, wantOpen: runtime.GOOS == "linux"},
		{name: "explicit port present and failing", explicit: true, wantOpen: false},
		{name: "scanned port present and failing", wantOpen: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ttyACM0")
			plugNode(t, path)
			clock := newClock()
			opens := 0
			o := discovery.WatcherOptions{
				Enumerate:    noPorts,
				HIDEnumerate: noBoards,
				Now:          clock.Now,
				Claim: func(p string) (*serial.Claim, error) {
					opens++
					return nil, errors.Join(driver.ErrWake, errors.New("no reply"))
				},
			}
			if tc.explicit {
				o.ExplicitPorts = []string{path}
			} else {
				o.Enumerate = func() ([]serial.PortInfo, error) {
					if _, err := os.Stat(path); err != nil {
						return nil, nil
					}
					return []serial.PortInfo{{Path: path, IsUSB: true, VID: 0x16c0, PID: 0x0483, Product: "Haply Inverse3"}}, nil
				}
			}
			w := discovery.NewWatcher(o)
			rec := &recorder{}
			// Six failures a retry apart: the next try is 32 s away.
			for range 6 {
				w.Scan(rec)
				clock.Add(time.Hour)
			}
			clock.Add(-time.Hour)
			if p, _ := portOf(w.Report(), path); p.Failures != 6 || p.RetryAt.Sub(clock.now) != 32*time.Second {
				t.Fatalf("after six failures: %+v, want 6 failures and the next try in 32 s", p)
			}
			if tc.gone {
				remove(t, path)
				clock.Add(time.Second)
				w.Scan(rec)
			}
			if tc.change != nil {
				tc.change(t, path)
			}
			before := opens
			clock.Add(time.Second)
			r := w.Scan(rec)
			p, _ := portOf(r, path)
			if tried := opens > before; tried != tc.wantOpen {
				t.Errorf("one scan after: port tried %v, want %v (report %+v)", tried, tc.wantOpen, p)
			}
			if p.Outcome != discovery.Failed || p.Reason == "" {
				t.Errorf("report %+v, want failed with its reason", p)
			}
		})
	}
}

// TestReplugCyclesComeBackAtOnce: an arm on an explicit --hw-port (a
// by-id link, which udev removes on unplug and makes again on plug)
// unplugged and plugged back in five times within a minute comes back at
// the first or second scan after each plug. It used to wait its doubling
// backoff (1, 2, 4, 8, 16 s) because each loss counted as a failure of a
// port that had never gone.
func TestReplugCyclesComeBackAtOnce(t *testing.T) {
	clock := newClock()
	link := filepath.Join(t.TempDir(), "usb-Teensyduino_USB_Serial_12345-if00")
	w := discovery.NewWatcher(discovery.WatcherOptions{
		ExplicitPorts: []string{link},
		Enumerate:     noPorts,
		HIDEnumerate:  noBoards,
		Now:           clock.Now,
		Arm:           driver.ArmOptions{ReplyTimeout: 500 * time.Millisecond},
	})
	rec := &recorder{}
	defer rec.closeAll()
	for i := range 5 {
		e, pts, err := emulator.StartPTY(emulator.Options{Index: 4})
		if err != nil {
			hwtest.SkipIfUnsupported(t, err)
			t.Fatal(err)
		}
		if err := os.Symlink(pts, link); err != nil {
			t.Fatal(err)
		}
		for scan := 0; len(rec.found) < i+1; scan++ {
			if scan == 2 {
				p, _ := portOf(w.Report(), link)
				e.Close()
				t.Fatalf("plug %d: not loaded two scans (a second apart) after the plug; report %+v", i+1, p)
			}
			clock.Add(time.Second)
			w.Scan(rec)
		}
		d := rec.found[i]
		if err := d.Exchange(&hw.Command{}, &hw.State{}); err != nil {
			t.Fatalf("plug %d: exchange: %v", i+1, err)
		}
		// Pulled out: the node and its link go, the loop fails.
		e.Unplug()
		if err := os.Remove(link); err != nil {
			t.Fatal(err)
		}
		hwtest.Eventually(t, 10*time.Second, "the unplug seen by the driver", func() bool {
			return d.Exchange(&hw.Command{}, &hw.State{}) != nil
		})
		w.Lost(link)
		e.Close()
		clock.Add(time.Second)
		w.Scan(rec)
	}
}
