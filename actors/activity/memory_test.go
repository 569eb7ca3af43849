package activity_test

import (
	"runtime"
	"runtime/metrics"
	"testing"

	"github.com/hapticd/hapticd/actors/activity"
	"github.com/hapticd/hapticd/protocol/event"
)

func liveHeap() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// subscribersHold subscribes n times (with replay from 0 when replay), lets
// each subscription go through read, and fails t when they hold more than
// perSubscriber bytes each of the heap beyond what it held before them.
func subscribersHold(t *testing.T, a *activity.Activity, n int, replay bool, perSubscriber int64, what string, read func(*activity.Subscription)) {
	t.Helper()
	before := liveHeap()
	subs := make([]*activity.Subscription, 0, n)
	for range n {
		sub, err := a.Subscribe(0, replay)
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, sub)
	}
	for _, sub := range subs {
		read(sub)
	}
	grown := int64(liveHeap()) - int64(before)
	if grown > int64(n)*perSubscriber {
		t.Fatalf("%d %s hold %d KiB, %d KiB each; want at most %d KiB each", n, what, grown>>10, grown/int64(n)>>10, perSubscriber>>10)
	}
	for _, sub := range subs {
		sub.Close()
	}
}

// TestReplayIsFreedOnceRead: a subscriber that replayed the whole ring
// (the events socket's ?since=0) holds none of that copy once it has read
// it. It kept it for its life: 4096 entries, about 480 KiB, for every idle
// events socket that ever asked since=0.
func TestReplayIsFreedOnceRead(t *testing.T) {
	const ring = 4096
	a := start(t, activity.Options{RingSize: ring})
	for range ring {
		a.Publish(event.InvalidIOChannel([]byte("x")))
	}
	if _, err := a.Recent(0, 1); err != nil { // every publish handled
		t.Fatal(err)
	}
	// What each may keep: a small live queue and change; the replayed
	// copy was 480 KiB.
	subscribersHold(t, a, 40, true, 32<<10, "subscribers that read their replay", func(sub *activity.Subscription) {
		for range ring {
			next(t, sub)
		}
	})
}

// TestIdleSubscriberIsSmall: a live-only subscriber that has nothing
// waiting (an idle events socket) holds a few kilobytes. Each held a
// queue of 1024 entries, about 120 KiB, from the start: 4096 events
// sockets, the connection limit, took 480 MiB.
func TestIdleSubscriberIsSmall(t *testing.T) {
	a := start(t, activity.Options{})
	subscribersHold(t, a, 200, false, 8<<10, "idle subscribers", func(*activity.Subscription) {})
}

// TestSubscriberSmallAgainAfterABurst: a subscriber whose queue grew to
// hold a burst is idle-sized again once it has read the burst, so a socket
// that once had 1024 events waiting does not keep their room for its life.
func TestSubscriberSmallAgainAfterABurst(t *testing.T) {
	const burst = 1024
	a := start(t, activity.Options{})
	published := false
	// 16 KiB each: the idle size, and the ring's share of the burst (it
	// keeps the 1024 events, about 3 KiB a subscriber of 40); a queue
	// kept at the burst's size is 120 KiB.
	subscribersHold(t, a, 40, false, 16<<10, "idle subscribers, after a burst they read,", func(sub *activity.Subscription) {
		if !published { // once every subscriber is there
			publishN(a, 1, burst)
			published = true
		}
		for range burst {
			next(t, sub)
		}
	})
}
