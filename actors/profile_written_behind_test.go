package actors

import (
	"fmt"
	"testing"

	"github.com/hapticd/hapticd/protocol"
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
