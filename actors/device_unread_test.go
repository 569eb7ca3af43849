package actors

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/hapticd/hapticd/protocol"
)

// A device whose stored device-global config could not be read when it
// was added runs on the defaults; a change of one of its entries must not
// store those defaults over the document, whose values were acknowledged
// (closing47: handedness left stored, then a POST of torque scaling after
// a read error for a moment wrote the default handedness over it, and a
// restart came back right-handed). While the document does not read, a
// change is refused (unavailable) and changes nothing; once it reads, the
// change reads it first, puts its values in force and applies itself to
// them, so both are stored.
func TestAChangeOnAnUnreadDeviceDocumentKeepsItsStoredValues(t *testing.T) {
	stored := protocol.HandednessLeft                // A, stored before the read fails
	posted := protocol.TorqueScaling{Enabled: false} // B, posted after
	for _, c := range []struct {
		name string
		// unread makes the document at path unreadable (fault: the
		// service's store) until readable; stillUnread says whether a
		// change before readable finds it unreadable still.
		unread      func(t *testing.T, path string, fault *readFault) (readable func())
		stillUnread bool
	}{
		{
			// The store refuses to write over it until it reads again.
			name: "a directory in its place",
			unread: func(t *testing.T, path string, _ *readFault) func() {
				_, readable := unreadableFor(t, path)
				return readable
			},
			stillUnread: true,
		},
		{
			// The addition's read fails (EIO) and the next reads: nothing
			// refuses a write of the document then.
			name: "a read error for a moment",
			unread: func(t *testing.T, _ string, fault *readFault) func() {
				fault.failing.Store(true)
				return func() {}
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			first := startWith(t, Options{StateDir: dir})
			arm := addArm(t, first, simArm(0))
			if _, err := first.SetEntry(arm, 0, stored); err != nil {
				t.Fatal(err)
			}
			shutdown(t, first)

			path := filepath.Join(dir, filepath.FromSlash(arm.storeName())+".json")
			fault := &readFault{name: arm.storeName()}
			svc := startWith(t, Options{StateDir: dir, WrapStore: func(s Store) Store { fault.Store = s; return fault }})
			readable := c.unread(t, path, fault)
			arm = addArm(t, svc, simArm(0))
			fault.failing.Store(false)
			if c.stillUnread {
				if _, err := svc.SetEntry(arm, 0, posted); errCode(err) != protocol.CodeUnavailable {
					t.Errorf("a change while the device's document does not read answered %v, want unavailable", err)
				}
				if got := entry(t, svc, arm, protocol.KeyTorqueScaling); got != protocol.DefaultEntry(protocol.KeyTorqueScaling) {
					t.Errorf("the refused change is in force: torque scaling %v", got)
				}
				if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
					t.Errorf("the unreadable document was touched: %v", err)
				}
			}
			readable()
			if _, err := svc.SetEntry(arm, 0, posted); err != nil {
				t.Fatalf("a change once the device's document reads: %v", err)
			}
			if got := entry(t, svc, arm, protocol.KeyHandedness); got != stored {
				t.Errorf("after the change handedness %v is in force, want the stored %v", got, stored)
			}
			shutdown(t, svc)

			again := startWith(t, Options{StateDir: dir})
			arm = addArm(t, again, simArm(0))
			for k, want := range map[protocol.Key]protocol.Entry{protocol.KeyHandedness: stored, protocol.KeyTorqueScaling: posted} {
				if got := entry(t, again, arm, k); got != want {
					t.Errorf("after a restart %s is %v, want %v", k.Name(), got, want)
				}
			}
		})
	}
}

// entry is a device-global entry of dev as the service answers it.
func entry(t *testing.T, svc *Service, dev *Device, k protocol.Key) protocol.Entry {
	t.Helper()
	e, err := svc.Entry(dev, 0, k)
	if err != nil {
		t.Fatalf("read %s: %v", k.Name(), err)
	}
	return e
}

// readFault is a store whose Loads of name fail as a disk's read error
// does while failing is set.
type readFault struct {
	Store
	name    string
	failing atomic.Bool
}

func (s *readFault) Load(name string, v any) (bool, error) {
	if name == s.name && s.failing.Load() {
		return false, fmt.Errorf("test store: %w", &fs.PathError{Op: "read", Path: name, Err: syscall.EIO})
	}
	return s.Store.Load(name, v)
}
