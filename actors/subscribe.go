package actors

import (
	"fmt"

	"github.com/hapticd/hapticd/protocol"
)

// subscription is a session's session.configure.subscribe: the devices its
// frames carry (protocol/subscribe.go). The zero value carries every device,
// the default. It is owned by the session's actor.
type subscription struct {
	// armState selects the arm state fields of the frames answering
	// messages (zero: every field).
	armState protocol.StateFields
	subset   bool
	want     protocol.Subscription // when subset: the devices, copied
	// The filtered set of the last device set seen, reused until the
	// device set or the subscription changes: framing a subset costs no
	// allocation per frame.
	src, view *DeviceSet
}

// update takes a new subscription from a decoded message and warns in f
// about named devices that are not connected (they appear once they are).
func (s *subscription) update(sub *protocol.Subscription, devs *DeviceSet, f *protocol.Frame) {
	s.src, s.view = nil, nil
	s.armState = sub.ArmState
	if sub.All {
		s.subset = false
		s.want.Devices = s.want.Devices[:0]
		return
	}
	s.subset = true
	s.want.Devices = append(s.want.Devices[:0], sub.Devices...)
	for i, d := range s.want.Devices {
		if devs.Find(d.Type, d.ID) == nil {
			f.Warnings = append(f.Warnings, *protocol.Errorf(protocol.CodeUnknownDevice,
				fmt.Sprintf("session.configure.subscribe.devices[%d]", i),
				"no device with id %q is connected now; frames carry it once it is", d.ID))
		}
	}
}

// visible returns the devices this session's frames carry, out of all.
func (s *subscription) visible(all *DeviceSet) *DeviceSet {
	if !s.subset {
		return all
	}
	if all == s.src {
		return s.view
	}
	v := &DeviceSet{}
	for _, d := range all.arms {
		if s.want.Wants(d.Type, d.ID) {
			v.arms = append(v.arms, d)
		}
	}
	for _, d := range all.grips {
		if s.want.Wants(d.Type, d.ID) {
			v.grips = append(v.grips, d)
		}
	}
	s.src, s.view = all, v
	return v
}
