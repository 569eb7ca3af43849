package actors

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors/store"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/space"
)

// A configure is written behind (within a second), but it is acknowledged
// at once: the next session to pick the profile within that second (the
// same app reconnecting, a second app of the profile) must get it, as it
// would a second later, not the older document still on disk.
func TestNextSessionOfAProfileGetsAConfigureNotYetWritten(t *testing.T) {
	svc := startWith(t, Options{StateDir: t.TempDir()})
	arm := addArm(t, svc, simArm(0))
	const pick = `{"session":{"configure":{"profile":{"name":"co.example:written-behind"}}}}`

	a, sinkA := open(t, svc, nil)
	if f := exchange(t, a, sinkA, pick); len(f.errorCodes()) != 0 {
		t.Fatalf("pick: %v", f.errorCodes())
	}
	// One durable write puts a document on disk, then the configure
	// changes it behind.
	if _, err := svc.SetEntry(arm, a.ID, protocol.ForceGate{Gain: 0.5}); err != nil {
		t.Fatal(err)
	}
	msg := fmt.Sprintf(`{"session":{"configure":{"basis":{"permutation":"-YXZ"},"lease":{"ms":250}}},"arm3":[{"device_id":%q,"configure":{"damping":{"scalar":4}}}]}`, arm.ID)
	if f := exchange(t, a, sinkA, msg); len(f.errorCodes()) != 0 {
		t.Fatalf("configure: %v", f.errorCodes())
	}

	b, sinkB := open(t, svc, nil)
	if f := exchange(t, b, sinkB, pick); len(f.errorCodes()) != 0 {
		t.Fatalf("pick: %v", f.errorCodes())
	}
	damping, err := svc.Entry(arm, b.ID, protocol.KeyDamping)
	if err != nil {
		t.Fatal(err)
	}
	gate, err := svc.Entry(arm, b.ID, protocol.KeyForceGate)
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := damping.(protocol.Damping); !ok || d.Scalar == nil || *d.Scalar != 4 {
		t.Errorf("the profile's next session has damping %+v, want the acknowledged scalar 4", damping)
	}
	if gate != (protocol.ForceGate{Gain: 0.5}) {
		t.Errorf("the profile's next session has force_gate %+v, want 0.5", gate)
	}
	if got := b.Basis().Permutation; got != "-YXZ" {
		t.Errorf("the profile's next session has the session basis %s, want the acknowledged -YXZ", got)
	}
}

// A POST or DELETE answered 200 is on disk, even when it changes nothing
// in memory because a configure set the same value a moment before: that
// configure is still only written behind, and a crash now would lose what
// the POST acknowledged as durable.
func TestPostOfAValueWrittenBehindIsDurable(t *testing.T) {
	for _, c := range []struct {
		name      string
		before    func(t *testing.T, svc *Service, arm *Device, sess uint64) // durable state first
		configure string                                                     // the same change, written behind
		http      func(svc *Service, arm *Device, sess uint64) error
		want      protocol.ForceGate // on disk right after the answer
	}{
		{"POST the value a configure just set", nil, `{"force_gate":{"gain":0.75}}`,
			func(svc *Service, arm *Device, sess uint64) error {
				_, err := svc.SetEntry(arm, sess, protocol.ForceGate{Gain: 0.75})
				return err
			}, protocol.ForceGate{Gain: 0.75}},
		{"DELETE the entry a configure just reset",
			func(t *testing.T, svc *Service, arm *Device, sess uint64) {
				if _, err := svc.SetEntry(arm, sess, protocol.ForceGate{Gain: 0.75}); err != nil {
					t.Fatal(err)
				}
			}, `{"force_gate":{"gain":0.3}}`,
			func(svc *Service, arm *Device, sess uint64) error {
				_, err := svc.ResetEntry(arm, []uint64{sess}, protocol.KeyForceGate)
				return err
			}, protocol.DefaultEntry(protocol.KeyForceGate).(protocol.ForceGate)},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			svc := startWith(t, Options{StateDir: dir})
			arm := addArm(t, svc, simArm(0))
			sess, sink := open(t, svc, nil)
			const profile = "co.example:post-after-configure"
			if f := exchange(t, sess, sink, `{"session":{"configure":{"profile":{"name":"`+profile+`"}}}}`); len(f.errorCodes()) != 0 {
				t.Fatalf("pick: %v", f.errorCodes())
			}
			if c.before != nil {
				c.before(t, svc, arm, sess.ID)
			}
			if f := exchange(t, sess, sink, fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":%s}]}`, arm.ID, c.configure)); len(f.errorCodes()) != 0 {
				t.Fatalf("configure: %v", f.errorCodes())
			}
			if err := c.http(svc, arm, sess.ID); err != nil {
				t.Fatal(err)
			}
			// What a restart after SIGKILL now would read: the disk, before
			// the write-behind's second is over.
			disk, err := store.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			var stored protocol.SessionConfig
			found, err := disk.Load(arm.profileStoreName(profile), &stored)
			if err != nil {
				t.Fatal(err)
			}
			if !found || stored.ForceGate != c.want {
				t.Errorf("right after the answer the disk has force_gate %+v (found %v), want %+v", stored.ForceGate, found, c.want)
			}
		})
	}
}

// A profile whose stored entries are corrupt (moved aside) or unreadable
// gives the session defaults, as the log and docs/protocol.md say, not the
// entries of the profile it had before.
func TestBadProfileDocumentGivesDefaults(t *testing.T) {
	dir := t.TempDir()
	svc := startWith(t, Options{StateDir: dir})
	arm := addArm(t, svc, simArm(0))
	sess, sink := open(t, svc, nil)
	pick := func(name string) {
		t.Helper()
		if f := exchange(t, sess, sink, `{"session":{"configure":{"profile":{"name":"`+name+`"}}}}`); len(f.errorCodes()) != 0 {
			t.Fatalf("pick %s: %v", name, f.errorCodes())
		}
	}
	pick("co.example:first")
	if _, err := svc.SetEntry(arm, sess.ID, protocol.ForceGate{Gain: 0.75}); err != nil {
		t.Fatal(err)
	}
	const bad = "co.example:torn"
	path := filepath.Join(dir, filepath.FromSlash(arm.profileStoreName(bad))+".json")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"force_gate": {"gain": 0.`), 0o600); err != nil {
		t.Fatal(err)
	}
	pick(bad)
	gate, err := svc.Entry(arm, sess.ID, protocol.KeyForceGate)
	if err != nil {
		t.Fatal(err)
	}
	if want := protocol.DefaultEntry(protocol.KeyForceGate); gate != want {
		t.Errorf("after picking a profile whose document is torn, force_gate is %+v, want the default %+v", gate, want)
	}
}

// A profile an older build saved with a mount scale the wire now refuses
// (outside 1e-6..1e6, accepted while the rule was "non-zero") is read as
// saved, not moved aside as corrupt with every other entry of the arm; a
// stored scale with no finite inverse is rejected, alone: the placement
// takes its default, the other entries are kept, and the file is kept
// aside as read (.rejected-).
func TestProfileWithAnOlderBuildsMountScaleKeepsItsEntries(t *testing.T) {
	for _, tc := range []struct {
		scale float64
		kept  bool
	}{{1e9, true}, {1e-7, true}, {1e-320, false}} {
		t.Run(fmt.Sprint(tc.scale), func(t *testing.T) {
			dir := t.TempDir()
			svc := startWith(t, Options{StateDir: dir})
			arm := addArm(t, svc, simArm(0))
			const name = "co.example:older-build"
			cfg := protocol.DefaultSessionConfig()
			cfg.Preset = protocol.PresetCustom
			cfg.Mount = space.Transform{Rotation: space.IdentityQuat(), Scale: space.Vec3{X: tc.scale, Y: 1, Z: 1}}
			cfg.ForceGate = protocol.ForceGate{Gain: 0.5}
			doc, err := json.Marshal(cfg)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, filepath.FromSlash(arm.profileStoreName(name))+".json")
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, doc, 0o600); err != nil {
				t.Fatal(err)
			}
			sess, sink := open(t, svc, nil)
			exchange(t, sess, sink, `{"session":{"configure":{"profile":{"name":"`+name+`"}}}}`)
			gate, err := svc.Entry(arm, sess.ID, protocol.KeyForceGate)
			if err != nil {
				t.Fatal(err)
			}
			aside, _ := filepath.Glob(path + ".corrupt-*")
			if tc.kept {
				if gate != (protocol.ForceGate{Gain: 0.5}) {
					t.Errorf("force_gate %+v, want the stored gain 0.5", gate)
				}
				mount, err := svc.Entry(arm, sess.ID, protocol.KeyMount)
				if err != nil {
					t.Fatal(err)
				}
				if m, ok := mount.(protocol.Mount); !ok || m.Transform.Scale.X != tc.scale {
					t.Errorf("mount %+v, want the stored scale x %g", mount, tc.scale)
				}
				if len(aside) != 0 {
					t.Errorf("moved aside as corrupt: %v", aside)
				}
				return
			}
			kept, _ := filepath.Glob(path + ".rejected-*")
			if len(kept) != 1 || len(aside) != 0 {
				t.Errorf("a stored scale of %g (no finite inverse): kept %v, moved aside %v; want one copy kept, the file in place", tc.scale, kept, aside)
			}
			if gate != (protocol.ForceGate{Gain: 0.5}) {
				t.Errorf("force_gate %+v beside a rejected mount, want the stored gain 0.5", gate)
			}
			if preset, err := svc.Entry(arm, sess.ID, protocol.KeyPreset); err != nil || preset != protocol.DefaultEntry(protocol.KeyPreset) {
				t.Errorf("preset %+v %v beside a rejected mount, want the default placement", preset, err)
			}
		})
	}
}

// Two sessions of one profile configuring one arm at once, written behind:
// the stored document has the last value of each entry, whichever session
// set it, and each entry whole. Session 0 alone sets force_gate, session 1
// alone the mount (the placement: preset and mount, one entry), and both
// set damping (scalar and vector, one entry): a stored damping whose
// scalar and vector are of two messages is a mix.
func TestTwoSessionsOfAProfileStoreEachEntryWhole(t *testing.T) {
	dir := t.TempDir()
	svc := startWith(t, Options{StateDir: dir})
	arm := addArm(t, svc, simArm(0))
	const profile = "co.example:two-writers"
	const n = 200
	// The damping of session k's message i, in both its scalar and its
	// vector's x.
	damping := func(k, i int) float64 { return float64(i)/20 + float64(k)/1000 }
	msg := func(k, i int) string {
		own := fmt.Sprintf(`"force_gate":{"gain":%g}`, float64(i)/400)
		if k == 1 {
			own = fmt.Sprintf(`"mount":{"transform":{"position":{"x":%g,"y":0,"z":0},"rotation":{"w":1,"x":0,"y":0,"z":0},"scale":{"x":1,"y":1,"z":1}}}`, float64(i)/1000)
		}
		d := damping(k, i)
		return fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":{"damping":{"scalar":%g,"vector":{"x":%g,"y":0,"z":0}},%s}}]}`, arm.ID, d, d, own)
	}
	type writer struct {
		sess *Session
		sink *recSink
	}
	var ws [2]writer
	for k := range ws {
		sess, sink := open(t, svc, nil)
		if f := exchange(t, sess, sink, `{"session":{"configure":{"profile":{"name":"`+profile+`"}}}}`); len(f.errorCodes()) != 0 {
			t.Fatalf("pick: %v", f.errorCodes())
		}
		if f := exchange(t, sess, sink, msg(k, 0)); len(f.errorCodes()) != 0 {
			t.Fatalf("configure: %v", f.errorCodes())
		}
		ws[k] = writer{sess, sink}
	}
	done := make(chan struct{}, len(ws))
	for k, w := range ws {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 1; i <= n; i++ {
				w.sess.Deliver([]byte(msg(k, i)), 0)
				<-w.sink.frames
			}
		}()
	}
	for range ws {
		<-done
	}
	// A frame the session pushed on its own may have stood for a reply:
	// wait until the device has both sessions' last configure.
	for k, w := range ws {
		hwtest.EventuallyNil(t, patience, "the last configure applied", func() error {
			d, err := svc.Entry(arm, w.sess.ID, protocol.KeyDamping)
			if want := damping(k, n); err != nil || d.(protocol.Damping).ScalarOrZero() != want {
				return fmt.Errorf("session %d has damping %v (%v), want scalar %g", k, d.(protocol.Damping).ScalarOrZero(), err, want)
			}
			return nil
		})
	}
	if err := svc.writeBehind.Flush(); err != nil {
		t.Fatal(err)
	}
	disk, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var stored protocol.SessionConfig
	if found, err := disk.Load(arm.profileStoreName(profile), &stored); !found || err != nil {
		t.Fatalf("stored document: %v, %v", found, err)
	}
	if want := float64(n) / 400; stored.ForceGate.Gain != want {
		t.Errorf("stored force_gate %v, want session 0's last %v", stored.ForceGate.Gain, want)
	}
	if want := float64(n) / 1000; stored.Preset != protocol.PresetCustom || stored.Mount.Position.X != want {
		t.Errorf("stored placement %q, mount x %v; want session 1's last: custom, %v", stored.Preset, stored.Mount.Position.X, want)
	}
	d := stored.Damping.ScalarOrZero()
	if v := stored.Damping.VectorOrZero(); v.X != d || (d != damping(0, n) && d != damping(1, n)) {
		t.Errorf("stored damping scalar %v, vector x %v: not one session's last configure, whole", d, v.X)
	}
}

// A session that picks a profile whose stored session document (basis,
// lease) is corrupt or cannot be read runs on defaults, as docs/protocol.md
// says, not on the basis and lease it had before (its next change would
// store those as the profile's), and its frame tells it so with a warning:
// the client asked for what the profile holds and does not get it. The bad
// file is kept: a corrupt one moved aside, bytes intact; an unreadable one
// left in place and never written over.
func TestBadProfileSessionDocumentIsReported(t *testing.T) {
	for _, c := range []struct {
		name  string
		plant func(t *testing.T, path string)
		check func(t *testing.T, path string)
	}{
		{"torn", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte(`{"basis": {"permu`), 0o600); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, path string) {
			aside, _ := filepath.Glob(path + ".corrupt-*")
			if len(aside) != 1 {
				t.Fatalf("moved-aside files %v, want one", aside)
			}
			if b, err := os.ReadFile(aside[0]); err != nil || string(b) != `{"basis": {"permu` {
				t.Errorf("%s = %q, %v; want the torn bytes", aside[0], b, err)
			}
		}},
		{"a directory in its place", func(t *testing.T, path string) {
			if err := os.MkdirAll(filepath.Join(path, "kept"), 0o700); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, path string) {
			if _, err := os.Stat(filepath.Join(path, "kept")); err != nil {
				t.Errorf("the directory in the session document's place was written over: %v", err)
			}
			// Gone, the basis written behind can be stored at shutdown.
			if err := os.RemoveAll(path); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			svc := startWith(t, Options{StateDir: dir})
			addArm(t, svc, simArm(0))
			const profile = "co.example:bad-session"
			path := filepath.Join(dir, filepath.FromSlash(profileFolder(profile))+"/session.json")
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			c.plant(t, path)
			sess, sink := open(t, svc, nil)
			if got := exchangeErrors(t, sess, sink, `{"session":{"configure":{"basis":{"permutation":"ZXY"},"lease":{"ms":250}}}}`); len(got.errors)+len(got.warnings) != 0 {
				t.Fatalf("basis and lease: %+v", got)
			}
			f := exchange(t, sess, sink, `{"session":{"configure":{"profile":{"name":"`+profile+`"}}}}`)
			if codes := f.errorCodes(); len(codes) != 0 {
				t.Fatalf("picking the profile: errors %v", codes)
			}
			warned := false
			list, _ := f.raw["warnings"].([]any)
			for _, w := range list {
				if m := w.(map[string]any); m["code"] == string(protocol.CodeInternal) && m["path"] == "session.configure.profile" {
					warned = true
				}
			}
			if !warned {
				t.Errorf("the frame that picked a profile whose session document is bad warns %v; want internal at session.configure.profile", f.raw["warnings"])
			}
			if b := sess.Basis(); b.Permutation != protocol.IdentityBasis {
				t.Errorf("basis %q after picking the profile, want the default %q (the session's own is not the profile's)", b.Permutation, protocol.IdentityBasis)
			}
			if got, want := sess.snap.Load().leaseMs, svc.opts.DefaultLeaseMs; got != want {
				t.Errorf("lease %d ms after picking the profile, want the default %d", got, want)
			}
			// A later change is in force; the bad file stays as the store's
			// rule says.
			if got := exchangeErrors(t, sess, sink, `{"session":{"configure":{"basis":{"permutation":"YXZ"}}}}`); len(got.errors) != 0 {
				t.Fatalf("basis after the pick: %+v", got)
			}
			_ = svc.writeBehind.Flush()
			c.check(t, path)
		})
	}
}

// A profile whose stored entries on a device are corrupt or unreadable
// gives that device defaults (TestBadProfileDocumentGivesDefaults), and the
// frame answering the pick says so with a warning naming the device: the
// client asked for the profile's entries and does not have them.
func TestBadProfileDocumentIsReported(t *testing.T) {
	for _, c := range []struct {
		name  string
		plant func(t *testing.T, path string)
	}{
		{"torn", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte(`{"force_gate": {"gain": 0.`), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"a directory in its place", func(t *testing.T, path string) {
			if err := os.MkdirAll(filepath.Join(path, "kept"), 0o700); err != nil {
				t.Fatal(err)
			}
			// Gone before shutdown, or its flush would fail the test.
			t.Cleanup(func() { os.RemoveAll(path) })
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			svc := startWith(t, Options{StateDir: dir})
			arm := addArm(t, svc, simArm(0))
			good := addArm(t, svc, simArm(1))
			const profile = "co.example:bad-entries"
			path := filepath.Join(dir, filepath.FromSlash(arm.profileStoreName(profile))+".json")
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			c.plant(t, path)
			sess, sink := open(t, svc, nil)
			f := exchange(t, sess, sink, `{"session":{"configure":{"profile":{"name":"`+profile+`"}}}}`)
			if codes := f.errorCodes(); len(codes) != 0 {
				t.Fatalf("picking the profile: errors %v", codes)
			}
			var about []string
			list, _ := f.raw["warnings"].([]any)
			for _, w := range list {
				if m := w.(map[string]any); m["code"] == string(protocol.CodeInternal) {
					about = append(about, fmt.Sprint(m["message"]))
				}
			}
			if len(about) != 1 || !strings.Contains(about[0], arm.ID) {
				t.Fatalf("internal warnings %q after picking a profile whose entries on %s are bad; want one naming it (and none for %s)", about, arm.ID, good.ID)
			}
			// Told once: the next message does not repeat it.
			if got := exchangeErrors(t, sess, sink, `{"session":{"configure":{"basis":{"permutation":"ZXY"}}}}`); len(got.warnings) != 0 {
				t.Errorf("the next message warns %v again", got.warnings)
			}
		})
	}
}

// A POST answered 200 is on disk: one that sets the value the service runs
// on because its document could not be read (a directory in its place: no
// permission, in the field) changes nothing in memory, but the document on
// disk still holds the earlier values, which a restart that can read it
// brings back. It must be refused, not answered 200: the document is read
// again first, and still does not read (unavailable).
func TestUnchangedPostOverAnUnreadableDocumentIsRefused(t *testing.T) {
	arm := simArm(0)
	id := arm.Info().ID
	const profile = "co.example:unread"
	for _, c := range []struct {
		name string
		doc  string // the document planted as a directory
		post func(t *testing.T, svc *Service, dev *Device) error
	}{
		{"settings", "settings", func(t *testing.T, svc *Service, _ *Device) error {
			def := protocol.DefaultSettings()
			_, err := svc.SetSetting(protocol.SettingForceScale, def.Get(protocol.SettingForceScale))
			return err
		}},
		{"device config", storeName(protocol.TypeArm, id), func(t *testing.T, svc *Service, dev *Device) error {
			def := protocol.DefaultDeviceConfig()
			_, err := svc.SetEntry(dev, 0, def.Get(protocol.KeyHandedness))
			return err
		}},
		{"profile entries", profileFolder(profile) + "/" + protocol.TypeArm.Key() + "-" + id, func(t *testing.T, svc *Service, dev *Device) error {
			sess, sink := open(t, svc, nil)
			exchange(t, sess, sink, `{"session":{"configure":{"profile":{"name":"`+profile+`"}}}}`)
			_, err := svc.SetEntry(dev, sess.ID, protocol.DefaultEntry(protocol.KeyForceGate))
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, filepath.FromSlash(c.doc)+".json")
			if err := os.MkdirAll(filepath.Join(path, "kept"), 0o700); err != nil {
				t.Fatal(err)
			}
			// Gone before shutdown, whose flush would otherwise fail the test.
			t.Cleanup(func() { os.RemoveAll(path) })
			svc := startWith(t, Options{StateDir: dir})
			dev := addArm(t, svc, simArm(0))
			if err := c.post(t, svc, dev); errCode(err) != protocol.CodeUnavailable {
				t.Errorf("a POST of the value in force over %s, which could not be read: %v; want unavailable (a 200 promises it is on disk)", c.doc, err)
			}
			if _, err := os.Stat(filepath.Join(path, "kept")); err != nil {
				t.Errorf("the directory in %s's place was touched: %v", c.doc, err)
			}
		})
	}
}

// A device that connects while a session is on a profile, or while it
// picks one, reads the profile's entries on it; when they cannot be read,
// the session has the defaults on that device and its client is told so in
// a frame soon after, without changing its profile or basis again (as it is
// told at the pick). Only once: the client's next profile change does not
// repeat it.
func TestProfileUnreadableOnADeviceThatConnectsLaterIsReported(t *testing.T) {
	const profile = "co.example:late-device"
	pickMsg := `{"session":{"configure":{"profile":{"name":"` + profile + `"}}}}`
	for _, during := range []bool{false, true} {
		name := map[bool]string{false: "after the pick", true: "during the pick"}[during]
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			// During the pick: the pick's read of the profile's session
			// document waits until the device is added.
			entered, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			o := Options{StateDir: dir}
			if during {
				o.WrapStore = func(s Store) Store {
					return gatedLoad{Store: s, name: profileFolder(profile) + "/session", gate: func() {
						once.Do(func() { close(entered); <-release })
					}}
				}
			}
			svc := startWith(t, o)
			addArm(t, svc, simArm(0))
			late := simArm(1)
			path := filepath.Join(dir, filepath.FromSlash(profileFolder(profile)+"/arm3-"+late.Info().ID)+".json")
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(`{"force_gate": {"gain": 0.`), 0o600); err != nil {
				t.Fatal(err)
			}
			sess, sink := open(t, svc, nil)
			warnedAbout := func(f testFrame, id string) bool {
				list, _ := f.raw["warnings"].([]any)
				for _, w := range list {
					m := w.(map[string]any)
					if m["code"] == string(protocol.CodeInternal) && m["path"] == "session.configure.profile" && strings.Contains(fmt.Sprint(m["message"]), id) {
						return true
					}
				}
				return false
			}
			var arm *Device
			told := 0
			if during {
				picked := make(chan []byte, 1)
				go func() {
					sess.Deliver([]byte(pickMsg), 0)
					picked <- <-sink.frames
				}()
				<-entered
				arm = addArm(t, svc, late)
				close(release)
				var f testFrame
				if err := json.Unmarshal(<-picked, &f.raw); err != nil {
					t.Fatal(err)
				}
				if warnedAbout(f, arm.ID) {
					told++
				}
			} else {
				if f := exchange(t, sess, sink, pickMsg); len(f.errorCodes()) != 0 || warnedAbout(f, late.Info().ID) {
					t.Fatalf("pick: errors %v, warnings %v; want neither (the arm is not connected yet)", f.errorCodes(), f.raw["warnings"])
				}
				arm = addArm(t, svc, late)
			}
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && told == 0; {
				if f := exchange(t, sess, sink, `{}`); warnedAbout(f, arm.ID) {
					told++
				}
				time.Sleep(5 * time.Millisecond)
			}
			if told == 0 {
				t.Fatalf("no frame within 10 s of arm %s connecting warns that the profile's entries on it could not be read", arm.ID)
			}
			for _, msg := range []string{`{}`, `{"session":{"configure":{"profile":{"name":"co.example:other"}}}}`, `{}`} {
				if f := exchange(t, sess, sink, msg); warnedAbout(f, arm.ID) {
					t.Fatalf("the warning about arm %s came again, answering %s", arm.ID, msg)
				}
			}
		})
	}
}

// gatedLoad is a store whose Load of name calls gate first.
type gatedLoad struct {
	Store
	name string
	gate func()
}

func (s gatedLoad) Load(name string, v any) (bool, error) {
	if name == s.name {
		s.gate()
	}
	return s.Store.Load(name, v)
}

// A device that leaves while a session picks its profile has no views to
// publish: the pick, which applied, answers without an error for it.
func TestProfilePickWhileADeviceLeavesAnswersWithoutError(t *testing.T) {
	const profile = "co.example:device-leaves"
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	svc := startWith(t, Options{StateDir: t.TempDir(), WrapStore: func(s Store) Store {
		return gatedLoad{Store: s, name: profileFolder(profile) + "/session", gate: func() {
			once.Do(func() { close(entered); <-release })
		}}
	}})
	addArm(t, svc, simArm(0))
	leaving := addArm(t, svc, simArm(1))
	sess, sink := open(t, svc, nil)
	picked := make(chan []byte, 1)
	go func() {
		sess.Deliver([]byte(`{"session":{"configure":{"profile":{"name":"`+profile+`"}}}}`), 0)
		picked <- <-sink.frames
	}()
	<-entered
	svc.RemoveDevice(leaving, errors.New("unplugged"))
	for deadline := time.Now().Add(10 * time.Second); svc.Devices().Find(leaving.Type, leaving.ID) != nil; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the arm still listed 10 s after RemoveDevice")
		}
	}
	close(release)
	var f testFrame
	if err := json.Unmarshal(<-picked, &f.raw); err != nil {
		t.Fatal(err)
	}
	if codes := f.errorCodes(); len(codes) != 0 {
		t.Fatalf("the pick answered %v (%v); want no error: the profile applied, and the arm that left has nothing to show", codes, f.raw["errors"])
	}
	if got := sess.Profile(); got != profile {
		t.Fatalf("profile %q after the pick, want %q", got, profile)
	}
}

// A reset (DELETE) across sessions of several profiles writes, to each
// profile's document, the reset entry only: what another session of the
// profile stored stays, and the reset is on disk when it is answered
// (the stored damping below was only written behind until then).
func TestResetAcrossProfilesKeepsTheOtherSessionsEntries(t *testing.T) {
	for _, all := range []bool{false, true} {
		t.Run(fmt.Sprintf("all sessions %v", all), func(t *testing.T) {
			dir := t.TempDir()
			svc := startWith(t, Options{StateDir: dir})
			arm := addArm(t, svc, simArm(0))
			// Every session picks its profile before any configures: the
			// one that picks after a change starts from it.
			const p, q = "co.example:p", "co.example:q"
			type client struct {
				sess *Session
				sink *recSink
			}
			var clients []client
			for _, profile := range []string{p, p, q} {
				sess, sink := open(t, svc, nil)
				if f := exchange(t, sess, sink, `{"session":{"configure":{"profile":{"name":"`+profile+`"}}}}`); len(f.errorCodes()) != 0 {
					t.Fatalf("pick: %v", f.errorCodes())
				}
				clients = append(clients, client{sess, sink})
			}
			for i, configure := range []string{`{"damping":{"scalar":7}}`, `{"force_gate":{"gain":0.5}}`, `{"damping":{"scalar":3},"force_gate":{"gain":0.5}}`} {
				msg := fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":%s}]}`, arm.ID, configure)
				if f := exchange(t, clients[i].sess, clients[i].sink, msg); len(f.errorCodes()) != 0 {
					t.Fatalf("configure: %v", f.errorCodes())
				}
			}
			b, c := clients[1].sess, clients[2].sess
			targets := []uint64{b.ID, c.ID}
			if all {
				targets = nil
			}
			if _, err := svc.ResetEntry(arm, targets, protocol.KeyForceGate); err != nil {
				t.Fatal(err)
			}
			disk, err := store.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			gate := protocol.DefaultEntry(protocol.KeyForceGate).(protocol.ForceGate)
			for profile, damping := range map[string]float64{p: 7, q: 3} {
				var stored protocol.SessionConfig
				found, err := disk.Load(arm.profileStoreName(profile), &stored)
				if err != nil || !found || stored.ForceGate != gate || stored.Damping.ScalarOrZero() != damping {
					t.Errorf("right after the reset, %s's document has force_gate %+v, damping %v (found %v, %v); want the default %+v and damping %v",
						profile, stored.ForceGate, stored.Damping.ScalarOrZero(), found, err, gate, damping)
				}
			}
		})
	}
}
