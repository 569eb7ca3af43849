package actors

import (
	"fmt"
	"testing"
)

// What the wire accepts at its documented limits (docs/protocol.md,
// "Effects": stiffness 0..20,000 N/m, damping 0..20 N·s/m, forces and
// amplitudes 0..20 N, frequency 1..500 Hz, ttl 1..3,600,000 ms), a
// session's arm renders: no declaration the decoder takes is refused by the
// loop. A friction of force 0 was (coulomb_n must be > 0, at the effect and
// not its member), though the docs and the schema allow it.
func TestEffectsAtTheWireLimitsRender(t *testing.T) {
	svc := startWith(t, Options{})
	dev := addArm(t, svc, simArm(0))
	sess, sink := open(t, svc, nil)
	for _, tc := range []struct{ name, effect string }{
		{"friction force 0", `{"id":"e","type":"friction","force":0}`},
		{"friction force 20", `{"id":"e","type":"friction","force":20,"slip_velocity":0.005}`},
		{"damper 0", `{"id":"e","type":"damper","scalar":0}`},
		{"damper 20", `{"id":"e","type":"damper","scalar":20,"vector":{"x":20,"y":20,"z":20}}`},
		{"spring stiffness 0", `{"id":"e","type":"spring","position":{"x":0,"y":0,"z":0.1},"stiffness":0}`},
		{"spring 20000", `{"id":"e","type":"spring","anchor":"plane","position":{"x":0,"y":0,"z":0.1},"direction":{"x":0,"y":0,"z":1},"stiffness":20000,"damping":20}`},
		{"wall stiffness 0", `{"id":"e","type":"wall","position":{"x":0,"y":0,"z":0.1},"normal":{"x":0,"y":0,"z":1},"stiffness":0}`},
		{"wall 20000", `{"id":"e","type":"wall","position":{"x":0,"y":0,"z":0.1},"normal":{"x":0,"y":0,"z":1},"stiffness":20000,"damping":20}`},
		{"vibration amplitude 0", `{"id":"e","type":"vibration","frequency":1,"amplitude":0}`},
		{"vibration 500 Hz 20 N", `{"id":"e","type":"vibration","frequency":500,"amplitude":20,"duration_ms":3600000}`},
		{"field force 0", `{"id":"e","type":"field","force":{"x":0,"y":0,"z":0},"origin":{"x":0,"y":0,"z":0.1},"radius":0.02}`},
		{"limit sphere stiffness 0", `{"id":"e","type":"limit_sphere","center":{"x":0,"y":0,"z":0.1},"radius":0.08,"stiffness":0}`},
		{"ttl 1 ms", `{"id":"e","type":"damper","scalar":1,"ttl_ms":1}`},
		{"ttl 3600000 ms", `{"id":"e","type":"damper","scalar":1,"ttl_ms":3600000}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0}}},"effects":{"clear":true,"set":[%s]}}]}`, dev.ID, tc.effect)
			if f := exchange(t, sess, sink, msg); len(f.errorCodes()) > 0 {
				t.Fatalf("%s: %v", tc.effect, f.raw)
			}
		})
	}
}
