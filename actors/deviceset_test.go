package actors

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/hapticd/hapticd/protocol"
)

// TestFindNamedAnswersAsTheScan: in a set too large to scan, the index
// finds the device a client's id names as comparing it with every id does
// (protocol.NamesDeviceID: the first exact id, else the first equal but for
// case), for ids in either case, ids that differ in case alone, ids whose
// case folding leaves ASCII (the Kelvin sign folds with k, the long s
// with s), unknown ids and
// both types.
func TestFindNamedAnswersAsTheScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 1))
	ds := &DeviceSet{}
	for i := range 300 {
		typ := protocol.TypeArm
		if i%5 == 0 {
			typ = protocol.TypeGrip
		}
		id := fmt.Sprintf("%04X", rng.IntN(1<<16))
		switch i % 7 {
		case 1:
			id = fmt.Sprintf("%04x", rng.IntN(1<<16)) // lower case
		case 2:
			id = "k" + id // folds with "K" and "\u212a"
		case 3:
			id = "\u212a" + id
		}
		ds = ds.with(&Device{Type: typ, ID: id})
	}
	// Ids that differ in case alone, added late: the exact one must win
	// over an earlier folded one.
	for _, id := range []string{"abcd", "ABCD", "AbCd", "Kx", "kx", "\u017fq"} {
		ds = ds.with(&Device{Type: protocol.TypeArm, ID: id})
	}
	if len(ds.arms) <= scanAtMost {
		t.Fatalf("%d arms: the index is not used", len(ds.arms))
	}
	var given []string
	for _, d := range ds.All() {
		given = append(given, d.ID, toggleCase(d.ID), "x"+d.ID)
	}
	given = append(given, "aBcD", "abCD", "KX", "\u212ax", "\u212aX", "sq", "SQ", "", "0000", "\xff")
	for _, typ := range []protocol.DeviceType{protocol.TypeArm, protocol.TypeGrip} {
		for _, g := range given {
			want, wantAt := scanNamed(ds.OfType(typ), g)
			got, at := ds.findAt(typ, g, -1)
			if got != want || at != wantAt {
				t.Errorf("%v %q: index found %v at %d, the scan %v at %d", typ, g, idOf(got), at, idOf(want), wantAt)
			}
		}
	}
}

// toggleCase swaps the case of the ASCII letters of s.
func toggleCase(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case 'a' <= c && c <= 'z':
			b[i] = c - 'a' + 'A'
		case 'A' <= c && c <= 'Z':
			b[i] = c - 'A' + 'a'
		}
	}
	return string(b)
}

func idOf(d *Device) string {
	if d == nil {
		return "nothing"
	}
	return d.ID
}
