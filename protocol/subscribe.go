package protocol

import (
	"slices"
)

// session.configure.subscribe (an extension): a session names the devices
// its frames carry, so a client that commands one arm of a hundred receives
// one arm. Without it (the default) every frame carries every device.
//
//	{"session": {"configure": {"subscribe": {"devices": [{"device_type": "arm3", "device_id": "049D"}]}}}}
//	{"session": {"configure": {"subscribe": {"devices": "*"}}}}   // every device again
//
// An empty list subscribes to no device (frames then carry only errors,
// warnings and session data). The subscription lasts until the next one;
// devices in it that are not connected appear once they are.
//
// "state" names the arm state fields the frames carry, in any order (the
// frame keeps its own); "*" or no "state" is every field. A client that
// reads the cursor's position and velocity sends
//
//	{"session": {"configure": {"subscribe": {"devices": "*", "state": ["cursor_position", "cursor_velocity"]}}}}
//
// Grips and every device's status always come whole; so do full-state
// frames' configs. Without "devices" a subscription takes every device.

// MaxSubscribedDevices bounds one subscription's device list.
const MaxSubscribedDevices = 4096

// SubscribedDevice names one device of a subscription.
type SubscribedDevice struct {
	Type DeviceType
	ID   string
}

// Subscription is a decoded session.configure.subscribe. All is true for
// "*" (every device, the default); otherwise Devices lists the devices.
// ArmState selects the arm state fields (zero: every one).
type Subscription struct {
	All      bool
	Devices  []SubscribedDevice
	ArmState StateFields
}

// StateFields selects arm state fields by their index in
// ArmStateFieldNames; the zero value is every field.
type StateFields uint16

// stateFieldsChosen marks a chosen set, so that choosing no field (an
// empty list: the state object empty) differs from the zero value.
const stateFieldsChosen StateFields = 1 << 15

// The arm state fields, in the order frames carry them.
const (
	FieldCursorPosition = iota
	FieldCursorVelocity
	FieldAngularPosition
	FieldAngularVelocity
	FieldBodyOrientation
	FieldCurrentCursorForce
	FieldCurrentCursorPosition
	FieldCurrentAngularPosition
	FieldCurrentAngularTorques
	FieldTransform
	FieldControlMode
	FieldControlDomain
	FieldCalibrationState
	armStateFields
)

var armStateFieldNames = [armStateFields]string{
	"cursor_position", "cursor_velocity", "angular_position", "angular_velocity", "body_orientation",
	"current_cursor_force", "current_cursor_position", "current_angular_position", "current_angular_torques",
	"transform", "control_mode", "control_domain", "calibration_state",
}

// ArmStateFieldNames lists the arm state fields a subscription may name,
// in frame order (the 3.x names). The list is a copy: the package's own
// table cannot be changed through it.
func ArmStateFieldNames() []string { return slices.Clone(armStateFieldNames[:]) }

// Has reports whether the selection takes field i (a Field constant).
func (f StateFields) Has(i int) bool { return f == 0 || f&(1<<i) != 0 }

// NeedsPose reports whether the selection takes a field derived from the
// arm's pose (joint angles and rates, body orientation, the angular
// targets): a reader of positions and velocities alone can skip the
// inverse kinematics.
func (f StateFields) NeedsPose() bool {
	return f.Has(FieldAngularPosition) || f.Has(FieldAngularVelocity) || f.Has(FieldBodyOrientation) ||
		f.Has(FieldCurrentAngularPosition) || f.Has(FieldCurrentAngularTorques)
}

// Wants reports whether the subscription takes the device of exactly this
// id (decoding keeps each id once with it). Which device an id a client
// gave selects is NamesDeviceID's rule, which also takes another case.
func (s *Subscription) Wants(t DeviceType, id string) bool {
	if s.All {
		return true
	}
	for _, d := range s.Devices {
		if d.Type == t && d.ID == id {
			return true
		}
	}
	return false
}

const subscribeExample = `{"devices": [{"device_type": "arm3", "device_id": "049D"}]} or {"devices": "*"}`

func (m *ClientMessage) decodeSubscribe(v Value, at *pathSeg) *Error {
	if err := expectObject(v, at, subscribeExample); err != nil {
		return err
	}
	var list, state Value
	var hasList, hasState bool
	for it := v.Members(); it.Next(); {
		switch {
		case it.KeyIs("devices"):
			list, hasList = it.Value(), true
		case it.KeyIs("state"):
			state, hasState = it.Value(), true
		default:
			m.warnings().unknownField(at, &it)
		}
	}
	c := at.child("devices")
	sub := &m.subscribe
	sub.All, sub.Devices, sub.ArmState = false, sub.Devices[:0], 0
	if !hasList && !hasState {
		return errAt(CodeInvalidValue, &c, `subscribe needs "devices": a list like [{"device_type": "arm3", "device_id": "049D"}] or "*", and/or "state": a list of arm state fields`)
	}
	if hasState {
		sc := at.child("state")
		f, err := decodeStateFields(state, &sc)
		if err != nil {
			return err
		}
		sub.ArmState = f
	}
	if b, ok := list.StringBytes(); !hasList || ok && string(b) == "*" {
		sub.All = true
		m.Session.Subscribe = sub
		return nil
	}
	if list.Kind() != KindArray {
		return errAt(CodeInvalidValue, &c, `subscribe needs "devices": a list like [{"device_type": "arm3", "device_id": "049D"}] or "*"`)
	}
	for el := list.Elements(); el.Next(); {
		ec := c.elem(el.Index())
		if len(sub.Devices) >= MaxSubscribedDevices {
			return errAt(CodeInvalidValue, &ec, "a subscription names at most %d devices", MaxSubscribedDevices)
		}
		d, err := m.decodeSubscribedDevice(el.Value(), &ec)
		if err != nil {
			return err
		}
		if !sub.Wants(d.Type, d.ID) {
			sub.Devices = append(sub.Devices, d)
		}
	}
	m.Session.Subscribe = sub
	return nil
}

func (m *ClientMessage) decodeSubscribedDevice(v Value, at *pathSeg) (SubscribedDevice, *Error) {
	var d SubscribedDevice
	if err := expectObject(v, at, `{"device_type": "arm3", "device_id": "049D"}`); err != nil {
		return d, err
	}
	// Each value is used when it is read: an escaped string lives in the
	// Doc's scratch space, which the next escaped string or key reuses.
	var typeGiven, idGiven, typeKnown bool
	var unknownType string
	for it := v.Members(); it.Next(); {
		switch {
		case (it.KeyIs("device_type") || it.KeyIs("device_id")) && (it.Superseded() || !it.Value().Exists()):
			// Given again later, or null (absent): the last occurrence
			// counts, and a missing member is reported below.
		case it.KeyIs("device_type"):
			c := at.child("device_type")
			b, ok := it.Value().StringBytes()
			if !ok {
				return d, errAt(CodeInvalidValue, &c, "device_type must be a string like \"arm3\", got %s", it.Value().Kind())
			}
			typeGiven = true
			if d.Type, typeKnown = m.resolveType(b); !typeKnown {
				unknownType = string(b)
			}
		case it.KeyIs("device_id"):
			c := at.child("device_id")
			b, ok := it.Value().StringBytes()
			if !ok || len(b) == 0 {
				return d, errAt(CodeInvalidValue, &c, "device_id must be a non-empty string like \"049D\", got %s", it.Value().Kind())
			}
			idGiven, d.ID = true, string(b)
		default:
			m.warnings().unknownField(at, &it)
		}
	}
	if !typeGiven || !idGiven {
		return d, errAt(CodeInvalidValue, at, `each subscribed device needs "device_type" and "device_id", e.g. {"device_type": "arm3", "device_id": "049D"}`)
	}
	if !typeKnown {
		c := at.child("device_type")
		return d, errAt(CodeInvalidValue, &c, "unknown device type %q: use "+typeNames, unknownType)
	}
	return d, nil
}

// decodeStateFields reads "state": "*" or a list of arm state field names.
func decodeStateFields(v Value, at *pathSeg) (StateFields, *Error) {
	if b, ok := v.StringBytes(); ok && string(b) == "*" {
		return 0, nil
	}
	if v.Kind() != KindArray {
		return 0, errAt(CodeInvalidValue, at, `state must be "*" or a list of arm state fields such as ["cursor_position", "cursor_velocity"], got %s`, v.Kind())
	}
	f := stateFieldsChosen
	for el := v.Elements(); el.Next(); {
		ec := at.elem(el.Index())
		b, ok := el.Value().StringBytes()
		if !ok {
			return 0, errAt(CodeInvalidValue, &ec, "a state field is a string such as \"cursor_position\", got %s", el.Value().Kind())
		}
		i := slices.Index(armStateFieldNames[:], string(b))
		if i < 0 {
			return 0, errAt(CodeInvalidValue, &ec, "unknown arm state field %q: one of %s", b, nameList(armStateFieldNames[:]))
		}
		f |= 1 << i
	}
	return f, nil
}
