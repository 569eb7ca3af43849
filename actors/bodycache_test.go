package actors

import "testing"

// TestEncodedStateCacheStoresOnlyWhatIsReused: a device framed by one
// session once per publish (that session subscribed to it alone) stops
// storing encodings, which would each be an allocation no frame reuses;
// once another frame reuses one, it stores every encoding again.
func TestEncodedStateCacheStoresOnlyWhatIsReused(t *testing.T) {
	d := &Device{}
	v := &View{}
	if !d.worthStoring(slot3x, 1) {
		t.Fatal("an empty cache must store the first encoding")
	}
	d.storeBody(slot3x, 1, v, []byte(`{}`))
	for seq := uint64(2); seq < probeEvery; seq++ {
		if d.worthStoring(slot3x, seq) {
			t.Fatalf("publish %d: stores although the last encoding was never reused", seq)
		}
	}
	if !d.worthStoring(slot3x, probeEvery) {
		t.Fatal("never probes again: a second session framing the device would not be noticed")
	}
	if d.cachedBody(slot3x, 1, v) == nil {
		t.Fatal("the stored encoding is not found")
	}
	if !d.worthStoring(slot3x, 2) {
		t.Fatal("an encoding that was reused must be stored again")
	}
}
