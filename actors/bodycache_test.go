package actors

import "testing"

// TestEncodedStateCacheStoresOnlyWhatIsReused: a device framed by one
// session (that session subscribed to it alone) stops storing encodings,
// which would each be an allocation no frame reuses, even when that session
// frames a publish twice; once a second session frames the same publishes,
// the cache stores again and the second session reuses what the first
// stored.
func TestEncodedStateCacheStoresOnlyWhatIsReused(t *testing.T) {
	const alone, other = 7, 8
	d := &Device{}
	v := &View{}
	if !d.worthStoring(slot3x, 1, alone) {
		t.Fatal("an empty cache must store the first encoding")
	}
	d.storeBody(slot3x, 1, v, alone, []byte(`{}`))
	if d.cachedBody(slot3x, 1, v, alone) == nil {
		t.Fatal("the stored encoding is not found")
	}
	for seq := uint64(2); seq < 100; seq++ {
		for range 2 { // the session frames each publish twice
			if d.worthStoring(slot3x, seq, alone) {
				t.Fatalf("publish %d: stores although no other session reused an encoding", seq)
			}
		}
	}
	// A second session frames publish 100 after the first encoded it.
	if d.worthStoring(slot3x, 100, alone) {
		t.Fatal("publish 100: stores before a second session framed the device")
	}
	if d.worthStoring(slot3x, 100, other) {
		t.Fatal("publish 100: the second session to encode it stores an encoding nobody else will read")
	}
	// From the next publish on, the first to frame it stores and the
	// other reuses, whichever session comes first.
	for seq := uint64(101); seq < 110; seq++ {
		first, second := uint64(alone), uint64(other)
		if seq%2 == 0 {
			first, second = second, first
		}
		if !d.worthStoring(slot3x, seq, first) {
			t.Fatalf("publish %d: not stored although another session reused the last encoding", seq)
		}
		d.storeBody(slot3x, seq, v, first, []byte(`{}`))
		if d.cachedBody(slot3x, seq, v, second) == nil {
			t.Fatalf("publish %d: the second session misses the stored encoding", seq)
		}
	}
}
