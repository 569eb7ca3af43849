package actors

// The device set: the inventory snapshot every reader loads without a lock.
// The registry actor (registry.go) is its only writer; each change makes a
// new DeviceSet and publishes it (Service.Devices), so a reader holds one
// consistent list for as long as it likes.

import "github.com/hapticd/hapticd/protocol"

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
// tick, so a session's lookup is one comparison instead of a scan of every
// device. A hint that names the device by case folding alone is not
// trusted: the scan looks for an exact id, which wins.
func (ds *DeviceSet) findAt(t protocol.DeviceType, given string, hint int) (*Device, int) {
	list := ds.OfType(t)
	if hint >= 0 && hint < len(list) && list[hint].ID == given {
		return list[hint], hint
	}
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
