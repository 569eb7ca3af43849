package actors

// The device set: the inventory snapshot every reader loads without a lock.
// The registry actor (registry.go) is its only writer; each change makes a
// new DeviceSet and publishes it (Service.Devices), so a reader holds one
// consistent list for as long as it likes.

import (
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/hapticd/hapticd/protocol"
)

// DeviceSet is an immutable list of the devices, by type in the order they
// appeared.
type DeviceSet struct {
	arms, grips []*Device
	// runs are the encoded arm runs the sessions framing the whole set
	// share (framecache.go); nil for a session's own subset (subscribe.go),
	// whose runs nobody else would reuse.
	runs *armRuns
	// remote are the devices of arms and grips whose states may go stale
	// (Device.remote): a frame checks only these (staleStateWarnings).
	remote []*Device
	// index finds a device by the id a client gave without a scan; built
	// at the first lookup its hint does not answer (findAt).
	index atomic.Pointer[deviceIndex]
}

// OfType returns the devices of one type; do not modify the slice.
func (ds *DeviceSet) OfType(t protocol.DeviceType) []*Device {
	switch t {
	case protocol.TypeArm:
		return ds.arms
	case protocol.TypeGrip:
		return ds.grips
	}
	return nil
}

// Find returns the device of type t with id, or nil.
func (ds *DeviceSet) Find(t protocol.DeviceType, id string) *Device {
	for _, d := range ds.OfType(t) {
		if d.ID == id {
			return d
		}
	}
	return nil
}

// FindNamed returns the device of type t that an id a client gave names
// (protocol.NamesDeviceID: exactly, or else regardless of case), or nil.
// Find is for the service's own ids, which are exact.
func (ds *DeviceSet) FindNamed(t protocol.DeviceType, given string) *Device {
	d, _ := ds.findAt(t, given, -1)
	return d
}

// findAt is FindNamed that looks at index hint of the type's list first
// (where the caller found the device last time) and also returns where it
// found it (-1: nowhere). A lock-step client names the same devices every
// tick, so a session's lookup is one comparison. A hint that names the
// device by case folding alone is not trusted: an exact id wins. Other
// lookups go through the set's index: a scan per entry made a message
// naming a thousand arms in another order, or in lower case, a million
// comparisons (60 ms against 14 ms in order).
func (ds *DeviceSet) findAt(t protocol.DeviceType, given string, hint int) (*Device, int) {
	list := ds.OfType(t)
	if hint >= 0 && hint < len(list) && list[hint].ID == given {
		return list[hint], hint
	}
	if len(list) <= scanAtMost {
		return scanNamed(list, given)
	}
	idx := ds.index.Load()
	if idx == nil {
		// Readers that race here build equal indexes; one is kept.
		ds.index.CompareAndSwap(nil, newDeviceIndex(ds))
		idx = ds.index.Load()
	}
	return idx.find(t, list, given)
}

// scanAtMost is the longest list searched by a scan rather than the index:
// a few comparisons cost less than building it.
const scanAtMost = 16

// scanNamed finds the device given names (protocol.NamesDeviceID) in list
// by comparing each: the first exact one, else the first equal but for
// case.
func scanNamed(list []*Device, given string) (*Device, int) {
	folded := -1
	for i, d := range list {
		switch protocol.NamesDeviceID(given, d.ID) {
		case protocol.IDExact:
			return d, i
		case protocol.IDFolded:
			if folded < 0 {
				folded = i
			}
		}
	}
	if folded < 0 {
		return nil, -1
	}
	return list[folded], folded
}

// deviceIndex maps ids to positions in a DeviceSet's lists, with the
// answers scanNamed gives: per type, the first device of each exact id and
// the first of each id folded (foldID).
type deviceIndex struct {
	exact, folded [2]map[string]int // by typeSlot
}

func newDeviceIndex(ds *DeviceSet) *deviceIndex {
	idx := new(deviceIndex)
	for slot, list := range [2][]*Device{ds.arms, ds.grips} {
		idx.exact[slot] = make(map[string]int, len(list))
		idx.folded[slot] = make(map[string]int, len(list))
		var buf []byte
		for i, d := range list {
			if _, ok := idx.exact[slot][d.ID]; !ok {
				idx.exact[slot][d.ID] = i
			}
			buf = foldID(buf[:0], d.ID)
			if _, ok := idx.folded[slot][string(buf)]; !ok {
				idx.folded[slot][string(buf)] = i
			}
		}
	}
	return idx
}

// typeSlot is where the index keeps type t (-1: a type the set holds
// none of).
func typeSlot(t protocol.DeviceType) int {
	switch t {
	case protocol.TypeArm:
		return 0
	case protocol.TypeGrip:
		return 1
	}
	return -1
}

func (idx *deviceIndex) find(t protocol.DeviceType, list []*Device, given string) (*Device, int) {
	slot := typeSlot(t)
	if slot < 0 {
		return nil, -1
	}
	if i, ok := idx.exact[slot][given]; ok {
		return list[i], i
	}
	var buf [64]byte
	// The conversion in the lookup does not allocate.
	if i, ok := idx.folded[slot][string(foldID(buf[:0], given))]; ok {
		return list[i], i
	}
	return nil, -1
}

// foldID appends id with each rune replaced by the least of its case
// folding orbit (unicode.SimpleFold), so that two ids fold to the same
// bytes exactly when strings.EqualFold holds between them.
func foldID(dst []byte, id string) []byte {
	for _, r := range id {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		dst = utf8.AppendRune(dst, least)
	}
	return dst
}

// count is how many devices the set holds.
func (ds *DeviceSet) count() int { return len(ds.arms) + len(ds.grips) }

// All returns every device, arms first.
func (ds *DeviceSet) All() []*Device {
	all := make([]*Device, 0, len(ds.arms)+len(ds.grips))
	return append(append(all, ds.arms...), ds.grips...)
}

func (ds *DeviceSet) with(d *Device) *DeviceSet {
	next := &DeviceSet{arms: ds.arms, grips: ds.grips, runs: new(armRuns), remote: ds.remote}
	if d.remote != nil {
		next.remote = append(append([]*Device(nil), ds.remote...), d)
	}
	switch d.Type {
	case protocol.TypeArm:
		next.arms = append(append([]*Device(nil), ds.arms...), d)
	case protocol.TypeGrip:
		next.grips = append(append([]*Device(nil), ds.grips...), d)
	}
	return next
}

func (ds *DeviceSet) without(d *Device) *DeviceSet {
	drop := func(list []*Device) []*Device {
		out := make([]*Device, 0, len(list))
		for _, x := range list {
			if x != d {
				out = append(out, x)
			}
		}
		return out
	}
	return &DeviceSet{arms: drop(ds.arms), grips: drop(ds.grips), runs: new(armRuns), remote: drop(ds.remote)}
}
