package actors

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/hapticd/hapticd/protocol"
)

// A session that could not read its profile's document (session level, or
// its entries on a device) and then changes one entry is never answered as
// if that change were stored: the defaults it has must not be queued in the
// document's place, where the profile's next session, which can read it,
// would take them for the stored document (review34: lease 100 for the
// stored 250, damping 0 for the stored 2, and the change itself refused by
// the store for good). Session level: the change is in force for the
// session with a warning that it is not stored. Device level: refused,
// changing nothing, as a change the state directory cannot take is.
func TestAChangeOnAnUnreadProfileDocumentIsNeverTakenForTheStoredOne(t *testing.T) {
	const pick = `{"session":{"configure":{"profile":{"name":"co.example:unread"}}}}`
	for _, c := range []struct {
		name string
		// store configures the profile's stored values; doc is the
		// document's name in the profile's folder.
		store, doc string
		// change is session A's change while the document is unreadable;
		// answered checks A's answer.
		change   string
		answered func(t *testing.T, f testFrame)
		// stored checks what session B, which can read the document, has.
		stored func(t *testing.T, b *Session, arm *Device)
	}{
		{
			name:   "session level",
			store:  `{"session":{"configure":{"basis":{"permutation":"-YXZ"},"lease":{"ms":250}}}}`,
			doc:    "session.json",
			change: `{"session":{"configure":{"basis":{"permutation":"ZXY"}}}}`,
			answered: func(t *testing.T, f testFrame) {
				if codes := warningCodes(f); !slices.Contains(codes, string(protocol.CodeUnavailable)) {
					t.Errorf("A's change answered with warnings %v, want one saying it is not stored: %s", codes, f.text)
				}
			},
			stored: func(t *testing.T, b *Session, _ *Device) {
				if got := b.snap.Load().leaseMs; got != 250 {
					t.Errorf("B has lease %d ms, want the stored 250", got)
				}
			},
		},
		{
			name:   "device level",
			store:  `{"arm3":[{"device_id":"%s","configure":{"damping":{"scalar":2},"force_gate":{"gain":0.6}}}]}`,
			doc:    "arm3-%s.json",
			change: `{"arm3":[{"device_id":"%s","configure":{"force_gate":{"gain":0.1}}}]}`,
			answered: func(t *testing.T, f testFrame) {
				if codes := f.errorCodes(); !slices.Contains(codes, string(protocol.CodeUnavailable)) {
					t.Errorf("A's change answered with errors %v, want unavailable: %s", codes, f.text)
				}
			},
			stored: func(t *testing.T, b *Session, arm *Device) {
				d := arm.ViewFor(b.ID).Config.Session.Damping
				if d.Scalar == nil || *d.Scalar != 2 {
					t.Errorf("B has damping scalar %v, want the stored 2", d.ScalarOrZero())
				}
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := storeProfileValues(t, c.name == "device level", pick, c.store)
			svc, arm, withArm, s0 := p.svc, p.arm, p.withArm, p.sess
			s0.Close(protocol.CloseClientClosed)
			deadline := time.Now().Add(10 * time.Second)
			for len(svc.Sessions()) != 0 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			path := filepath.Join(p.dir, filepath.FromSlash(profileFolder("co.example:unread")), withArm(c.doc))
			good, readable := unreadableFor(t, path)
			a, sinkA := open(t, svc, nil)
			exchange(t, a, sinkA, pick)
			c.answered(t, exchange(t, a, sinkA, withArm(c.change)))
			readable()
			b, sinkB := open(t, svc, nil)
			exchange(t, b, sinkB, pick)
			exchange(t, b, sinkB, `{"session":{}}`)
			c.stored(t, b, arm)
			if err := svc.writeBehind.Flush(); err != nil {
				t.Errorf("flush after the document read again: %v", err)
			}
			// Its entries as stored (B's use dates it anew).
			onDisk, _ := os.ReadFile(path)
			if got, want := undated(t, onDisk), undated(t, good); !reflect.DeepEqual(got, want) {
				t.Errorf("the stored document changed: %s, was %s", onDisk, good)
			}
		})
	}
}

// warningCodes lists the codes of the frame's warnings.
func warningCodes(f testFrame) []string {
	var out []string
	list, _ := f.raw["warnings"].([]any)
	for _, e := range list {
		out = append(out, fmt.Sprint(e.(map[string]any)["code"]))
	}
	return out
}

// undated is a stored document's entries without its last use.
func undated(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("stored document %s: %v", b, err)
	}
	delete(m, "used_at")
	return m
}

// unreadableFor makes the stored document at path unreadable (a folder in
// the file's place) until readable puts its content, good, back.
func unreadableFor(t *testing.T, path string) (good []byte, readable func()) {
	t.Helper()
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	return good, func() {
		t.Helper()
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, good, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A session that picks a profile another session holds takes the held
// document and does not read the file: a read failing for a moment there
// had the store refuse every later write of the document until a restart,
// so the holder's next change, acknowledged with no warning, was never
// stored though the file read again (lease 300 acknowledged, 250 on disk
// and after a restart; the shutdown's flush failed). The device level takes
// its held document so already (deviceCore.attach); it is here so that it
// stays so.
func TestAChangeOfAHeldProfileDocumentIsStoredAfterAnotherSessionsReadFailed(t *testing.T) {
	const pick = `{"session":{"configure":{"profile":{"name":"co.example:held"}}}}`
	for _, c := range []struct {
		name string
		// store, change: the holder's configure before and after the
		// other session's pick; doc is the document in the profile's
		// folder; want is the changed entry as the disk must hold it.
		store, change, doc string
		want               func(doc map[string]any) bool
	}{
		{
			name:   "session level",
			store:  `{"session":{"configure":{"lease":{"ms":250}}}}`,
			change: `{"session":{"configure":{"lease":{"ms":300}}}}`,
			doc:    "session.json",
			want:   func(doc map[string]any) bool { return doc["lease_ms"] == 300.0 },
		},
		{
			name:   "device level",
			store:  `{"arm3":[{"device_id":"%s","configure":{"damping":{"scalar":2}}}]}`,
			change: `{"arm3":[{"device_id":"%s","configure":{"damping":{"scalar":3}}}]}`,
			doc:    "arm3-%s.json",
			want: func(doc map[string]any) bool {
				d, _ := doc["damping"].(map[string]any)
				return d["scalar"] == 3.0
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := storeProfileValues(t, c.name == "device level", pick, c.store)
			svc, withArm, a, sinkA := p.svc, p.withArm, p.sess, p.sink
			path := filepath.Join(p.dir, filepath.FromSlash(profileFolder("co.example:held")), withArm(c.doc))
			_, readable := unreadableFor(t, path)
			other, sinkOther := open(t, svc, nil)
			if f := exchange(t, other, sinkOther, pick); len(f.errorCodes()) != 0 || len(warningCodes(f)) != 0 {
				t.Errorf("the other session's pick answered with errors %v, warnings %v: it has the held document", f.errorCodes(), warningCodes(f))
			}
			readable()
			f := exchange(t, a, sinkA, withArm(c.change))
			if len(f.errorCodes()) != 0 || len(warningCodes(f)) != 0 {
				t.Fatalf("the holder's change answered with errors %v, warnings %v", f.errorCodes(), warningCodes(f))
			}
			if err := svc.writeBehind.Flush(); err != nil {
				t.Errorf("the holder's acknowledged change was not stored: %v", err)
			}
			onDisk, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var doc map[string]any
			if err := json.Unmarshal(onDisk, &doc); err != nil {
				t.Fatalf("stored document %s: %v", onDisk, err)
			}
			if !c.want(doc) {
				t.Errorf("on disk %s, want the holder's change", onDisk)
			}
		})
	}
}

// storedProfileValues is a service whose state directory (dir) holds a profile's
// values, stored by sess, which still has the profile.
type storedProfileValues struct {
	dir  string
	svc  *Service
	arm  *Device
	sess *Session
	sink *recSink
	// withArm puts the arm's id in a device-level message or document
	// name (a session-level one has no place for it).
	withArm func(string) string
}

// storeProfileValues starts a service with an arm, and a session that
// picks the profile (pick) and stores values (store, its configure) there.
func storeProfileValues(t *testing.T, deviceLevel bool, pick, store string) storedProfileValues {
	t.Helper()
	p := storedProfileValues{dir: t.TempDir()}
	p.svc = startWith(t, Options{StateDir: p.dir})
	p.arm = addArm(t, p.svc, simArm(0))
	p.withArm = func(s string) string {
		if deviceLevel {
			return fmt.Sprintf(s, p.arm.ID)
		}
		return s
	}
	p.sess, p.sink = open(t, p.svc, nil)
	exchange(t, p.sess, p.sink, pick)
	if f := exchange(t, p.sess, p.sink, p.withArm(store)); len(f.errorCodes()) != 0 {
		t.Fatalf("storing the profile's values: %v", f.errorCodes())
	}
	if err := p.svc.writeBehind.Flush(); err != nil {
		t.Fatal(err)
	}
	return p
}

// A corrupt session document of a profile is moved aside, and the defaults
// stand for it until the next change, which is stored as any change is:
// there is nothing left on disk to write over (tourcfg: the session's later
// lease was refused "until the state directory reads", which it did, and
// was lost at the restart).
func TestAChangeAfterACorruptProfileDocumentMovedAsideIsStored(t *testing.T) {
	const pick = `{"session":{"configure":{"profile":{"name":"co.example:corrupt"}}}}`
	p := storeProfileValues(t, false, pick, `{"session":{"configure":{"lease":{"ms":300}}}}`)
	svc := p.svc
	p.sess.Close(protocol.CloseClientClosed)
	deadline := time.Now().Add(10 * time.Second)
	for len(svc.Sessions()) != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	path := filepath.Join(p.dir, filepath.FromSlash(profileFolder("co.example:corrupt")), "session.json")
	if err := os.WriteFile(path, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, sinkA := open(t, svc, nil)
	if codes := warningCodes(exchange(t, a, sinkA, pick)); !slices.Contains(codes, string(protocol.CodeInternal)) {
		t.Errorf("the pick of a corrupt profile warned %v, want internal", codes)
	}
	if f := exchange(t, a, sinkA, `{"session":{"configure":{"lease":{"ms":250}}}}`); len(warningCodes(f)) != 0 || len(f.errorCodes()) != 0 {
		t.Fatalf("a change after the corrupt document was moved aside: %s", f.text)
	}
	if err := svc.writeBehind.Flush(); err != nil {
		t.Fatal(err)
	}
	b, sinkB := open(t, svc, nil)
	exchange(t, b, sinkB, pick)
	exchange(t, b, sinkB, `{"session":{}}`)
	if got := b.snap.Load().leaseMs; got != 250 {
		t.Errorf("the profile's next session has lease %d ms, want the 250 stored after the corrupt document", got)
	}
}
