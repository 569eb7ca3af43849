package protocol

import (
	"encoding/json"
	"testing"
)

// Benchmarks report "x_baseline": time per operation divided by that of
// encoding/json doing the same job (decode into a mirror struct, encode the
// same frame), measured in the same run, so the number survives a noisy
// shared machine.

var typicalMessage = []byte(`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0.125,"y":-0.5,"z":1.5}}}}]}`)

// mirrorMessage is what a client would unmarshal typicalMessage into with
// encoding/json: the baseline.
type mirrorMessage struct {
	Arm3 []struct {
		DeviceID string `json:"device_id"`
		Commands struct {
			SetCursorForce *struct {
				Vector *Vec3 `json:"vector"`
				Values *Vec3 `json:"values"`
			} `json:"set_cursor_force"`
		} `json:"commands"`
	} `json:"arm3"`
}

func BenchmarkDecodeClientMessage(b *testing.B) {
	types := aliasTable(b)
	var baseNs float64
	b.Run("baseline=encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(typicalMessage)))
		for b.Loop() {
			var m mirrorMessage
			if err := json.Unmarshal(typicalMessage, &m); err != nil {
				b.Fatal(err)
			}
		}
		baseNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("protocol", func(b *testing.B) {
		var m ClientMessage
		b.ReportAllocs()
		b.SetBytes(int64(len(typicalMessage)))
		for b.Loop() {
			if errs := DecodeClientMessage(typicalMessage, types, &m); len(errs) != 0 {
				b.Fatal(errs)
			}
		}
		if baseNs > 0 {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/baseNs, "x_baseline")
		}
	})
}

func BenchmarkDecodeConfigureEveryTick(b *testing.B) {
	// Clients may re-send configure at 1 kHz; entries are boxed into the
	// Entry interface, which allocates.
	msg := []byte(`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}}},"configure":{"preset":{"preset":"arm_front"},"filters":{"damping":{"scalar":2},"force_gate":{"gain":0.3}}}}]}`)
	types := aliasTable(b)
	var m ClientMessage
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if errs := DecodeClientMessage(msg, types, &m); len(errs) != 0 {
			b.Fatal(errs)
		}
	}
}

// mirrorArm is the baseline's view of one arm element.
type mirrorArm struct {
	DeviceID string `json:"device_id"`
	State    struct {
		CursorPosition     Vec3    `json:"cursor_position"`
		CursorVelocity     Vec3    `json:"cursor_velocity"`
		AngularPosition    Angles3 `json:"angular_position"`
		AngularVelocity    Angles3 `json:"angular_velocity"`
		BodyOrientation    Quat    `json:"body_orientation"`
		CurrentCursorForce Vec3    `json:"current_cursor_force"`
		ControlMode        string  `json:"control_mode"`
		ControlDomain      string  `json:"control_domain"`
	} `json:"state"`
	Status struct {
		Calibrated  bool `json:"calibrated"`
		InUse       bool `json:"in_use"`
		Ready       bool `json:"ready"`
		Started     bool `json:"started"`
		PowerSupply bool `json:"power_supply"`
	} `json:"status"`
}

func BenchmarkAppendFrame(b *testing.B) {
	for _, arms := range []int{1, 64} {
		f := &Frame{SessionID: 1}
		mirror := struct {
			SessionID uint64      `json:"session_id"`
			Arm3      []mirrorArm `json:"arm3"`
			Grip      []mirrorArm `json:"grip"`
		}{SessionID: 1, Grip: []mirrorArm{}}
		for i := 0; i < arms; i++ {
			a := ArmFrame{DeviceID: "049D", State: ArmState{CursorPosition: Vec3{X: 0.0123, Y: -0.0456, Z: 0.1789}, CursorVelocity: Vec3{X: 0.001}, BodyOrientation: Quat{W: 1}, CurrentCursorForce: Vec3{Z: 1.5}, ControlMode: ControlForce}}
			f.Arms = append(f.Arms, a)
			var m mirrorArm
			m.DeviceID, m.State.CursorPosition, m.State.CursorVelocity = a.DeviceID, a.State.CursorPosition, a.State.CursorVelocity
			m.State.BodyOrientation, m.State.CurrentCursorForce, m.State.ControlMode, m.State.ControlDomain = a.State.BodyOrientation, a.State.CurrentCursorForce, "force", "cartesian"
			mirror.Arm3 = append(mirror.Arm3, m)
		}
		name := map[int]string{1: "arms=1", 64: "arms=64"}[arms]
		b.Run(name, func(b *testing.B) {
			var baseNs float64
			b.Run("baseline=encoding_json", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := json.Marshal(&mirror); err != nil {
						b.Fatal(err)
					}
				}
				baseNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			})
			b.Run("protocol", func(b *testing.B) {
				buf := AppendFrame(nil, f, nil)
				b.ReportAllocs()
				b.SetBytes(int64(len(buf)))
				for b.Loop() {
					buf = AppendFrame(buf[:0], f, nil)
				}
				if baseNs > 0 {
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/baseNs, "x_baseline")
				}
			})
		})
	}
}

// extArmFrame is a state frame of one arm rendering a session's effects
// and navigation, with the state's numbers as the loop leaves them (full
// float64 digits): four wall proxies and the bubble's state.
func extArmFrame() *Frame {
	x := &ArmStateExtensions{HasEffects: true, EffectCount: 4, HasPassivity: true,
		Passivity:     PassivityState{EnergyJ: -0.0012345678901234, AddedDampingNsPerM: 0.5},
		HasNavigation: true, Navigation: NavigationState{
			CenterM: Vec3{X: 0.0123456789012, Y: -0.01, Z: 0.0300000000007}, VelocityZoneWidthM: 0.03,
			CollisionExtraInflate: 0.002, Zone: 1, WorkspaceOffsetM: Vec3{X: 0.10000000000000009, Y: -0.2, Z: 0.3},
			VelocityMps: Vec3{X: 0.012345678901234, Y: 0.5, Z: -0.25}}}
	for i, id := range []string{"floor", "left", "right", "ceiling"} {
		x.Proxies = append(x.Proxies, EffectProxy{ID: id, Contact: i%2 == 0,
			PositionM: Vec3{X: 0.012345678901234567 * float64(i+1), Y: 0.15000000000000002, Z: 0.12345678901230001}})
	}
	return &Frame{SessionID: 1, Arms: []ArmFrame{{DeviceID: "049D", State: ArmState{
		CursorPosition: Vec3{X: 0.0123, Y: -0.0456, Z: 0.1789}, BodyOrientation: Quat{W: 1},
		CurrentCursorForce: Vec3{Z: 1.5}, ControlMode: ControlForce, Ext: x}}}}
}

// BenchmarkAppendFrameWithExtensions encodes extArmFrame: what writing the
// bubble's centre and the proxies exactly (float64) costs beside float32.
func BenchmarkAppendFrameWithExtensions(b *testing.B) {
	f := extArmFrame()
	buf := AppendFrame(nil, f, nil)
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		buf = AppendFrame(buf[:0], f, nil)
	}
}
