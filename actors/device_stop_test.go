package actors

import (
	"errors"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// A request that reaches a device actor's mailbox before the actor stops,
// but is not taken up by then (the registry's ctx.Stop is a system
// message, handled ahead of the user messages queued), is answered as if
// the device had gone already. protoactor drops the user messages a
// stopped actor's mailbox still holds, and their senders waited their
// futures out, RequestTimeout plus admittedLimit (62 s): a profile pick
// while a device left hung that long, then answered unavailable
// (TestProfilePickWhileADeviceLeavesAnswersWithoutError, 1 run in 4).
// The test holds the requests in the mailbox (suspended, as protoactor
// does for a supervisor's decision) across the stop, for the race's
// outcome every time.
func TestRequestsQueuedAsADeviceActorStopsAreAnswered(t *testing.T) {
	svc := startWith(t, Options{})
	addArm(t, svc, simArm(0))
	leaving := addArm(t, svc, simArm(1))
	proc, ok := svc.system.ProcessRegistry.GetLocal(leaving.pid.Id)
	if !ok {
		t.Fatal("the device's actor is not registered")
	}
	proc.SendSystemMessage(leaving.pid, &actor.SuspendMailbox{})
	var sent []*pendingRequest
	for range 20 {
		sent = append(sent, svc.send(leaving.pid, &published{session: 0}))
	}
	svc.RemoveDevice(leaving, errors.New("unplugged"))
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, ok := svc.system.ProcessRegistry.GetLocal(leaving.pid.Id); !ok {
			break // stopped: Remove comes first in protoactor's finalizeStop
		}
		if time.Now().After(deadline) {
			t.Fatal("the leaving device's actor did not stop within 10 s")
		}
	}
	proc.SendSystemMessage(leaving.pid, &actor.ResumeMailbox{})
	answered := make(chan error, len(sent))
	for _, p := range sent {
		go func() {
			_, err := p.wait()
			answered <- err
		}()
	}
	deadline := time.After(20 * time.Second)
	for i := range sent {
		select {
		case err := <-answered:
			if err == nil {
				t.Error("a request queued as the device left was answered as if its actor had handled it")
			}
		case <-deadline:
			t.Fatalf("%d of %d requests queued as the device's actor stopped unanswered after 20 s", len(sent)-i, len(sent))
		}
	}
}
