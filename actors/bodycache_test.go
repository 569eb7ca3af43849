package actors

import "testing"

// TestEncodedStateCacheStoresOnlyWhatIsReused: a device whose publishes are
// each framed once or twice (one session subscribed to it at the loop's
// rate) stops storing encodings, which would each be an allocation at most
// one frame reuses. A publish framed a third time by the same session, or
// framed by a second session, makes the cache store again, and the frames
// that follow reuse what was stored.
func TestEncodedStateCacheStoresOnlyWhatIsReused(t *testing.T) {
	const alone, other = 7, 8
	fc := &frameCache{}
	v := &View{}
	store := func(seq uint64) { fc.store(slot3x, seq, v, []byte(`{}`)) }
	if !fc.worthStoring(slot3x, 1, alone) {
		t.Fatal("an empty cache must store the first encoding")
	}
	store(1)
	for seq := uint64(2); seq < 100; seq++ {
		if fc.worthStoring(slot3x, seq, alone) {
			t.Fatalf("publish %d: stores although no frame reused an encoding", seq)
		}
	}

	// The session frames publish 99 twice (its tick and the loop's drift
	// apart): not worth an allocation.
	if fc.worthStoring(slot3x, 99, alone) {
		t.Fatal("publish 99: stores on its second frame")
	}
	// The session frames publish 100 three times and more (a client faster
	// than the loop): the third frame stores, and the next reuse it.
	for range 2 {
		if fc.worthStoring(slot3x, 100, alone) {
			t.Fatal("publish 100: stores on its first or second frame")
		}
	}
	if !fc.worthStoring(slot3x, 100, alone) {
		t.Fatal("publish 100: not stored when framed a third time")
	}
	store(100)
	if fc.cached(slot3x, 100, v) == nil {
		t.Fatal("publish 100: the stored encoding is not found")
	}
	// Reused, so the next publish stores at once.
	if !fc.worthStoring(slot3x, 101, alone) {
		t.Fatal("publish 101: not stored although the last encoding was reused")
	}
	store(101)
	// Framed once only: the cache stops storing again.
	if fc.worthStoring(slot3x, 102, alone) {
		t.Fatal("publish 102: stores although publish 101 was framed once")
	}

	// A second session frames publish 103 after the first encoded it: too
	// late to share it, but the next miss stores, and from then on the
	// other session reuses what the first stored.
	if fc.worthStoring(slot3x, 103, alone) || fc.worthStoring(slot3x, 103, other) {
		t.Fatal("publish 103: stores before a second session framed the device")
	}
	for seq := uint64(104); seq < 110; seq++ {
		if !fc.worthStoring(slot3x, seq, alone) {
			t.Fatalf("publish %d: not stored although the other session reused the last encoding", seq)
		}
		store(seq)
		if fc.cached(slot3x, seq, v) == nil { // the other session's frame
			t.Fatalf("publish %d: the second session misses the stored encoding", seq)
		}
	}
	// The other session leaves: publish 110 is stored (109 was reused) but
	// not reused, so 111 is not stored.
	if !fc.worthStoring(slot3x, 110, alone) {
		t.Fatal("publish 110: not stored although publish 109 was reused")
	}
	store(110)
	if fc.worthStoring(slot3x, 111, alone) {
		t.Fatal("publish 111: stored although nobody reused publish 110")
	}
}
