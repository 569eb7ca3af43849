package actors

import (
	"fmt"

	"github.com/hapticd/hapticd/protocol"
)

// subscription is a session's session.configure.subscribe: the devices its
// frames carry (protocol/subscribe.go). The session actor makes one per
// change and publishes it in the session's snapshot; it is never modified
// afterwards.
type subscription struct {
	// armState selects the arm state fields of the frames answering
	// messages (zero: every field).
	armState protocol.StateFields
	subset   bool
	want     protocol.Subscription // when subset: the devices, copied
}

// everyDevice is the default subscription: every device, every field.
var everyDevice = &subscription{}

// newSubscription takes a subscription from a decoded message and warns
// (in warnings) about named devices that are not connected (they appear
// once they are).
func newSubscription(sub *protocol.Subscription, devs *DeviceSet, warnings *[]protocol.Error) *subscription {
	s := &subscription{armState: sub.ArmState}
	if sub.All {
		return s
	}
	s.subset = true
	s.want.Devices = append([]protocol.SubscribedDevice(nil), sub.Devices...)
	for i, d := range s.want.Devices {
		if devs.FindNamed(d.Type, d.ID) == nil {
			*warnings = append(*warnings, *protocol.Errorf(protocol.CodeUnknownDevice,
				fmt.Sprintf("session.configure.subscribe.devices[%d]", i),
				"no device with id %q is connected now; frames carry it once it is", d.ID))
		}
	}
	return s
}

// visibleSet is the per-tick path's cache of a subscription's filtered
// device set, reused until the device set or the subscription changes:
// framing a subset costs no allocation per frame.
type visibleSet struct {
	sub       *subscription
	src, view *DeviceSet
}

// of returns the devices sub's frames carry, out of all.
func (v *visibleSet) of(sub *subscription, all *DeviceSet) *DeviceSet {
	if !sub.subset {
		return all
	}
	if sub == v.sub && all == v.src {
		return v.view
	}
	// Each named device as a client's id names it (FindNamed), kept in
	// the set's order.
	named := make(map[*Device]bool, len(sub.want.Devices))
	for _, w := range sub.want.Devices {
		if d := all.FindNamed(w.Type, w.ID); d != nil {
			named[d] = true
		}
	}
	view := &DeviceSet{}
	for _, d := range all.arms {
		if named[d] {
			view.arms = append(view.arms, d)
		}
	}
	for _, d := range all.grips {
		if named[d] {
			view.grips = append(view.grips, d)
		}
	}
	for _, d := range all.remote {
		if named[d] {
			view.remote = append(view.remote, d)
		}
	}
	v.sub, v.src, v.view = sub, all, view
	return view
}
