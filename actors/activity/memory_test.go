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

// TestReplayIsFreedOnceRead: a subscriber that replayed the whole ring
// (the events socket's ?since=0) holds none of that copy once it has read
// it. It kept it for its life: 4096 entries, about 480 KiB, for every idle
// events socket that ever asked since=0.
func TestReplayIsFreedOnceRead(t *testing.T) {
	const ring, subscribers = 4096, 40
	a := start(t, activity.Options{RingSize: ring})
	for range ring {
		a.Publish(event.InvalidIOChannel([]byte("x")))
	}
	if _, _, err := a.Recent(0, 1); err != nil { // every publish handled
		t.Fatal(err)
	}
	before := liveHeap()
	subs := make([]*activity.Subscription, 0, subscribers)
	for range subscribers {
		sub, err := a.Subscribe(0, true)
		if err != nil {
			t.Fatal(err)
		}
		for range ring {
			next(t, sub)
		}
		subs = append(subs, sub)
	}
	grown := int64(liveHeap()) - int64(before)
	// What each may keep: a small live queue and change; the replayed
	// copy was 480 KiB.
	const perSubscriber = 32 << 10
	if grown > subscribers*perSubscriber {
		t.Fatalf("%d subscribers that read their replay hold %d KiB, %d KiB each; want at most %d KiB each", subscribers, grown>>10, grown/subscribers>>10, perSubscriber>>10)
	}
	for _, sub := range subs {
		sub.Close()
	}
}

// TestIdleSubscriberIsSmall: a live-only subscriber that has nothing
// waiting (an idle events socket) holds a few kilobytes. Each held a
// queue of 1024 entries, about 120 KiB, from the start: 4096 events
// sockets, the connection limit, took 480 MiB.
func TestIdleSubscriberIsSmall(t *testing.T) {
	const subscribers = 200
	a := start(t, activity.Options{})
	before := liveHeap()
	subs := make([]*activity.Subscription, 0, subscribers)
	for range subscribers {
		sub, err := a.Subscribe(0, false)
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, sub)
	}
	grown := int64(liveHeap()) - int64(before)
	const perSubscriber = 8 << 10
	if grown > subscribers*perSubscriber {
		t.Fatalf("%d idle subscribers hold %d KiB, %d KiB each; want at most %d KiB each", subscribers, grown>>10, grown/subscribers>>10, perSubscriber>>10)
	}
	for _, sub := range subs {
		sub.Close()
	}
}

// TestSubscriberSmallAgainAfterABurst: a subscriber whose queue grew to
// hold a burst is idle-sized again once it has read the burst, so a socket
// that once had 1024 events waiting does not keep their room for its life.
func TestSubscriberSmallAgainAfterABurst(t *testing.T) {
	const subscribers, burst = 40, 1024
	a := start(t, activity.Options{})
	subs := make([]*activity.Subscription, 0, subscribers)
	for range subscribers {
		sub, err := a.Subscribe(0, false)
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, sub)
	}
	before := liveHeap()
	publishN(a, 1, burst)
	for _, sub := range subs {
		for range burst {
			next(t, sub)
		}
	}
	grown := int64(liveHeap()) - int64(before)
	const perSubscriber = 8 << 10
	if grown > subscribers*perSubscriber {
		t.Fatalf("%d idle subscribers, after a burst they read, hold %d KiB more, %d KiB each; want at most %d KiB each", subscribers, grown>>10, grown/subscribers>>10, perSubscriber>>10)
	}
	for _, sub := range subs {
		sub.Close()
	}
}
