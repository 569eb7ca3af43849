package protocol

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/hapticd/hapticd/protocol/space"
)

const (
	wallJSON   = `{"id":"floor","type":"wall","position":{"x":0,"y":0,"z":0.1},"normal":{"x":0,"y":0,"z":2},"stiffness":2000,"damping":1}`
	springJSON = `{"id":"s","type":"spring","anchor":"line","position":{"x":0,"y":0,"z":0},"direction":{"x":0,"y":3,"z":0},"stiffness":300}`
)

func TestDecodeEffectsValid(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		check func(t *testing.T, u EffectsUpdate)
	}{
		{"wall normalises its normal", `{"set":[` + wallJSON + `]}`, func(t *testing.T, u EffectsUpdate) {
			w := u.Set[0].Wall
			if u.Set[0].Type != EffectWall || w.Normal != (Vec3{Z: 1}) || w.StiffnessNPerM != 2000 || w.DampingNsPerM != 1 || w.PositionM.Z != 0.1 {
				t.Fatalf("%+v", u.Set[0])
			}
		}},
		{"spring to a line", `{"set":[` + springJSON + `]}`, func(t *testing.T, u EffectsUpdate) {
			s := u.Set[0].Spring
			if s.Anchor != SpringToLine || s.Direction != (Vec3{Y: 1}) || s.StiffnessNPerM != 300 || s.DampingNsPerM != 0 {
				t.Fatalf("%+v", s)
			}
		}},
		{"spring defaults to a point", `{"set":[{"id":"p","type":"spring","position":{"x":1,"y":2,"z":3},"stiffness":10}]}`, func(t *testing.T, u EffectsUpdate) {
			if u.Set[0].Spring.Anchor != SpringToPoint {
				t.Fatal(u.Set[0].Spring.Anchor)
			}
		}},
		{"damper per axis", `{"set":[{"id":"d","type":"damper","vector":{"x":1,"y":2,"z":3}}]}`, func(t *testing.T, u EffectsUpdate) {
			d := u.Set[0].Damper
			if !d.HasVector || d.HasScalar || d.MatrixNsPerM[1][1] != 2 || d.MatrixNsPerM[0][1] != 0 {
				t.Fatalf("%+v", d)
			}
		}},
		{"friction default slip", `{"set":[{"id":"f","type":"friction","force":0.5}]}`, func(t *testing.T, u EffectsUpdate) {
			if u.Set[0].Friction.SlipVelocityMps != FrictionSlipDefaultMps {
				t.Fatal(u.Set[0].Friction)
			}
		}},
		{"limit box rotated, keep outside", `{"set":[{"id":"b","type":"limit_box","center":{"x":0,"y":0,"z":0},"half_extents":{"x":0.1,"y":0.2,"z":0.3},"rotation":{"w":2,"x":0,"y":0,"z":0},"keep":"outside","stiffness":500}]}`, func(t *testing.T, u EffectsUpdate) {
			b := u.Set[0].LimitBox
			if b.Keep != KeepOutside || b.Rotation != (Quat{W: 1}) || b.Axes != IdentityMat3() {
				t.Fatalf("%+v", b)
			}
		}},
		{"field with jacobian", `{"set":[{"id":"m","type":"field","force":{"x":1,"y":0,"z":0},"jacobian":[[-100,0,0],[0,-100,0],[0,0,-50]],"origin":{"x":0,"y":0,"z":0},"radius":0.02,"valid_ms":50,"ttl_ms":1000}]}`, func(t *testing.T, u EffectsUpdate) {
			f := u.Set[0].Field
			if f.JacobianNPerM[2][2] != -50 || f.ValidMs != 50 || u.Set[0].TTLMs != 1000 || f.RadiusM != 0.02 {
				t.Fatalf("%+v", f)
			}
		}},
		{"vibration defaults to z", `{"set":[{"id":"v","type":"vibration","frequency":150,"amplitude":0.5,"duration_ms":200}]}`, func(t *testing.T, u EffectsUpdate) {
			v := u.Set[0].Vibration
			if v.Direction != (Vec3{Z: 1}) || v.DurationMs != 200 {
				t.Fatalf("%+v", v)
			}
		}},
		{"sdf nested shape", `{"set":[{"id":"ball","type":"sdf","shape":{"primitive":"sphere","parameters":{"r":0.04}},"force_scale":2,"range":0.02,"ease":"cubic","symmetry":"mirror"}]}`, func(t *testing.T, u EffectsUpdate) {
			s := u.Set[0].SDF
			if s.Shape.Primitive != "sphere" || s.Shape.Params.R != 0.04 || s.Ease != "cubic" || s.Symmetry != "mirror" || s.Blend != "additive" || s.FrameMPerLocalM != 1 {
				t.Fatalf("%+v", s)
			}
		}},
		{"sdf exponential ease, reversed", `{"set":[{"id":"e","type":"sdf","shape":{"primitive":"plane","parameters":{"n":{"x":0,"y":0,"z":1},"h":0}},"ease":"exponential","reverse_easing":true,"symmetry":"align"}]}`, func(t *testing.T, u EffectsUpdate) {
			if s := u.Set[0].SDF; s.Ease != "exponential" || !s.ReverseEasing || s.Symmetry != "align" {
				t.Fatalf("%+v", s)
			}
		}},
		{"sdf flat form (the vendor's notes)", `{"set":[{"id":"slab","type":"sdf","shape":"box","params":{"b":{"x":0.1,"y":0.1,"z":0.01}},"transform":{"position":{"x":0,"y":0,"z":0.05},"scale":{"x":2,"y":2,"z":2}}}]}`, func(t *testing.T, u EffectsUpdate) {
			s := u.Set[0].SDF
			if s.Shape.Primitive != "box" || s.Shape.Params.B.Z != 0.01 || s.RangeM != SDFRangeDefaultM || s.FrameMPerLocalM != 2 {
				t.Fatalf("%+v", s)
			}
		}},
		{"remove and clear", `{"clear":true,"remove":["a","b"]}`, func(t *testing.T, u EffectsUpdate) {
			if !u.Clear || len(u.Remove) != 2 || u.Remove[1] != "b" || len(u.Set) != 0 {
				t.Fatalf("%+v", u)
			}
		}},
		{"empty is a no-op", `{}`, func(t *testing.T, u EffectsUpdate) {
			if !u.Empty() {
				t.Fatalf("%+v", u)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, _, err := DecodeEffectsUpdate([]byte(tt.body), "")
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, u)
		})
	}
}

func TestDecodeEffectsInvalid(t *testing.T) {
	many := make([]string, MaxEffectsPerArm+1)
	for i := range many {
		many[i] = `{"id":"d` + string(rune('a'+i)) + `","type":"damper","scalar":1}`
	}
	tests := []struct {
		name, body string
		code       Code
		path, msg  string
	}{
		{"not an object", `[]`, CodeInvalidValue, "", "must be an object"},
		{"set not an array", `{"set":{}}`, CodeInvalidValue, "set", "set must be an array"},
		{"too many", `{"set":[` + strings.Join(many, ",") + `]}`, CodeTooManyEffects, "set", "at most 16"},
		{"no id", `{"set":[{"type":"wall"}]}`, CodeInvalidValue, "set[0]", `needs "id"`},
		{"bad id characters", `{"set":[{"id":"a b","type":"damper","scalar":1}]}`, CodeInvalidValue, "set[0].id", "only letters"},
		{"id too long", `{"set":[{"id":"` + strings.Repeat("x", 65) + `","type":"damper","scalar":1}]}`, CodeInvalidValue, "set[0].id", "1 to 64"},
		{"duplicate id", `{"set":[{"id":"a","type":"damper","scalar":1},{"id":"a","type":"damper","scalar":2}]}`, CodeInvalidValue, "set[1].id", "declared twice"},
		{"set and removed", `{"remove":["a"],"set":[{"id":"a","type":"damper","scalar":1}]}`, CodeInvalidValue, "set[0].id", "both set and removed"},
		{"unknown type", `{"set":[{"id":"a","type":"magnet"}]}`, CodeInvalidValue, "set[0].type", `unknown effect type "magnet"`},
		{"wall without normal", `{"set":[{"id":"w","type":"wall","position":{"x":0,"y":0,"z":0},"stiffness":10}]}`, CodeInvalidValue, "set[0]", `needs "normal"`},
		{"wall zero normal", `{"set":[{"id":"w","type":"wall","position":{"x":0,"y":0,"z":0},"normal":{"x":0,"y":0,"z":0},"stiffness":10}]}`, CodeOutOfRange, "set[0].normal", "non-zero"},
		{"stiffness too high", `{"set":[{"id":"w","type":"wall","position":{"x":0,"y":0,"z":0},"normal":{"x":0,"y":0,"z":1},"stiffness":20001}]}`, CodeOutOfRange, "set[0].stiffness", "out of range 0..20000"},
		{"stiffness a string", `{"set":[{"id":"w","type":"wall","position":{"x":0,"y":0,"z":0},"normal":{"x":0,"y":0,"z":1},"stiffness":"hard"}]}`, CodeInvalidValue, "set[0].stiffness", "must be a number"},
		{"stiffness overflows", `{"set":[{"id":"w","type":"wall","position":{"x":0,"y":0,"z":0},"normal":{"x":0,"y":0,"z":1},"stiffness":1e999}]}`, CodeInvalidValue, "set[0].stiffness", "not a number a float64 holds"},
		{"damping too high", `{"set":[{"id":"w","type":"wall","position":{"x":0,"y":0,"z":0},"normal":{"x":0,"y":0,"z":1},"stiffness":1,"damping":21}]}`, CodeOutOfRange, "set[0].damping", "out of range 0..20"},
		{"position incomplete", `{"set":[{"id":"w","type":"wall","position":{"x":0,"y":0},"normal":{"x":0,"y":0,"z":1},"stiffness":1}]}`, CodeInvalidValue, "set[0].position", "needs all of"},
		{"position far away", `{"set":[{"id":"w","type":"wall","position":{"x":0,"y":0,"z":1000},"normal":{"x":0,"y":0,"z":1},"stiffness":1}]}`, CodeOutOfRange, "set[0].position.z", "out of range"},
		{"line spring without direction", `{"set":[{"id":"s","type":"spring","anchor":"line","position":{"x":0,"y":0,"z":0},"stiffness":1}]}`, CodeInvalidValue, "set[0]", `needs "direction"`},
		{"unknown anchor", `{"set":[{"id":"s","type":"spring","anchor":"curve","position":{"x":0,"y":0,"z":0},"stiffness":1}]}`, CodeInvalidValue, "set[0].anchor", "not one of point, line, plane"},
		{"damper empty", `{"set":[{"id":"d","type":"damper"}]}`, CodeInvalidValue, "set[0]", `needs "scalar" or "vector"`},
		{"damper negative axis", `{"set":[{"id":"d","type":"damper","vector":{"x":1,"y":-1,"z":0}}]}`, CodeOutOfRange, "set[0].vector.y", "out of range"},
		{"friction too strong", `{"set":[{"id":"f","type":"friction","force":21}]}`, CodeOutOfRange, "set[0].force", "out of range 0..20"},
		{"sphere zero radius", `{"set":[{"id":"l","type":"limit_sphere","center":{"x":0,"y":0,"z":0},"radius":0,"stiffness":1}]}`, CodeOutOfRange, "set[0].radius", "above 0"},
		{"keep sideways", `{"set":[{"id":"l","type":"limit_sphere","center":{"x":0,"y":0,"z":0},"radius":1,"keep":"sideways","stiffness":1}]}`, CodeInvalidValue, "set[0].keep", "not one of inside, outside"},
		{"box flat", `{"set":[{"id":"b","type":"limit_box","center":{"x":0,"y":0,"z":0},"half_extents":{"x":0.1,"y":0,"z":0.1},"stiffness":1}]}`, CodeOutOfRange, "set[0].half_extents.y", "above 0"},
		{"box zero rotation", `{"set":[{"id":"b","type":"limit_box","center":{"x":0,"y":0,"z":0},"half_extents":{"x":0.1,"y":0.1,"z":0.1},"rotation":{"w":0,"x":0,"y":0,"z":0},"stiffness":1}]}`, CodeOutOfRange, "set[0].rotation", "non-zero quaternion"},
		{"field without radius", `{"set":[{"id":"m","type":"field","origin":{"x":0,"y":0,"z":0}}]}`, CodeInvalidValue, "set[0]", `needs "radius"`},
		{"field force too big", `{"set":[{"id":"m","type":"field","force":{"x":30,"y":0,"z":0},"origin":{"x":0,"y":0,"z":0},"radius":1}]}`, CodeOutOfRange, "set[0].force", "over 20 N"},
		{"field jacobian short row", `{"set":[{"id":"m","type":"field","jacobian":[[1,0,0],[0,1],[0,0,1]],"origin":{"x":0,"y":0,"z":0},"radius":1}]}`, CodeInvalidValue, "set[0].jacobian[1]", "3 numbers"},
		{"field jacobian too stiff", `{"set":[{"id":"m","type":"field","jacobian":[[1,0,0],[0,1,0],[0,0,-30000]],"origin":{"x":0,"y":0,"z":0},"radius":1}]}`, CodeOutOfRange, "set[0].jacobian[2][2]", "out of range"},
		{"field stale forever", `{"set":[{"id":"m","type":"field","origin":{"x":0,"y":0,"z":0},"radius":1,"valid_ms":20000}]}`, CodeOutOfRange, "set[0].valid_ms", "out of range 1..10000"},
		{"vibration too fast", `{"set":[{"id":"v","type":"vibration","frequency":900,"amplitude":1}]}`, CodeOutOfRange, "set[0].frequency", "out of range 1..500"},
		{"vibration no amplitude", `{"set":[{"id":"v","type":"vibration","frequency":100}]}`, CodeInvalidValue, "set[0]", `needs "amplitude"`},
		{"ttl fractional", `{"set":[{"id":"d","type":"damper","scalar":1,"ttl_ms":1.5}]}`, CodeInvalidValue, "set[0].ttl_ms", "whole number"},
		{"ttl zero", `{"set":[{"id":"d","type":"damper","scalar":1,"ttl_ms":0}]}`, CodeOutOfRange, "set[0].ttl_ms", "out of range 1..3600000"},
		{"sdf unknown primitive", `{"set":[{"id":"s","type":"sdf","shape":{"primitive":"teapot","parameters":{}}}]}`, CodeInvalidValue, "set[0].shape.primitive", `unknown SDF primitive "teapot"`},
		{"sdf missing parameter", `{"set":[{"id":"s","type":"sdf","shape":{"primitive":"capsule","parameters":{"a":{"x":0,"y":0,"z":0},"r":0.01}}}]}`, CodeInvalidValue, "set[0].shape.parameters", `"b" is missing`},
		{"sdf negative radius", `{"set":[{"id":"s","type":"sdf","shape":{"primitive":"sphere","parameters":{"r":-1}}}]}`, CodeOutOfRange, "set[0].shape.parameters.r", "above 0"},
		{"sdf flat without params", `{"set":[{"id":"s","type":"sdf","shape":"sphere"}]}`, CodeInvalidValue, "set[0].params", "needs parameters r"},
		{"sdf non-uniform scale", `{"set":[{"id":"s","type":"sdf","shape":"sphere","params":{"r":1},"transform":{"scale":{"x":1,"y":2,"z":1}}}]}`, CodeOutOfRange, "set[0].transform.scale", "uniform"},
		{"sdf unknown ease", `{"set":[{"id":"s","type":"sdf","shape":"sphere","params":{"r":1},"ease":"bounce"}]}`, CodeInvalidValue, "set[0].ease", "not one of linear"},
		{"sdf unknown blend", `{"set":[{"id":"s","type":"sdf","shape":"sphere","params":{"r":1},"blend":"max"}]}`, CodeInvalidValue, "set[0].blend", "not one of additive"},
		{"remove not strings", `{"remove":[1]}`, CodeInvalidValue, "remove[0]", "must be a string"},
		{"remove twice", `{"remove":["a","a"]}`, CodeInvalidValue, "remove[1]", "listed twice"},
		{"clear not a bool", `{"clear":"yes"}`, CodeInvalidValue, "clear", "true or false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := DecodeEffectsUpdate([]byte(tt.body), "")
			if err == nil {
				t.Fatal("accepted")
			}
			if err.Code != tt.code || err.Path != tt.path || !strings.Contains(err.Message, tt.msg) {
				t.Fatalf("got %s @%q %q; want %s @%q containing %q", err.Code, err.Path, err.Message, tt.code, tt.path, tt.msg)
			}
		})
	}
}

func TestDecodeEffectsWarnsAboutUnknownFields(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"a member no type reads", `{"set":[{"id":"d","type":"damper","scalar":1,"normal":{"x":0,"y":0,"z":1}}],"mode":1}`,
			"unknown_field@mode unknown_field@set[0].normal"},
		// "params" belongs to the flat form only: beside a nested shape it
		// is ignored, and the client is told.
		{"params beside a nested shape", `{"set":[{"id":"s","type":"sdf","shape":{"primitive":"sphere","parameters":{"r":0.05}},"params":{"r":0.5}}]}`,
			"unknown_field@set[0].params"},
		{"params with the flat form", `{"set":[{"id":"s","type":"sdf","shape":"sphere","params":{"r":0.05}}]}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, warns, err := DecodeEffectsUpdate([]byte(tc.body), "")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range warns {
				got = append(got, string(w.Code)+"@"+w.Path)
			}
			if strings.Join(got, " ") != tc.want {
				t.Fatalf("warnings %v, want %q", got, tc.want)
			}
		})
	}
}

// allEffectsBody declares one effect of every type.
const allEffectsBody = `{"clear":true,"remove":["old"],"set":[` +
	springJSON + `,` + wallJSON + `,` +
	`{"id":"pl","type":"spring","anchor":"plane","position":{"x":0,"y":0,"z":0.1},"direction":{"x":0,"y":0,"z":1},"stiffness":100,"damping":2},` +
	`{"id":"pt","type":"spring","position":{"x":0.01,"y":0,"z":0.1},"stiffness":100},` +
	`{"id":"d","type":"damper","scalar":1,"vector":{"x":0,"y":2,"z":0}},` +
	`{"id":"f","type":"friction","force":0.4,"slip_velocity":0.01,"ttl_ms":500},` +
	`{"id":"ls","type":"limit_sphere","center":{"x":0,"y":0,"z":0.1},"radius":0.08,"keep":"inside","stiffness":1500,"damping":3},` +
	`{"id":"lb","type":"limit_box","center":{"x":0,"y":0,"z":0.1},"half_extents":{"x":0.05,"y":0.06,"z":0.07},"rotation":{"w":0.9238795325112867,"x":0,"y":0,"z":0.3826834323650898},"keep":"outside","stiffness":800},` +
	`{"id":"m","type":"field","force":{"x":0.5,"y":0,"z":-1},"jacobian":[[-200,10,0],[10,-200,0],[0,0,-50]],"origin":{"x":0.01,"y":0.02,"z":0.1},"radius":0.03,"valid_ms":80},` +
	`{"id":"v","type":"vibration","frequency":120,"amplitude":0.3,"duration_ms":150,"direction":{"x":1,"y":0,"z":0}},` +
	`{"id":"sd","type":"sdf","shape":{"primitive":"capped_torus","parameters":{"r1":0.05,"r2":0.01,"sc":{"x":0.6,"y":0.8}}},"transform":{"position":{"x":0,"y":0,"z":0.1},"rotation":{"w":0,"x":1,"y":0,"z":0},"scale":{"x":0.5,"y":0.5,"z":0.5}},"force_scale":3,"range":0.02,"ease":"smoothstep","reverse_easing":true,"symmetry":"align","blend":"additive"}]}`

func TestEffectsRoundTrip(t *testing.T) {
	u, warns, err := DecodeEffectsUpdate([]byte(allEffectsBody), "")
	if err != nil || len(warns) != 0 {
		t.Fatal(err, warns)
	}
	if len(u.Set) != 11 {
		t.Fatalf("%d effects", len(u.Set))
	}
	seen := map[EffectType]bool{}
	for _, e := range u.Set {
		seen[e.Type] = true
	}
	for i := range EffectTypeNames() {
		if !seen[EffectType(i+1)] {
			t.Errorf("the body misses type %s", EffectType(i+1))
		}
	}
	enc := u.AppendJSON(nil)
	if !json.Valid(enc) {
		t.Fatalf("invalid JSON %s", enc)
	}
	again, warns, err := DecodeEffectsUpdate(enc, "")
	if err != nil || len(warns) != 0 {
		t.Fatalf("%s: %v %v", enc, err, warns)
	}
	if enc2 := again.AppendJSON(nil); string(enc2) != string(enc) {
		t.Fatalf("not stable:\n%s\n%s", enc, enc2)
	}
	for i := range u.Set {
		if u.Set[i] != again.Set[i] {
			t.Errorf("effect %s changed in the round trip:\n%+v\n%+v", u.Set[i].ID, u.Set[i], again.Set[i])
		}
	}
}

func near(a, b Vec3) bool {
	return math.Abs(a.X-b.X) < 1e-9 && math.Abs(a.Y-b.Y) < 1e-9 && math.Abs(a.Z-b.Z) < 1e-9
}

// TestEffectsToDevice checks each conversion against the View that maps
// the session's space: a point on a declared plane maps onto the device
// plane, forces keep their magnitude, lengths scale by the workspace.
func TestEffectsToDevice(t *testing.T) {
	basis, err := space.ParsePermutation("-XZY") // mirrors: Y up, handedness flipped
	if err != nil {
		t.Fatal(err)
	}
	mount := space.Transform{Position: Vec3{X: 0.1, Y: -0.2, Z: 0.3}, Rotation: Quat{W: 0.9238795325112867, Z: 0.3826834323650898}, Scale: Vec3{X: 2, Y: 2, Z: 2}}
	view := space.NewView(basis, mount)
	u, _, derr := DecodeEffectsUpdate([]byte(allEffectsBody), "")
	if derr != nil {
		t.Fatal(derr)
	}
	byID := map[string]Effect{}
	for _, e := range u.Set {
		d := e.ToDevice(&view)
		if !d.InDevice || d.ToDevice(&view) != d {
			t.Fatalf("%s: ToDevice is not idempotent", e.ID)
		}
		byID[e.ID] = d
	}
	app := map[string]Effect{}
	for _, e := range u.Set {
		app[e.ID] = e
	}

	// Wall: points on the declared plane map onto the device plane, and a
	// point on the free side stays on the free side.
	wa, wd := app["floor"].Wall, byID["floor"].Wall
	for _, p := range []Vec3{{X: 1, Y: 2, Z: 0.1}, {X: -3, Y: 0.5, Z: 0.1}} {
		pd := view.PositionToDevice(p)
		if s := dot3(sub3(pd, wd.PositionM), wd.Normal); math.Abs(s) > 1e-9 {
			t.Fatalf("a point on the wall is %g off the device plane", s)
		}
	}
	free := view.PositionToDevice(add3(wa.PositionM, wa.Normal))
	if dot3(sub3(free, wd.PositionM), wd.Normal) <= 0 {
		t.Fatal("the free side flipped")
	}
	if math.Abs(norm3(wd.Normal)-1) > 1e-12 || wd.StiffnessNPerM != wa.StiffnessNPerM {
		t.Fatalf("%+v", wd)
	}

	// Line spring: the direction maps like a velocity.
	if got, want := byID["s"].Spring.Direction, unit3(view.VelocityToDevice(Vec3{Y: 1})); !near(got, want) {
		t.Fatalf("line direction %v, want %v", got, want)
	}

	// Sphere: the centre maps as a point, the radius by the scale (2).
	ls := byID["ls"].LimitSphere
	if !near(ls.CenterM, view.PositionToDevice(Vec3{Z: 0.1})) || math.Abs(ls.RadiusM-0.04) > 1e-12 {
		t.Fatalf("%+v", ls)
	}

	// Box: each device half-axis maps back to the declared half-axis.
	lb, lba := byID["lb"].LimitBox, app["lb"].LimitBox
	h := [3]float64{lb.HalfExtentsM.X, lb.HalfExtentsM.Y, lb.HalfExtentsM.Z}
	ha := [3]float64{lba.HalfExtentsM.X, lba.HalfExtentsM.Y, lba.HalfExtentsM.Z}
	for j := range 3 {
		back := view.VelocityToApp(scale3(lb.Axes.col(j), h[j]))
		if !near(back, scale3(lba.Axes.col(j), ha[j])) {
			t.Fatalf("box axis %d maps back to %v", j, back)
		}
	}

	// Field: the device model gives the same force as the declared one,
	// converted, at any point near the origin.
	fa, fd := app["m"].Field, byID["m"].Field
	for _, xa := range []Vec3{{X: 0.01, Y: 0.02, Z: 0.1}, {X: 0.02, Y: 0.01, Z: 0.11}} {
		wantApp := add3(fa.ForceN, fa.JacobianNPerM.MulVec(sub3(xa, fa.OriginM)))
		xd := view.PositionToDevice(xa)
		gotDev := add3(fd.ForceN, fd.JacobianNPerM.MulVec(sub3(xd, fd.OriginM)))
		if !near(view.ForceToApp(gotDev), wantApp) {
			t.Fatalf("field at %v: device gives %v (app %v), want %v", xa, gotDev, view.ForceToApp(gotDev), wantApp)
		}
	}
	if math.Abs(fd.RadiusM-0.015) > 1e-12 {
		t.Fatalf("radius %g", fd.RadiusM)
	}

	// Vibration: a force direction keeps unit length and maps back.
	if vd := byID["v"].Vibration.Direction; !near(view.ForceToApp(vd), Vec3{X: 1}) {
		t.Fatalf("vibration direction %v", vd)
	}

	// Damper: the device matrix is the view's.
	if got, want := byID["d"].Damper.MatrixNsPerM, Mat3(view.DampingMatrixDevice(1, Vec3{Y: 2})); got != want {
		t.Fatalf("damper %v, want %v", got, want)
	}

	// SDF: a device point maps to the same shape-local point as its
	// application point does, and lengths scale by the view.
	sa, sd := app["sd"].SDF, byID["sd"].SDF
	for _, xa := range []Vec3{{X: 0.01, Y: 0.02, Z: 0.1}, {X: -0.03, Y: 0, Z: 0.2}} {
		la := add3(sa.ToLocal.MulVec(xa), sa.LocalOffset)
		xd := view.PositionToDevice(xa)
		ld := add3(sd.ToLocal.MulVec(xd), sd.LocalOffset)
		if !near(la, ld) {
			t.Fatalf("local point %v from device, %v from app", ld, la)
		}
	}
	if math.Abs(sd.FrameMPerLocalM-0.25) > 1e-12 || math.Abs(sd.RangeM-0.01) > 1e-12 {
		t.Fatalf("sdf lengths %g %g", sd.FrameMPerLocalM, sd.RangeM)
	}
}

func TestEffectsInWebSocketMessage(t *testing.T) {
	types, err := NewTypeTable(nil)
	if err != nil {
		t.Fatal(err)
	}
	var m ClientMessage
	msg := `{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0}}},"effects":{"set":[` + wallJSON + `]}}],` +
		`"grip":[{"device_id":"1","effects":{"set":[]}}]}`
	if errs := DecodeClientMessage([]byte(msg), types, &m); len(errs) != 0 {
		t.Fatal(errs)
	}
	if !m.Devices[0].HasEffects || len(m.Devices[0].Effects.Set) != 1 || m.Devices[0].Effects.Set[0].ID != "floor" {
		t.Fatalf("%+v", m.Devices[0])
	}
	if m.Devices[1].HasEffects || len(m.Warnings) != 1 || m.Warnings[0].Path != "grip[0].effects" {
		t.Fatalf("grip: %+v %v", m.Devices[1], m.Warnings)
	}
	// A bad effect fails the whole message, with the path into it.
	bad := `{"arm3":[{"device_id":"049D","effects":{"set":[{"id":"w","type":"wall","position":{"x":0,"y":0,"z":0},"normal":{"x":0,"y":0,"z":1},"stiffness":-1}]}}]}`
	errs := DecodeClientMessage([]byte(bad), types, &m)
	if len(errs) != 1 || errs[0].Path != "arm3[0].effects.set[0].stiffness" || errs[0].Code != CodeOutOfRange {
		t.Fatalf("%v", errs)
	}
	// The next message without effects reports none.
	if errs := DecodeClientMessage([]byte(`{"arm3":[{"device_id":"049D"}]}`), types, &m); len(errs) != 0 || m.Devices[0].HasEffects {
		t.Fatalf("%v %+v", errs, m.Devices[0])
	}
}

// A session refreshing a field every frame decodes it without allocating.
func TestEffectsRefreshDoesNotAllocate(t *testing.T) {
	types, err := NewTypeTable(nil)
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte(`{"arm3":[{"device_id":"049D","effects":{"set":[{"id":"m","type":"field","force":{"x":0.5,"y":0,"z":-1},"jacobian":[[-200,0,0],[0,-200,0],[0,0,-50]],"origin":{"x":0.01,"y":0.02,"z":0.1},"radius":0.03}]}}]}`)
	var m ClientMessage
	DecodeClientMessage(msg, types, &m)
	allocs := testing.AllocsPerRun(100, func() {
		if errs := DecodeClientMessage(msg, types, &m); len(errs) != 0 {
			t.Fatal(errs)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per refresh", allocs)
	}
}

func TestEffectsInForceAndStateShapes(t *testing.T) {
	u, _, err := DecodeEffectsUpdate([]byte(`{"set":[`+wallJSON+`]}`), "")
	if err != nil {
		t.Fatal(err)
	}
	v := EffectsInForce{SessionID: 7, Effects: []EffectInForce{{Effect: u.Set[0], RemainingMs: 250}, {Effect: u.Set[0], RemainingMs: -1}}}
	got := string(v.AppendJSON(nil))
	if !json.Valid([]byte(got)) || !strings.HasPrefix(got, `{"session_id":7,"max_effects":16,"effects":[{"id":"floor"`) ||
		!strings.Contains(got, `"damping":1,"remaining_ms":250}`) || strings.Count(got, "remaining_ms") != 1 {
		t.Fatal(got)
	}
	if got := string((&EffectsInForce{}).AppendJSON(nil)); got != `{"session_id":null,"max_effects":16,"effects":[]}` {
		t.Fatal(got)
	}
	// A node's arm rendering a lab gateway's session's effects: the owner
	// on the node (2^62 + 2, past float64's integers) written exactly, and
	// the gateway's session named.
	fw := EffectsInForce{SessionID: 1<<62 + 2, Effects: []EffectInForce{{Effect: u.Set[0], RemainingMs: -1}},
		Gateway: &EffectsGateway{ID: "gw", Address: "10.0.0.3:7070", SessionID: 3}}
	if got := string(fw.AppendJSON(nil)); !json.Valid([]byte(got)) || !strings.HasPrefix(got, `{"session_id":4611686018427387906,"max_effects":16,"effects":[{"id":"floor"`) ||
		!strings.HasSuffix(got, `}],"gateway":{"id":"gw","address":"10.0.0.3:7070","session_id":3}}`) {
		t.Fatal(got)
	}
	st := string(AppendEffectsState(nil, 2, []EffectProxy{{ID: "floor", PositionM: Vec3{Z: 0.1}, Contact: true}}))
	if st != `{"count":2,"proxies":[{"id":"floor","position":{"x":0,"y":0,"z":0.1},"contact":true}]}` {
		t.Fatal(st)
	}
	if p := string(PassivityState{EnergyJ: -0.25, AddedDampingNsPerM: 3}.AppendJSON(nil)); p != `{"energy":-0.25,"added_damping":3}` {
		t.Fatal(p)
	}
}

// The ms members are integers on the wire at every size the limits allow:
// the float form wrote a million and more in exponent form (3.6e+06), which
// the schema's integer type, and a typed client's int, refuse.
func TestEffectMillisecondsStayIntegers(t *testing.T) {
	body := `{"set":[` +
		`{"id":"d","type":"damper","scalar":1,"ttl_ms":3600000},` +
		`{"id":"v","type":"vibration","frequency":100,"amplitude":0.2,"duration_ms":2000000},` +
		`{"id":"m","type":"field","force":{"x":1,"y":0,"z":0},"origin":{"x":0,"y":0,"z":0},"radius":0.02,"valid_ms":10000}]}`
	u, warns, err := DecodeEffectsUpdate([]byte(body), "")
	if err != nil || len(warns) != 0 {
		t.Fatal(err, warns)
	}
	inForce := EffectsInForce{SessionID: 1}
	for _, e := range u.Set {
		inForce.Effects = append(inForce.Effects, EffectInForce{Effect: e, RemainingMs: 1999995})
	}
	for _, enc := range [][]byte{u.AppendJSON(nil), inForce.AppendJSON(nil)} {
		for _, want := range []string{`"ttl_ms":3600000`, `"duration_ms":2000000`, `"valid_ms":10000`} {
			if !strings.Contains(string(enc), want) {
				t.Errorf("%s: want %s", enc, want)
			}
		}
		if strings.Contains(string(enc), "e+") {
			t.Errorf("an exponent in %s", enc)
		}
	}
	if got := string(inForce.AppendJSON(nil)); !strings.Contains(got, `"remaining_ms":1999995`) {
		t.Errorf("%s: want remaining_ms 1999995", got)
	}
	// And the refusal of one past the limit names it as the client wrote it.
	_, _, err = DecodeEffectsUpdate([]byte(`{"set":[{"id":"d","type":"damper","scalar":1,"ttl_ms":3600001}]}`), "")
	if err == nil || !strings.Contains(err.Error(), "ttl_ms 3600001 is out of range 1..3600000") {
		t.Errorf("ttl_ms 3600001: %v", err)
	}
}

// A member named twice counts by its last occurrence in an effects
// declaration too (docs/protocol.md, Input): each effect member, an
// effect's type and id, and the declaration's set, remove and clear. The
// navigation entry broke this rule; this pins it for effects.
func TestEffectsRepeatedMembersCountByTheirLast(t *testing.T) {
	wall := func(members string) string {
		return `{"set":[{"id":"w","type":"wall","position":{"x":0,"y":0,"z":0},"normal":{"x":0,"y":0,"z":1},"stiffness":100` + members + `}]}`
	}
	tests := []struct {
		name, body string
		check      func(u EffectsUpdate) bool
		path       string // "" when accepted
	}{
		{"stiffness bad, then good", wall(`,"stiffness":-1,"stiffness":200`), func(u EffectsUpdate) bool { return u.Set[0].Wall.StiffnessNPerM == 200 }, ""},
		{"stiffness good, then bad", wall(`,"stiffness":-1`), nil, "set[0].stiffness"},
		{"damping, then null: the default", wall(`,"damping":3,"damping":null`), func(u EffectsUpdate) bool { return u.Set[0].Wall.DampingNsPerM == 0 }, ""},
		{"normal zero, then good", wall(`,"normal":{"x":0,"y":0,"z":0},"normal":{"x":0,"y":2,"z":0}`), func(u EffectsUpdate) bool { return u.Set[0].Wall.Normal == (Vec3{Y: 1}) }, ""},
		{"type bad, then good", `{"set":[{"id":"d","type":"laser","type":"damper","scalar":1}]}`, func(u EffectsUpdate) bool { return u.Set[0].Type == EffectDamper }, ""},
		{"id twice", `{"set":[{"id":"","id":"d","type":"damper","scalar":1}]}`, func(u EffectsUpdate) bool { return u.Set[0].ID == "d" }, ""},
		{"ttl_ms, then null", `{"set":[{"id":"d","type":"damper","scalar":1,"ttl_ms":5,"ttl_ms":null}]}`, func(u EffectsUpdate) bool { return u.Set[0].TTLMs == 0 }, ""},
		{"set twice: the last alone", `{"set":[{"id":"a","type":"damper","scalar":-1}],"set":[{"id":"b","type":"damper","scalar":1}]}`,
			func(u EffectsUpdate) bool { return len(u.Set) == 1 && u.Set[0].ID == "b" }, ""},
		{"set, then null", `{"set":[{"id":"a","type":"damper","scalar":1}],"set":null}`, func(u EffectsUpdate) bool { return len(u.Set) == 0 }, ""},
		{"remove twice", `{"remove":[1],"remove":["x"]}`, func(u EffectsUpdate) bool { return len(u.Remove) == 1 && u.Remove[0] == "x" }, ""},
		{"clear, then null", `{"clear":true,"clear":null}`, func(u EffectsUpdate) bool { return !u.Clear }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, _, err := DecodeEffectsUpdate([]byte(tt.body), "")
			if tt.path != "" {
				if err == nil || err.Path != tt.path {
					t.Fatalf("%s: got %v; want an error at %s", tt.body, err, tt.path)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", tt.body, err)
			}
			if !tt.check(u) {
				t.Fatalf("%s: %+v", tt.body, u)
			}
		})
	}
	// A device entry's "effects" given twice: the last one alone.
	for _, tc := range []struct {
		msg   string
		has   bool
		clear bool
	}{
		{`{"arm3":[{"device_id":"049D","effects":{"set":[{"id":"d","type":"damper","scalar":1}]},"effects":null}]}`, false, false},
		{`{"arm3":[{"device_id":"049D","effects":{"set":[{"id":"d","type":"damper","scalar":-1}]},"effects":{"clear":true}}]}`, true, true},
	} {
		var m ClientMessage
		if errs := DecodeClientMessage([]byte(tc.msg), nil, &m); len(errs) != 0 || len(m.Devices) != 1 {
			t.Errorf("%s: %v, %d devices", tc.msg, errs, len(m.Devices))
			continue
		}
		if e := m.Devices[0]; e.HasEffects != tc.has || e.Effects.Clear != tc.clear || len(e.Effects.Set) != 0 {
			t.Errorf("%s: has %v, %+v", tc.msg, e.HasEffects, e.Effects)
		}
	}
}
