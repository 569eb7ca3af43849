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

// A document a device could not read (its device-global config when it
// was added, a profile's entries on it when a session picked the profile)
// has the defaults standing for it; a POST or DELETE of one entry must not
// store those defaults over the document, whose values were acknowledged
// (closing47: handedness left stored, then a POST of torque scaling after
// a read error for a moment wrote the default handedness over it, and a
// restart came back right-handed). While the document does not read, the
// change is refused (unavailable) and changes nothing; once it reads, the
// change reads it first and applies itself to its values, so both are
// stored.
func TestAChangeOnAnUnreadDeviceDocumentKeepsItsStoredValues(t *testing.T) {
	const profile = "co.example:unread-device"
	levels := []struct {
		name string
		// a is stored before the read fails, b's entry changed after.
		a, b protocol.Entry
		doc  func(arm *Device) string
		// session opens a session whose entries a and b are (0: the
		// device's own); its pick of the profile reads the document.
		session func(t *testing.T, svc *Service) uint64
		// storedInForce: once read, the document's values are in force
		// (a session keeps the entries it had; a device has no other).
		storedInForce bool
	}{
		{
			name:          "device config",
			a:             protocol.HandednessLeft,
			b:             protocol.TorqueScaling{Enabled: false},
			doc:           func(arm *Device) string { return arm.storeName() },
			session:       func(*testing.T, *Service) uint64 { return 0 },
			storedInForce: true,
		},
		{
			name: "profile entries",
			a:    protocol.ForceGate{Gain: 0.6},
			b:    protocol.Basis{Permutation: "ZXY"},
			doc:  func(arm *Device) string { return arm.profileStoreName(profile) },
			session: func(t *testing.T, svc *Service) uint64 {
				sess, sink := open(t, svc, nil)
				exchange(t, sess, sink, `{"session":{"configure":{"profile":{"name":"`+profile+`"}}}}`)
				exchange(t, sess, sink, `{"session":{}}`)
				return sess.ID
			},
		},
	}
	changes := []struct {
		name string
		// do is the change of b's entry; stored is that entry after it.
		do     func(svc *Service, arm *Device, session uint64, b protocol.Entry) error
		stored func(b protocol.Entry) protocol.Entry
	}{
		{
			name: "POST",
			do: func(svc *Service, arm *Device, session uint64, b protocol.Entry) error {
				_, err := svc.SetEntry(arm, session, b)
				return err
			},
			stored: func(b protocol.Entry) protocol.Entry { return b },
		},
		{
			// Of the value in force, which writes all the same.
			name: "DELETE",
			do: func(svc *Service, arm *Device, session uint64, b protocol.Entry) error {
				var sessions []uint64
				if session != 0 {
					sessions = []uint64{session}
				}
				_, err := svc.ResetEntry(arm, sessions, b.Key())
				return err
			},
			stored: func(b protocol.Entry) protocol.Entry { return protocol.DefaultEntry(b.Key()) },
		},
	}
	for _, l := range levels {
		for _, ch := range changes {
			for _, c := range unreadFaults {
				t.Run(l.name+"/"+ch.name+"/"+c.name, func(t *testing.T) {
					dir := t.TempDir()
					first := startWith(t, Options{StateDir: dir})
					arm := addArm(t, first, simArm(0))
					if _, err := first.SetEntry(arm, l.session(t, first), l.a); err != nil {
						t.Fatal(err)
					}
					shutdown(t, first)

					path := filepath.Join(dir, filepath.FromSlash(l.doc(arm))+".json")
					fault := &readFault{name: l.doc(arm)}
					svc := startWith(t, Options{StateDir: dir, WrapStore: func(s Store) Store { fault.Store = s; return fault }})
					readable := c.unread(t, path, fault)
					arm = addArm(t, svc, simArm(0))
					session := l.session(t, svc)
					fault.failing.Store(false)
					if c.stillUnread {
						if err := ch.do(svc, arm, session, l.b); errCode(err) != protocol.CodeUnavailable {
							t.Errorf("a change while the document does not read answered %v, want unavailable", err)
						}
						if got, def := entry(t, svc, arm, session, l.b.Key()), protocol.DefaultEntry(l.b.Key()); got != def {
							t.Errorf("the refused change is in force: %v, want the default %v", got, def)
						}
						if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
							t.Errorf("the unreadable document was touched: %v", err)
						}
					}
					readable()
					if err := ch.do(svc, arm, session, l.b); err != nil {
						t.Fatalf("a change once the document reads: %v", err)
					}
					if got := entry(t, svc, arm, session, l.a.Key()); l.storedInForce && got != l.a {
						t.Errorf("after the change %v is in force, want the stored %v", got, l.a)
					}
					shutdown(t, svc)

					again := startWith(t, Options{StateDir: dir})
					arm = addArm(t, again, simArm(0))
					session = l.session(t, again)
					for _, want := range []protocol.Entry{l.a, ch.stored(l.b)} {
						if got := entry(t, again, arm, session, want.Key()); got != want {
							t.Errorf("after a restart %s is %v, want %v", want.Key().Name(), got, want)
						}
					}
				})
			}
		}
	}
}

// A settings.json the service could not read at its start keeps its values
// through a change of another setting, as a device's document does: read
// again first, refused while it does not read.
func TestASettingChangeOnAnUnreadSettingsDocumentKeepsItsStoredValues(t *testing.T) {
	for _, c := range unreadFaults {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			first := startWith(t, Options{StateDir: dir})
			if _, err := first.SetSetting(protocol.SettingForceScale, 0.25); err != nil {
				t.Fatal(err)
			}
			shutdown(t, first)

			path := filepath.Join(dir, "settings.json")
			fault := &readFault{name: "settings"}
			readable := c.unread(t, path, fault)
			svc := startWith(t, Options{StateDir: dir, WrapStore: func(s Store) Store { fault.Store = s; return fault }})
			fault.failing.Store(false)
			if c.stillUnread {
				if _, err := svc.SetSetting(protocol.SettingGripHook, true); errCode(err) != protocol.CodeUnavailable {
					t.Errorf("a change while settings.json does not read answered %v, want unavailable", err)
				}
				if svc.Settings().GripHook {
					t.Error("the refused change is in force")
				}
				if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
					t.Errorf("the unreadable document was touched: %v", err)
				}
			}
			readable()
			if _, err := svc.SetSetting(protocol.SettingGripHook, true); err != nil {
				t.Fatalf("a change once settings.json reads: %v", err)
			}
			if got := svc.Settings().ForceScale; got != 0.25 {
				t.Errorf("after the change force_scale %v is in force, want the stored 0.25", got)
			}
			shutdown(t, svc)

			again := startWith(t, Options{StateDir: dir})
			if got := again.Settings(); got.ForceScale != 0.25 || !got.GripHook {
				t.Errorf("after a restart the settings are %+v, want force_scale 0.25 and grip_hook on", got)
			}
		})
	}
}

// unreadFaults are the ways a stored document does not read for a moment.
var unreadFaults = []struct {
	name string
	// unread makes the document at path unreadable (fault: the service's
	// store) until readable; stillUnread says whether a change before
	// readable finds it unreadable still.
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
		// The service's read fails (EIO) and the next reads: nothing
		// refuses a write of the document then.
		name: "a read error for a moment",
		unread: func(t *testing.T, _ string, fault *readFault) func() {
			fault.failing.Store(true)
			return func() {}
		},
	},
}

// entry is entry k of session on dev (device-global for session 0) as the
// service answers it.
func entry(t *testing.T, svc *Service, dev *Device, session uint64, k protocol.Key) protocol.Entry {
	t.Helper()
	e, err := svc.Entry(dev, session, k)
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
