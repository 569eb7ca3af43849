package cluster

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/hw/hwtest"
)

// A session change through the gateway reaches the node in its tick even
// while another goroutine encodes a declaration of the arm's effects slowly
// (a loaded gateway; held 1 s here): the gateway's tick never waits for an
// encoding. Session A holds the node's arm with a 1.5 N field; a new
// declaration of A's is being encoded when A's connection closes. The node
// must release the arm and output no force soon after the let-go, and
// session B, taking the arm at once with a 1 N force, must have it on the
// node soon after its command: within heldBound, a quarter of the
// encoding's hold (far above what a loaded machine's scheduling adds to
// the release bound, 20 ms, which TestLetGoThroughTheGatewayEndsTheForceWithinTheBound
// holds the let-go to).
// The tick used to wait for the encoding under the proxy's lock after it
// sent A's idle command, and with it B's claim and every later tick of the
// gateway's loop: B's force reached the node a second late. A's
// declaration, encoded meanwhile, never reaches the node under B.
func TestSessionChangeThroughTheGatewayNotHeldByASlowEffectsEncoding(t *testing.T) {
	n, d := testNode(t)
	g := testGateway(t, time.Hour)
	const encodingHold, heldBound = time.Second, 250 * time.Millisecond
	var slow atomic.Bool
	encoding := make(chan struct{}, 1)
	g.encodingEffects = func() {
		if slow.Load() {
			select {
			case encoding <- struct{}{}:
			default:
			}
			time.Sleep(encodingHold)
		}
	}
	linkLab(t, g, n)
	reg := g.svc.Devices().All()[0].Register()
	a := openSession(t, g.svc, `,"lease":{"ms":1000}`)
	b := openSession(t, g.svc, `,"lease":{"ms":1000}`)
	msg := func(fx string) string {
		return `{"arm3":[{"device_id":"` + d.Info.ID + `","effects":` + fx + `}]}`
	}
	cur := cursorOf(t, a.send(msg(`{}`)))
	if f := a.send(msg(fieldAt(cur))); f["errors"] != nil {
		t.Fatal(f["errors"])
	}
	hwtest.Eventually(t, 10*time.Second, "A's field on the node's arm", func() bool {
		a.send(msg(`{}`)) // renews the lease, as a client in a loop does
		return forceOn(d) > 1.4
	})

	slow.Store(true)
	declared := make(chan struct{})
	go func() {
		defer close(declared)
		cur[0] += 0.001 // a new declaration: another origin
		a.sess.Deliver([]byte(msg(fieldAt(cur))), 0)
	}()
	select {
	case <-encoding:
	case <-time.After(10 * time.Second):
		t.Fatal("A's new declaration never reached the encoding")
	}
	// The connection closes on another goroutine, as a server's does: the
	// close withdraws A's effects after it releases the arm, which must not
	// hold this measure's start either.
	closed := make(chan struct{})
	go func() { defer close(closed); a.close() }()
	letGoNs := releasedAt(t, reg, a.sess.ID)
	var releasedNs int64
	deadline := time.Now().Add(5 * time.Second)
	lastNs, _ := lastForceUntil(d, func() bool {
		if releasedNs == 0 && d.Register().Owner() == 0 {
			releasedNs = loop.SystemClock().Now()
		}
		return time.Now().After(deadline) || releasedNs != 0 && forceOn(d) < 1e-9
	})
	if time.Now().After(deadline) {
		t.Fatal("the node's arm not released and at zero force within 5 s of the let-go")
	}

	// B takes the arm, from before its first command.
	takeNs := loop.SystemClock().Now()
	force := `{"arm3":[{"device_id":"` + d.Info.ID + `","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}}}}]}`
	stopB := make(chan struct{})
	doneB := make(chan struct{})
	go func() { // B commands in a loop, as a client does
		defer close(doneB)
		for {
			b.sess.Deliver([]byte(force), 0)
			select {
			case <-stopB:
				return
			case <-b.sink.frames:
			case <-time.After(5 * time.Second):
				return
			}
		}
	}()
	var bNs int64
	for deadline := time.Now().Add(5 * time.Second); bNs == 0; time.Sleep(100 * time.Microsecond) {
		if time.Now().After(deadline) {
			t.Fatal("B's force never reached the node's arm")
		}
		if d.Register().Owner() != 0 && forceOn(d) > 0.9 {
			bNs = loop.SystemClock().Now()
		}
	}
	owner := reg.Owner()
	close(stopB)
	<-doneB
	if owner != b.sess.ID {
		t.Fatalf("the gateway's arm held by %d, want B (%d)", owner, b.sess.ID)
	}

	released, forceEnd := time.Duration(releasedNs-letGoNs), time.Duration(max(lastNs-letGoNs, 0))
	taken := time.Duration(bNs - takeNs)
	t.Logf("the node released the arm %v after the let-go, output A's force until %v after; B's force on it %v after B's command", released, forceEnd, taken)
	if released > heldBound || forceEnd > heldBound {
		t.Errorf("the node released the arm %v and output force until %v after the session let go; want both within %v", released, forceEnd, heldBound)
	}
	if taken > heldBound {
		t.Errorf("B's force on the node's arm %v after its command; want it within %v", taken, heldBound)
	}
	// A's declaration, encoded now, must not reach the node after the idle
	// command that ended A's control: the node would keep it for the
	// gateway, the arm's owner there, and render it under B's commands.
	<-declared
	<-closed
	for end := time.Now().Add(100 * time.Millisecond); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if set := d.Effects(); set != nil {
			t.Fatalf("the node holds %d effects under B's control; B declared none", set.Len())
		}
	}
	b.close()
	waitArmFree(t, d, g)
}
