package transport

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw/hwtest"
)

// TestSDFEffectPushesTheSimulatedArm declares, over a real WebSocket, a
// spring holding the cursor where it is and an SDF sphere whose surface is
// 5 mm behind it (linear ease, 2 N over 2 cm): the arm settles where the
// spring balances the sphere's push, and the loop's rendered force of the
// sphere is the curve at the cursor's distance, along the sphere's normal.
func TestSDFEffectPushesTheSimulatedArm(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	id := ts.armIDs[0]
	c := ts.dial(t, ts.wsURL())
	c.expect()
	f := c.roundTrip(`{"session":{"configure":{"lease":{"ms":1000}}}}`)
	p0 := vec(path(c.roundTrip(effectsMsg(id, `{}`)), "arm3", 0, "state", "cursor_position"))
	const k, r, gap, rng, scale = 400.0, 0.03, 0.005, 0.02, 2.0
	hold := fmt.Sprintf(`{"id":"hold","type":"spring","position":{"x":%g,"y":%g,"z":%g},"stiffness":%g,"damping":5}`, p0[0], p0[1], p0[2], k)
	centre := [3]float64{p0[0] - r - gap, p0[1], p0[2]}
	ball := fmt.Sprintf(`{"id":"ball","type":"sdf","shape":{"primitive":"sphere","parameters":{"r":%g}},`+
		`"transform":{"position":{"x":%g,"y":%g,"z":%g}},"force_scale":%g,"range":%g,"ease":"linear","symmetry":"single"}`,
		r, centre[0], centre[1], centre[2], scale, rng)
	if f = c.roundTrip(effectsMsg(id, `{"set":[`+hold+`,`+ball+`]}`)); f["errors"] != nil {
		t.Fatalf("declaration refused: %v", f["errors"])
	}
	// The polls below renew the lease (an effects member is a command).
	// Equilibrium: k·s = scale·(1 − (gap + s)/range), s the shift along X.
	s := scale * (1 - gap/rng) / (k + scale/rng)
	wantF := k * s
	hwtest.EventuallyNil(t, 5*time.Second, "the arm settles against the sphere", func() error {
		resp := ts.do("GET", ts.base+"/arm3/"+id+"/effects", "")
		var got [3]float64
		for i := range 2 {
			if path(resp.data(), "effects", i, "id") == "ball" {
				got = vec(path(resp.data(), "effects", i, "rendered_force"))
			}
		}
		pos := vec(path(c.roundTrip(effectsMsg(id, `{}`)), "arm3", 0, "state", "cursor_position"))
		shift := pos[0] - p0[0]
		if math.Abs(got[0]-wantF) > 0.05 || math.Abs(got[1]) > 0.02 || math.Abs(got[2]) > 0.02 {
			return fmt.Errorf("the sphere renders %v N, want %.3f N along +X", got, wantF)
		}
		// The force at the cursor's distance, by the documented curve.
		d := math.Sqrt(sq(pos[0]-centre[0])+sq(pos[1]-centre[1])+sq(pos[2]-centre[2])) - r
		if curve := scale * (1 - d/rng); math.Abs(got[0]-curve) > 0.05 {
			return fmt.Errorf("at %.4f m from the surface the sphere renders %.3f N, the curve says %.3f N", d, got[0], curve)
		}
		if math.Abs(shift-s) > 0.001 {
			return fmt.Errorf("the cursor moved %.4f m along X, want %.4f m (spring against sphere)", shift, s)
		}
		return nil
	})
	// Removing the sphere lets the spring bring the cursor back.
	if f = c.roundTrip(effectsMsg(id, `{"remove":["ball"]}`)); f["errors"] != nil {
		t.Fatalf("remove refused: %v", f["errors"])
	}
	hwtest.EventuallyNil(t, 5*time.Second, "the spring alone holds the cursor where it was", func() error {
		pos := vec(path(c.roundTrip(effectsMsg(id, `{}`)), "arm3", 0, "state", "cursor_position"))
		if math.Abs(pos[0]-p0[0]) > 0.0005 {
			return fmt.Errorf("cursor at x %.4f, want %.4f", pos[0], p0[0])
		}
		return nil
	})
}

func sq(x float64) float64 { return x * x }

// TestSDFEffectBadInput: every malformed field of an sdf effect is an
// error entry that names its path, and the effects in force stay as they
// were.
func TestSDFEffectBadInput(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	id := ts.armIDs[0]
	c := ts.dial(t, ts.wsURL())
	c.expect()
	c.roundTrip(`{"session":{"configure":{"lease":{"ms":1000}}}}`)
	good := `{"id":"keep","type":"sdf","shape":"box","params":{"b":{"x":0.01,"y":0.01,"z":0.01}}}`
	if f := c.roundTrip(effectsMsg(id, `{"set":[`+good+`]}`)); effectCount(f) != 1 {
		t.Fatalf("setup: %v", f)
	}
	// The catalogue's other shapes are rendered too, in both forms.
	for i, shape := range []string{
		`"shape":{"primitive":"link","parameters":{"r1":0.02,"r2":0.005,"le":0.01}}`,
		`"shape":"box_frame","params":{"b":{"x":0.02,"y":0.02,"z":0.02},"e":0.002}`,
		`"shape":{"primitive":"plane","parameters":{"n":{"x":0,"y":0,"z":1},"h":-0.05}}`,
	} {
		e := fmt.Sprintf(`{"id":"extra%d","type":"sdf",%s}`, i, shape)
		if f := c.roundTrip(effectsMsg(id, `{"set":[`+e+`]}`)); f["errors"] != nil || effectCount(f) != 2 {
			t.Fatalf("%s: %v (count %v)", shape, f["errors"], effectCount(f))
		}
		c.roundTrip(effectsMsg(id, fmt.Sprintf(`{"remove":["extra%d"]}`, i)))
	}
	sphere := `"shape":{"primitive":"sphere","parameters":{"r":0.02}}`
	cases := []struct{ name, effect, code, path string }{
		{"no shape", `{"id":"s","type":"sdf"}`, "invalid_value", ".set[0]"},
		{"unknown primitive", `{"id":"s","type":"sdf","shape":{"primitive":"teapot","parameters":{}}}`, "invalid_value", ".set[0].shape.primitive"},
		{"a primitive the loop does not render", `{"id":"s","type":"sdf","shape":{"primitive":"solid_angle","parameters":{"c":{"x":0.6,"y":0.8},"r":0.02}}}`, "invalid_value", ".set[0]"},
		{"a frame scale the loop refuses", `{"id":"s","type":"sdf",` + sphere + `,"transform":{"scale":{"x":1e-9,"y":1e-9,"z":1e-9}}}`, "invalid_value", ".set[0].transform.scale"},
		{"a frame scale the loop refuses, large", `{"id":"s","type":"sdf",` + sphere + `,"transform":{"scale":{"x":1e4,"y":1e4,"z":1e4}}}`, "invalid_value", ".set[0].transform.scale"},
		{"a position too far for its scale", `{"id":"s","type":"sdf",` + sphere + `,"transform":{"position":{"x":50,"y":0,"z":0},"scale":{"x":1e-5,"y":1e-5,"z":1e-5}}}`, "invalid_value", ".set[0].transform.position"},
		{"negative radius", `{"id":"s","type":"sdf","shape":{"primitive":"sphere","parameters":{"r":-1}}}`, "out_of_range", ".set[0].shape.parameters.r"},
		{"flat form without params", `{"id":"s","type":"sdf","shape":"sphere"}`, "invalid_value", ".set[0].params"},
		{"range zero", `{"id":"s","type":"sdf",` + sphere + `,"range":0}`, "out_of_range", ".set[0].range"},
		{"force_scale too high", `{"id":"s","type":"sdf",` + sphere + `,"force_scale":1e6}`, "out_of_range", ".set[0].force_scale"},
		{"unknown ease", `{"id":"s","type":"sdf",` + sphere + `,"ease":"bounce"}`, "invalid_value", ".set[0].ease"},
		{"reverse_easing not a bool", `{"id":"s","type":"sdf",` + sphere + `,"reverse_easing":"yes"}`, "invalid_value", ".set[0].reverse_easing"},
		{"unknown symmetry", `{"id":"s","type":"sdf",` + sphere + `,"symmetry":"radial"}`, "invalid_value", ".set[0].symmetry"},
		{"unknown blend", `{"id":"s","type":"sdf",` + sphere + `,"blend":"max"}`, "invalid_value", ".set[0].blend"},
		{"non-uniform scale", `{"id":"s","type":"sdf",` + sphere + `,"transform":{"scale":{"x":1,"y":2,"z":1}}}`, "out_of_range", ".set[0].transform.scale"},
		{"capped cylinder without an axis", `{"id":"s","type":"sdf","shape":{"primitive":"capped_cylinder","parameters":{"a":{"x":0,"y":0,"z":0},"b":{"x":0,"y":0,"z":0},"r":0.02}}}`, "invalid_value", ".set[0].shape.parameters.b"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := c.roundTrip(effectsMsg(id, `{"set":[`+tc.effect+`]}`))
			codes := errorCodes(f)
			if len(codes) != 1 || codes[0] != tc.code {
				t.Fatalf("want one error %q, got %v (%v)", tc.code, codes, f["errors"])
			}
			want := "arm3[0].effects" + tc.path
			if p := path(f, "errors", 0, "path"); p != want {
				t.Fatalf("error path %v, want %s (%v)", p, want, f["errors"])
			}
			msg, _ := path(f, "errors", 0, "message").(string)
			if strings.Contains(msg, `"keep"`) {
				t.Fatalf("the error names the effect in force, not the one refused: %s", msg)
			}
			// The loop's own names are nothing the client sent.
			for _, internal := range []string{"dev_m_per_local", "to_local", "local_offset", "_m ="} {
				if strings.Contains(msg, internal) {
					t.Fatalf("the error names %q, a field of the loop's, not of the effect declared: %s", internal, msg)
				}
			}
			if n := effectCount(f); n != 1 {
				t.Fatalf("a refused declaration changed the effects in force: count %v", n)
			}
		})
	}
	// The loop's refusal of the second effect of a set names that effect,
	// in the error entry and in the event.
	ev := ts.dial(t, ts.eventsWS)
	f := c.roundTrip(effectsMsg(id, `{"set":[{"id":"fine","type":"sdf",`+sphere+`},{"id":"tiny","type":"sdf",`+sphere+`,"transform":{"scale":{"x":1e-9,"y":1e-9,"z":1e-9}}}]}`))
	msg, _ := path(f, "errors", 0, "message").(string)
	if p := path(f, "errors", 0, "path"); p != "arm3[0].effects.set[1].transform.scale" || !strings.Contains(msg, `"tiny"`) || strings.Contains(msg, `"keep"`) || strings.Contains(msg, `"fine"`) {
		t.Fatalf("error %v: want it at arm3[0].effects.set[1].transform.scale, naming tiny alone", f["errors"])
	}
	waitEvent(t, ev, "effect-refused", func(e map[string]any) bool {
		return path(e, "data", "effect_id") == "tiny" && path(e, "data", "code") == "invalid_value"
	})
}

// TestSDFShapeSizeErrorsNameTheFormSent: a shape parameter too large (for
// the loop's 10 m or the wire's 100 m) or too small is an error entry at
// the member the client sent, in the form it sent it: the nested
// {"shape": {"primitive", "parameters": {...}}} gets shape.parameters.x,
// the flat {"shape": name, "params": {...}} gets params.x. For every shape
// the loop renders and every parameter whose size is checked. The effect
// in force stays.
func TestSDFShapeSizeErrorsNameTheFormSent(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	c, id := dialKeepingASpring(t, ts)
	type param struct {
		name string
		kind string // "length", "offset", "point", "extents"
	}
	// Each shape's parameters in catalogue order, each with a good value.
	good := map[string]string{
		"length":  "0.02",
		"offset":  "-0.01",
		"point":   `{"x":0,"y":0.02,"z":0}`,
		"extents": `{"x":0.02,"y":0.02,"z":0.02}`,
	}
	shapes := []struct {
		primitive string
		params    []param
	}{
		{"sphere", []param{{"r", "length"}}},
		{"ellipsoid", []param{{"a", "extents"}}},
		{"box", []param{{"b", "extents"}}},
		{"rounded_box", []param{{"b", "extents"}, {"r", "length"}}},
		{"box_frame", []param{{"b", "extents"}, {"e", "length"}}},
		{"plane", []param{{"n", "normal"}, {"h", "offset"}}},
		{"capsule", []param{{"a", "point"}, {"b", "point"}, {"r", "length"}}},
		{"capped_cylinder", []param{{"a", "point"}, {"b", "point"}, {"r", "length"}}},
		{"capsule_vertical", []param{{"h", "length"}, {"r", "length"}}},
		{"capped_cylinder_vertical", []param{{"h", "length"}, {"r", "length"}}},
		{"torus", []param{{"r1", "length"}, {"r2", "length"}}},
		{"link", []param{{"r1", "length"}, {"r2", "length"}, {"le", "length"}}},
	}
	// What a bad value of each kind is, where the error is below the
	// parameter (a component, or nothing) and its code.
	type badValue struct {
		what, scalar, vector, code string
		component                  bool // the path names the vector's component
	}
	bads := []badValue{
		{"past the loop's 10 m", "50", `{"x":50,"y":0.02,"z":0.02}`, "invalid_value", false},
		{"past the wire's 100 m", "150", `{"x":150,"y":0.02,"z":0.02}`, "out_of_range", true},
		{"zero", "0", `{"x":0,"y":0.02,"z":0.02}`, "out_of_range", true},
	}
	for _, sh := range shapes {
		for bi, bad := range sh.params {
			if bad.kind == "normal" {
				continue // normalised: it has no size
			}
			for _, bv := range bads {
				if bv.what == "zero" && (bad.kind == "offset" || bad.kind == "point") {
					continue // zero is a place, not a size
				}
				var members []string
				for i, p := range sh.params {
					v := good[p.kind]
					if p.kind == "normal" {
						v = `{"x":0,"y":0,"z":1}`
					}
					if p.kind == "point" && p.name == "a" {
						v = `{"x":0,"y":0,"z":0}`
					}
					if i == bi {
						v = bv.scalar
						if p.kind == "point" || p.kind == "extents" {
							v = bv.vector
						}
					}
					members = append(members, fmt.Sprintf("%q:%s", p.name, v))
				}
				params := "{" + strings.Join(members, ",") + "}"
				for _, form := range []struct{ name, shape, prefix string }{
					{"nested", `"shape":{"primitive":"` + sh.primitive + `","parameters":` + params + `}`, "shape.parameters."},
					{"flat", `"shape":"` + sh.primitive + `","params":` + params, "params."},
				} {
					t.Run(sh.primitive+"/"+bad.name+"/"+bv.what+"/"+form.name, func(t *testing.T) {
						renewKeptSpring(t, c, id)
						f := c.roundTrip(effectsMsg(id, `{"set":[{"id":"s","type":"sdf",`+form.shape+`}]}`))
						if codes := errorCodes(f); len(codes) != 1 || codes[0] != bv.code {
							t.Fatalf("want one %s error, got %v", bv.code, f["errors"])
						}
						want := "arm3[0].effects.set[0]." + form.prefix + bad.name
						if bv.component && (bad.kind == "point" || bad.kind == "extents") {
							want += ".x"
						}
						if p := path(f, "errors", 0, "path"); p != want {
							t.Fatalf("error path %v, want %s (%v)", p, want, f["errors"])
						}
						msg, _ := path(f, "errors", 0, "message").(string)
						other := "params."
						if form.name == "flat" {
							other = "shape.parameters"
						}
						if strings.Contains(msg, other) {
							t.Fatalf("the %s form's error names %q, which the client did not send: %s", form.name, other, msg)
						}
						if n := effectCount(f); n != 1 {
							t.Fatalf("a refused declaration changed the effects in force: count %v", n)
						}
					})
				}
			}
		}
	}
}
