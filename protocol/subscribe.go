package protocol

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

// MaxSubscribedDevices bounds one subscription's device list.
const MaxSubscribedDevices = 4096

// SubscribedDevice names one device of a subscription.
type SubscribedDevice struct {
	Type DeviceType
	ID   string
}

// Subscription is a decoded session.configure.subscribe. All is true for
// "*" (every device, the default); otherwise Devices lists the devices.
type Subscription struct {
	All     bool
	Devices []SubscribedDevice
}

// Wants reports whether the subscription takes the device.
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
	var list Value
	for it := v.Members(); it.Next(); {
		if !it.KeyIs("devices") {
			m.warnings().unknownField(at, &it)
			continue
		}
		list = it.Value()
	}
	c := at.child("devices")
	sub := &m.subscribe
	sub.All, sub.Devices = false, sub.Devices[:0]
	if b, ok := list.StringBytes(); ok && string(b) == "*" {
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
	var typ, id []byte
	for it := v.Members(); it.Next(); {
		switch {
		case it.KeyIs("device_type"):
			c := at.child("device_type")
			b, ok := it.Value().StringBytes()
			if !ok {
				return d, errAt(CodeInvalidValue, &c, "device_type must be a string like \"arm3\", got %s", it.Value().Kind())
			}
			typ = b
		case it.KeyIs("device_id"):
			c := at.child("device_id")
			b, ok := it.Value().StringBytes()
			if !ok || len(b) == 0 {
				return d, errAt(CodeInvalidValue, &c, "device_id must be a non-empty string like \"049D\", got %s", it.Value().Kind())
			}
			id = b
		default:
			m.warnings().unknownField(at, &it)
		}
	}
	if typ == nil || id == nil {
		return d, errAt(CodeInvalidValue, at, `each subscribed device needs "device_type" and "device_id", e.g. {"device_type": "arm3", "device_id": "049D"}`)
	}
	dt, ok := m.resolveType(typ)
	if !ok {
		c := at.child("device_type")
		return d, errAt(CodeInvalidValue, &c, "unknown device type %q: use arm3, grip or a configured alias", typ)
	}
	d.Type, d.ID = dt, string(id)
	return d, nil
}
