package actors

import (
	"testing"
	"time"

	"github.com/hapticd/hapticd/protocol"
)

// While a device's config write hangs on the disk (an fsync that does not
// return), a read of the device's config is answered at once with the
// value in force, which the write has not changed yet: it waited behind
// the write until its RequestTimeout, then answered 503, though the
// device actor had the answer in memory all along.
func TestReadsDoNotWaitBehindAHungWrite(t *testing.T) {
	armID := simArm(0).Info().ID
	var held *heldStore
	svc := startWith(t, Options{StateDir: t.TempDir(), RequestTimeout: 10 * time.Second, WrapStore: func(s Store) Store {
		held = newHeldStore(s, "save", storeName(protocol.TypeArm, armID))
		return held
	}})
	arm := addArm(t, svc, simArm(0))
	t.Cleanup(func() {
		select {
		case <-held.release:
		default:
			close(held.release)
		}
	})
	before, err := svc.Entry(arm, 0, protocol.KeyGravityCompensation)
	if err != nil {
		t.Fatal(err)
	}
	set := protocol.GravityCompensation{Enabled: true, ScalingFactor: 0.5}
	wrote := pending(func() { _, _ = svc.SetEntry(arm, 0, set) })
	held.waitEntered(t)

	type answer struct {
		e   protocol.Entry
		err error
	}
	for _, k := range []protocol.Key{protocol.KeyGravityCompensation, protocol.KeyHandedness} {
		read := make(chan answer, 1)
		go func() {
			e, err := svc.Entry(arm, 0, k)
			read <- answer{e, err}
		}()
		select {
		case a := <-read:
			if a.err != nil {
				t.Fatalf("read %s while a write hangs: %v", k.Path(), a.err)
			}
			if k == protocol.KeyGravityCompensation && a.e != before {
				t.Fatalf("read %s while its write hangs: %v, want the value in force %v", k.Path(), a.e, before)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("read %s still waiting 5 s behind a hung write of the device's config", k.Path())
		}
	}
	stillPending(t, wrote, "the hung write")
	close(held.release)
	waitDone(t, wrote, "the write")
	if got, err := svc.Entry(arm, 0, protocol.KeyGravityCompensation); err != nil || got != set {
		t.Fatalf("after the write: %v (%v), want %v", got, err, set)
	}
}
