package protocol

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/hapticd/hapticd/protocol/space"
)

func TestDecodeNavigation(t *testing.T) {
	tests := []struct {
		name, body string
		check      func(t *testing.T, n Navigation)
		code       Code
		path, msg  string
	}{
		{name: "mode alone turns the default bubble on", body: `{"mode":"bubble"}`, check: func(t *testing.T, n Navigation) {
			want := DefaultNavigation()
			want.Mode = NavigationBubble
			if n != want {
				t.Fatalf("%+v", n)
			}
		}},
		{name: "no centre given: at the cursor", body: `{"mode":"bubble","bubble":{"center":{"drift_rate":0.1}}}`, check: func(t *testing.T, n Navigation) {
			if c := n.Bubble.Center; c.Mode != CenterCursor || c.PositionM != (Vec3{}) {
				t.Fatalf("%+v", c)
			}
		}},
		{name: "a position without a mode is fixed", body: `{"mode":"bubble","bubble":{"center":{"position":{"x":0,"y":0,"z":0.1}}}}`, check: func(t *testing.T, n Navigation) {
			if c := n.Bubble.Center; c.Mode != CenterFixed || c.PositionM != (Vec3{Z: 0.1}) {
				t.Fatalf("%+v", c)
			}
		}},
		{name: "an offset from the cursor", body: `{"mode":"bubble","bubble":{"center":{"mode":"cursor","position":{"x":0,"y":0,"z":0.02}}}}`, check: func(t *testing.T, n Navigation) {
			if c := n.Bubble.Center; c.Mode != CenterCursor || c.PositionM != (Vec3{Z: 0.02}) {
				t.Fatalf("%+v", c)
			}
		}},
		{name: "vendor demo shape", body: `{"mode":"bubble","bubble":{"center":{"position":{"x":0,"y":-0.05,"z":0.18}},"shape":{"primitive":"sphere","parameters":{"r":0.05}},"collision_detection":{}}}`,
			check: func(t *testing.T, n Navigation) {
				if n.Bubble.Center.PositionM != (Vec3{Y: -0.05, Z: 0.18}) || n.Bubble.Shape.Params.R != 0.05 || n.Bubble.HysteresisM != 0.002 {
					t.Fatalf("%+v", n.Bubble)
				}
			}},
		{name: "every field", body: `{"mode":"bubble","bubble":{"center":{"position":{"x":0.01,"y":0,"z":0.1},"mode":"drift","drift_rate":0.02},"shape":{"primitive":"capsule_vertical","parameters":{"h":0.04,"r":0.03}},"velocity_zone_width":0.05,"speed_gain":8,"max_speed":1.5,"easing":"quadratic","dead_zone_damping":0.5,"velocity_zone_stiffness":80,"wall_stiffness":1500,"wall_damping":6,"collision_detection":{"hysteresis":0.004}}}`,
			check: func(t *testing.T, n Navigation) {
				b := n.Bubble
				if b.Center.Mode != CenterDrift || b.Center.DriftRateMps != 0.02 || b.Shape.Primitive != "capsule_vertical" || b.VelocityZoneWidthM != 0.05 ||
					b.SpeedGainPerS != 8 || b.MaxSpeedMps != 1.5 || b.Easing != "quadratic" || b.DeadZoneDampingNsPerM != 0.5 ||
					b.VelocityZoneStiffnessNPerM != 80 || b.WallStiffnessNPerM != 1500 || b.WallDampingNsPerM != 6 || b.HysteresisM != 0.004 {
					t.Fatalf("%+v", b)
				}
			}},
		{name: "GET's answer posted back", body: `{"config":{"mode":"bubble","bubble":{"max_speed":0.25}},"state":null,"status":{"mode":"off"}}`, check: func(t *testing.T, n Navigation) {
			if n.Mode != NavigationBubble || n.Bubble.MaxSpeedMps != 0.25 {
				t.Fatalf("%+v", n)
			}
		}},
		{name: "GET's answer with a bad config", body: `{"config":{"mode":"warp"},"status":{"mode":"off"}}`, code: CodeInvalidValue, path: "config.mode", msg: "not one of"},
		// A body that says nothing of the navigation would otherwise be
		// the defaults: navigation off, unasked.
		{name: "neither mode nor bubble", body: `{"navigation":{"mode":"bubble"}}`, code: CodeInvalidValue, path: "", msg: `needs "mode" or "bubble"`},
		{name: "empty", body: `{"mode":null}`, code: CodeInvalidValue, path: "", msg: `needs "mode" or "bubble"`},
		{name: "GET's whole answer", body: `{"ok":true,"data":{"config":{"mode":"bubble"},"state":null,"status":{"mode":"bubble"}}}`, code: CodeInvalidValue, path: "", msg: `POST the value of its "data" member`},
		{name: "not an object", body: `"bubble"`, code: CodeInvalidValue, path: "", msg: "must be an object"},
		{name: "unknown mode", body: `{"mode":"teleport"}`, code: CodeInvalidValue, path: "mode", msg: `"teleport" is not one of off, bubble`},
		{name: "mode not a string", body: `{"mode":1}`, code: CodeInvalidValue, path: "mode", msg: "must be a string"},
		{name: "zone too thin", body: `{"bubble":{"velocity_zone_width":0}}`, code: CodeOutOfRange, path: "bubble.velocity_zone_width", msg: "out of range 0.001..0.5"},
		{name: "speed too high", body: `{"bubble":{"max_speed":11}}`, code: CodeOutOfRange, path: "bubble.max_speed", msg: "out of range 0..10"},
		{name: "negative gain", body: `{"bubble":{"speed_gain":-1}}`, code: CodeOutOfRange, path: "bubble.speed_gain", msg: "out of range"},
		{name: "gain not finite", body: `{"bubble":{"speed_gain":1e999}}`, code: CodeInvalidValue, path: "bubble.speed_gain", msg: "not a number a float64 holds"},
		{name: "wall too stiff", body: `{"bubble":{"wall_stiffness":30000}}`, code: CodeOutOfRange, path: "bubble.wall_stiffness", msg: "out of range 0..20000"},
		{name: "unknown easing", body: `{"bubble":{"easing":"bounce"}}`, code: CodeInvalidValue, path: "bubble.easing", msg: "not one of linear, quadratic, cubic"},
		{name: "center far away", body: `{"bubble":{"center":{"position":{"x":0,"y":2,"z":0}}}}`, code: CodeOutOfRange, path: "bubble.center.position.y", msg: "out of range -1..1"},
		{name: "unknown center mode", body: `{"bubble":{"center":{"mode":"orbit"}}}`, code: CodeInvalidValue, path: "bubble.center.mode", msg: "not one of fixed, drift, cursor"},
		{name: "plane is no bubble", body: `{"bubble":{"shape":{"primitive":"plane","parameters":{"n":{"x":0,"y":0,"z":1},"h":0}}}}`, code: CodeInvalidValue, path: "bubble.shape.primitive", msg: "enclose the cursor"},
		{name: "cone is not rendered as a bubble", body: `{"bubble":{"shape":{"primitive":"cone","parameters":{"c":{"x":0.6,"y":0.8},"h":0.05}}}}`, code: CodeInvalidValue, path: "bubble.shape.primitive", msg: "one of sphere, ellipsoid"},
		// A size past the workspace's is an error at the parameter sent.
		{name: "bubble larger than a workspace", body: `{"bubble":{"shape":{"primitive":"sphere","parameters":{"r":2}}}}`, code: CodeOutOfRange, path: "bubble.shape.parameters.r", msg: "at most 0.5 m"},
		{name: "torus tube larger than a workspace", body: `{"bubble":{"shape":{"primitive":"torus","parameters":{"r1":0.1,"r2":0.6}}}}`, code: CodeOutOfRange, path: "bubble.shape.parameters.r2", msg: "at most 0.5 m"},
		{name: "box larger than a workspace", body: `{"bubble":{"shape":{"primitive":"box","parameters":{"b":{"x":0.1,"y":0.1,"z":0.7}}}}}`, code: CodeOutOfRange, path: "bubble.shape.parameters.b.z", msg: "-0.5..0.5 m (a bubble lies inside the workspace)"},
		{name: "capsule end beyond a workspace", body: `{"bubble":{"shape":{"primitive":"capsule","parameters":{"a":{"x":0,"y":-0.6,"z":0},"b":{"x":0,"y":0.1,"z":0},"r":0.05}}}}`, code: CodeOutOfRange, path: "bubble.shape.parameters.a.y", msg: "-0.5..0.5 m (a bubble lies inside the workspace)"},
		// Past an effect's bound too: the bubble's is the one named (it
		// was "at most 100 m", then for r 99 "at most 0.5 m").
		{name: "bubble past an effect's bound", body: `{"bubble":{"shape":{"primitive":"sphere","parameters":{"r":150}}}}`, code: CodeOutOfRange, path: "bubble.shape.parameters.r", msg: "at most 0.5 m (a bubble lies inside the workspace)"},
		{name: "shape without parameters", body: `{"bubble":{"shape":{"primitive":"box"}}}`, code: CodeInvalidValue, path: "bubble.shape.parameters", msg: "needs parameters b"},
		{name: "hysteresis too wide", body: `{"bubble":{"collision_detection":{"hysteresis":0.1}}}`, code: CodeOutOfRange, path: "bubble.collision_detection.hysteresis", msg: "out of range 0..0.05"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := DecodeEntry(KeyNavigation, []byte(tt.body), "")
			if tt.check != nil {
				if err != nil {
					t.Fatal(err)
				}
				tt.check(t, e.(Navigation))
				return
			}
			if err == nil {
				t.Fatalf("accepted %s", tt.body)
			}
			if err.Code != tt.code || err.Path != tt.path || !strings.Contains(err.Message, tt.msg) {
				t.Fatalf("got %s @%q %q; want %s @%q containing %q", err.Code, err.Path, err.Message, tt.code, tt.path, tt.msg)
			}
		})
	}
}

func TestNavigationWarnsAboutUnknownFields(t *testing.T) {
	_, warns, err := DecodeEntryWarn(KeyNavigation, []byte(`{"mode":"bubble","toggle":1,"bubble":{"springs":{},"center":{"offset":1}}}`), "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range warns {
		got = append(got, w.Path)
	}
	if strings.Join(got, " ") != "toggle bubble.springs bubble.center.offset" {
		t.Fatalf("%v", got)
	}
}

// The entry is stored with the session's config (per profile) and comes
// back whole, as the device sized it; a stored file from before navigation
// existed loads with the default, still to be sized.
func TestNavigationPersistsWithTheSessionConfig(t *testing.T) {
	decoded, err := DecodeEntry(KeyNavigation, []byte(`{"mode":"bubble","bubble":{"shape":{"primitive":"ellipsoid","parameters":{"a":{"x":0.04,"y":0.05,"z":0.06}}},"wall_stiffness":1234}}`), "")
	if err != nil {
		t.Fatal(err)
	}
	var n Entry = decoded.(Navigation).SizedFor(0.05)
	c := DefaultSessionConfig()
	if !c.Set(n) || c.Get(KeyNavigation) != n {
		t.Fatal("Set/Get")
	}
	b, _ := json.Marshal(c)
	var back SessionConfig
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !back.Equal(&c) || back.Navigation != n.(Navigation) {
		t.Fatalf("stored %s, read %+v", b, back.Navigation)
	}
	var old SessionConfig
	if err := json.Unmarshal([]byte(`{"preset":"defaults","damping":{"scalar":2}}`), &old); err != nil {
		t.Fatal(err)
	}
	if old.Navigation != DefaultNavigation() {
		t.Fatalf("an old file reads navigation %+v", old.Navigation)
	}
	c.Reset(KeyNavigation)
	if c.Navigation != DefaultNavigation() {
		t.Fatal("Reset")
	}
	if bad := json.Unmarshal([]byte(`{"navigation":{"mode":"warp"}}`), &old); bad == nil {
		t.Fatal("a hand-edited invalid navigation loads")
	}
}

func TestPassivityEntriesPersistWithTheDeviceConfig(t *testing.T) {
	c := DefaultDeviceConfig()
	if !c.Set(ForceClamp{MaxForceN: 4}) || !c.Set(ForceSlewLimit{MaxRateNPerS: 900}) {
		t.Fatal("Set")
	}
	b, _ := json.Marshal(c)
	var back DeviceConfig
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back != c {
		t.Fatalf("stored %s, read %+v", b, back)
	}
	var old DeviceConfig
	if err := json.Unmarshal([]byte(`{"handedness":"left"}`), &old); err != nil || old.ForceClamp.MaxForceN != ForceClampDefaultN || old.ForceSlewLimit.MaxRateNPerS != ForceSlewDefaultNPerS {
		t.Fatalf("an old file reads %+v (%v)", old, err)
	}
	// The controller: on in the rendered scope unless a file says
	// otherwise; a file from before scopes keeps its switch.
	if old.PassivityController != (PassivityController{Enabled: true, Scope: "rendered"}) {
		t.Fatalf("an old file without the controller reads %+v", old.PassivityController)
	}
	var off DeviceConfig
	if err := json.Unmarshal([]byte(`{"passivity_controller":{"enabled":false}}`), &off); err != nil || off.PassivityController != (PassivityController{Scope: "rendered"}) {
		t.Fatalf("a file from before scopes reads %+v (%v)", off.PassivityController, err)
	}
	if e, err := DecodeEntry(KeyPassivityController, []byte(`{"enabled":true,"scope":"output"}`), ""); err != nil || e != (PassivityController{Enabled: true, Scope: "output"}) {
		t.Fatalf("output scope: %+v %v", e, err)
	}
	for _, tt := range []struct {
		k    Key
		body string
		path string
	}{
		{KeyForceClamp, `{"max_force":-1}`, "max_force"},
		{KeyForceClamp, `{}`, ""},
		{KeyForceSlewLimit, `{"max_rate":5}`, "max_rate"},
		{KeyForceSlewLimit, `{"max_rate":"fast"}`, "max_rate"},
		{KeyPassivityController, `{"enabled":true,"scope":"all"}`, "scope"},
		{KeyPassivityController, `{"enabled":"yes"}`, "enabled"},
		{KeyPassivityController, `{"scope":"output"}`, ""},
	} {
		if _, err := DecodeEntry(tt.k, []byte(tt.body), ""); err == nil || err.Path != tt.path {
			t.Errorf("%s %s: %v, want an error at %q", tt.k, tt.body, err, tt.path)
		}
	}
}

func TestNavigationOverWebSocket(t *testing.T) {
	types, err := NewTypeTable(nil)
	if err != nil {
		t.Fatal(err)
	}
	var m ClientMessage
	msg := []byte(`{"arm3":[{"device_id":"049D","configure":{"navigation":{"mode":"bubble"}}}],"grip":[{"device_id":"1","configure":{"navigation":{"mode":"bubble"}}}]}`)
	if errs := DecodeClientMessage(msg, types, &m); len(errs) != 0 {
		t.Fatal(errs)
	}
	if len(m.Devices[0].Configure) != 1 || m.Devices[0].Configure[0].(Navigation).Mode != NavigationBubble {
		t.Fatalf("%+v", m.Devices[0].Configure)
	}
	if len(m.Devices[1].Configure) != 0 || len(m.Warnings) != 1 || m.Warnings[0].Path != "grip[0].configure.navigation" {
		t.Fatalf("grip: %+v %v", m.Devices[1].Configure, m.Warnings)
	}
	// A client re-sending the same configure every tick costs nothing.
	arm := []byte(`{"arm3":[{"device_id":"049D","configure":{"navigation":{"mode":"bubble","bubble":{"max_speed":0.2}}}}]}`)
	DecodeClientMessage(arm, types, &m)
	if a := testing.AllocsPerRun(100, func() { DecodeClientMessage(arm, types, &m) }); a != 0 {
		t.Fatalf("%v allocations per re-sent navigation", a)
	}
}

func TestNavigationViewAndBubbleToDevice(t *testing.T) {
	v := NavigationView{Config: DefaultNavigation()}
	if got := string(v.AppendJSON(nil)); !strings.HasSuffix(got, `,"state":null,"status":{"mode":"off"}}`) || !json.Valid([]byte(got)) {
		t.Fatal(got)
	}
	st := NavigationState{CenterM: Vec3{Z: 0.1}, VelocityZoneWidthM: 0.03, Zone: ZoneWall, WorkspaceOffsetM: Vec3{X: 1}}
	v.State = &st
	if got := string(v.AppendJSON(nil)); !strings.Contains(got, `"state":{"bubble":{"center":{"x":0,"y":0,"z":0.1},"velocity_zone_width":0.03,"collision_extra_inflate":0},"zone":"wall","workspace_offset":{"x":1,"y":0,"z":0},"velocity":{"x":0,"y":0,"z":0}}`) {
		t.Fatal(got)
	}

	// The bubble's centre, in mount space, maps to the device frame through
	// the mount; lengths by its scale.
	basis, err := space.ParsePermutation("XZY")
	if err != nil {
		t.Fatal(err)
	}
	mount := space.Transform{Position: Vec3{X: 0.1}, Rotation: Quat{W: 1}, Scale: Vec3{X: 2, Y: 2, Z: 2}}
	view := space.NewView(basis, mount)
	n := DefaultNavigation()
	n.Bubble.Center.PositionM = Vec3{X: 0.1, Y: 0.3, Z: 0.02}
	d := n.ToDevice(&view)
	if !near(d.CenterM, view.PositionToDevice(n.Bubble.Center.PositionM)) || math.Abs(d.VelocityZoneM-0.015) > 1e-12 || d.WorkspacePerDev != 2 {
		t.Fatalf("%+v", d)
	}
	// The device centre is the local origin of the shape.
	if l := add3(d.ToLocal.MulVec(d.CenterM), d.LocalOffset); !near(l, Vec3{}) {
		t.Fatalf("centre maps to local %v", l)
	}
}

// The default bubble is sized from the arm's workspace; sizes a client
// gave keep their meaning whatever the arm.
func TestNavigationDefaultSizeFollowsTheArm(t *testing.T) {
	for _, tc := range []struct {
		name      string
		body      string
		radiusM   float64
		wantShape SDFShape
		wantWidth float64
	}{
		{"defaults on an Inverse3", `{"mode":"bubble"}`, 0.1, SDFShape{Primitive: "sphere", Params: SDFParams{R: 0.05}}, 0.03},
		{"defaults on a Minverse", `{"mode":"bubble"}`, 0.05, SDFShape{Primitive: "sphere", Params: SDFParams{R: 0.025}}, 0.015},
		{"a given sphere stays", `{"mode":"bubble","bubble":{"shape":{"primitive":"sphere","parameters":{"r":0.05}}}}`, 0.05, SDFShape{Primitive: "sphere", Params: SDFParams{R: 0.05}}, 0.015},
		{"a given width stays", `{"mode":"bubble","bubble":{"velocity_zone_width":0.03}}`, 0.05, SDFShape{Primitive: "sphere", Params: SDFParams{R: 0.025}}, 0.03},
		{"no radius: the Inverse3's", `{"mode":"bubble"}`, 0, SDFShape{Primitive: "sphere", Params: SDFParams{R: 0.05}}, 0.03},
		{"a radius not finite: the Inverse3's", `{"mode":"bubble"}`, math.Inf(1), SDFShape{Primitive: "sphere", Params: SDFParams{R: 0.05}}, 0.03},
		{"a huge arm: within range", `{"mode":"bubble"}`, 10, SDFShape{Primitive: "sphere", Params: SDFParams{R: NavShapeMax}}, NavZoneWidthMax},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := DecodeEntry(KeyNavigation, []byte(tc.body), "")
			if err != nil {
				t.Fatal(err)
			}
			got := e.(Navigation).SizedFor(tc.radiusM)
			if got.Bubble.Shape != tc.wantShape || got.Bubble.VelocityZoneWidthM != tc.wantWidth {
				t.Errorf("shape %+v width %v, want %+v %v", got.Bubble.Shape, got.Bubble.VelocityZoneWidthM, tc.wantShape, tc.wantWidth)
			}
			if got.Bubble.ShapeFromArm || got.Bubble.ZoneWidthFromArm {
				t.Error("still marked to be sized")
			}
			if again := got.SizedFor(0.2); again != got {
				t.Errorf("sized twice: %+v", again.Bubble)
			}
		})
	}
}

// A member named twice counts by its last occurrence (docs/protocol.md,
// Input) in the navigation entry too: decodeNavigation and decodeBubble
// acted on every occurrence, so a second "bubble" was merged into the
// first, a trailing "mode": null left the first mode on, and a bad first
// occurrence of any member was refused though a valid one followed.
func TestNavigationRepeatedMembersCountByTheirLast(t *testing.T) {
	on := func(change func(*Navigation)) Navigation {
		n := DefaultNavigation()
		n.Mode = NavigationBubble
		if change != nil {
			change(&n)
		}
		return n
	}
	type navCase struct {
		name, body string
		want       Navigation
		code       Code // "" when accepted
		path       string
	}
	tests := []navCase{
		{"bubble twice: the last alone", `{"mode":"bubble","bubble":{"max_speed":0.4},"bubble":{"speed_gain":5}}`,
			on(func(n *Navigation) { n.Bubble.SpeedGainPerS = 5 }), "", ""},
		{"bubble, then null", `{"mode":"bubble","bubble":{"max_speed":0.4},"bubble":null}`, on(nil), "", ""},
		{"a bad bubble, then a good one", `{"mode":"bubble","bubble":"bad","bubble":{"max_speed":0.4}}`,
			on(func(n *Navigation) { n.Bubble.MaxSpeedMps = 0.4 }), "", ""},
		{"mode, then null: no mode", `{"mode":"bubble","mode":null}`, Navigation{}, CodeInvalidValue, ""},
		{"a bad mode, then a good one", `{"mode":"bad","mode":"bubble"}`, on(nil), "", ""},
		{"a good mode, then a bad one", `{"mode":"bubble","mode":"bad"}`, Navigation{}, CodeInvalidValue, "mode"},
		{"bubble on, then off", `{"mode":"bubble","mode":"off"}`, DefaultNavigation(), "", ""},
		{"easing twice", `{"mode":"bubble","bubble":{"easing":"bounce","easing":"cubic"}}`,
			on(func(n *Navigation) { n.Bubble.Easing = "cubic" }), "", ""},
		{"shape twice", `{"mode":"bubble","bubble":{"shape":{"primitive":"plane"},"shape":{"primitive":"sphere","parameters":{"r":0.04}}}}`,
			on(func(n *Navigation) {
				n.Bubble.Shape = SDFShape{Primitive: "sphere", Params: SDFParams{R: 0.04}}
				n.Bubble.ShapeFromArm = false
			}), "", ""},
		{"collision_detection twice", `{"mode":"bubble","bubble":{"collision_detection":{"hysteresis":1},"collision_detection":{"hysteresis":0.004}}}`,
			on(func(n *Navigation) { n.Bubble.HysteresisM = 0.004 }), "", ""},
		{"center twice: the last alone", `{"mode":"bubble","bubble":{"center":{"position":{"x":0,"y":0,"z":0.1}},"center":{"drift_rate":0.1}}}`,
			on(func(n *Navigation) { n.Bubble.Center.DriftRateMps = 0.1 }), "", ""},
		{"center position, then null", `{"mode":"bubble","bubble":{"center":{"position":{"x":0,"y":0,"z":0.1},"position":null}}}`, on(nil), "", ""},
		{"center position far, then near", `{"mode":"bubble","bubble":{"center":{"position":{"x":0,"y":0,"z":9},"position":{"x":0,"y":0,"z":0.1}}}}`,
			on(func(n *Navigation) { n.Bubble.Center = BubbleCenter{Mode: CenterFixed, PositionM: Vec3{Z: 0.1}} }), "", ""},
		{"center mode twice", `{"mode":"bubble","bubble":{"center":{"mode":"orbit","mode":"drift"}}}`,
			on(func(n *Navigation) { n.Bubble.Center.Mode = CenterDrift }), "", ""},
		{"drift_rate twice", `{"mode":"bubble","bubble":{"center":{"drift_rate":-1,"drift_rate":0.1}}}`,
			on(func(n *Navigation) { n.Bubble.Center.DriftRateMps = 0.1 }), "", ""},
	}
	// Every numeric member: a bad value then a good one is the good one; a
	// value then null is the default; a good value then a bad one is refused.
	for i, s := range bubbleScalars {
		good := s.hi
		withGood := on(func(n *Navigation) {
			n.Bubble.setScalar(i, good)
			if s.name == "velocity_zone_width" {
				n.Bubble.ZoneWidthFromArm = false
			}
		})
		tests = append(tests,
			navCase{s.name + ": bad, then good", fmt.Sprintf(`{"mode":"bubble","bubble":{%q:"bad",%q:%v}}`, s.name, s.name, good), withGood, "", ""},
			navCase{s.name + ": a value, then null", fmt.Sprintf(`{"mode":"bubble","bubble":{%q:%v,%q:null}}`, s.name, good, s.name), on(nil), "", ""},
			navCase{s.name + ": good, then bad", fmt.Sprintf(`{"mode":"bubble","bubble":{%q:%v,%q:-1}}`, s.name, good, s.name), Navigation{}, CodeOutOfRange, "bubble." + s.name},
		)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := DecodeEntry(KeyNavigation, []byte(tt.body), "")
			if tt.code != "" {
				if err == nil || err.Code != tt.code || err.Path != tt.path {
					t.Fatalf("%s: got %+v, %v; want %s at %q", tt.body, e, err, tt.code, tt.path)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", tt.body, err)
			}
			if got := e.(Navigation); got != tt.want {
				t.Fatalf("%s:\n got %+v\nwant %+v", tt.body, got, tt.want)
			}
		})
	}
}
