package transport

import (
	"strings"
	"testing"

	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/schema"
	"github.com/hapticd/hapticd/transport/schematest"
)

// effectsBody declares one effect of every type, as a client would.
const effectsBody = `{"clear":true,"remove":["old"],"set":[` +
	`{"id":"floor","type":"wall","position":{"x":0,"y":0,"z":0.1},"normal":{"x":0,"y":0,"z":1},"stiffness":2000,"damping":1},` +
	`{"id":"rail","type":"spring","anchor":"line","position":{"x":0,"y":0,"z":0},"direction":{"x":0,"y":1,"z":0},"stiffness":300},` +
	`{"id":"pt","type":"spring","position":{"x":0.01,"y":0,"z":0.1},"stiffness":100,"ttl_ms":250},` +
	`{"id":"d","type":"damper","vector":{"x":0,"y":2,"z":0}},` +
	`{"id":"f","type":"friction","force":0.4},` +
	`{"id":"ls","type":"limit_sphere","center":{"x":0,"y":0,"z":0.1},"radius":0.08,"stiffness":1500},` +
	`{"id":"lb","type":"limit_box","center":{"x":0,"y":0,"z":0.1},"half_extents":{"x":0.05,"y":0.06,"z":0.07},"keep":"outside","stiffness":800},` +
	`{"id":"m","type":"field","force":{"x":0.5,"y":0,"z":-1},"jacobian":[[-200,0,0],[0,-200,0],[0,0,-50]],"origin":{"x":0,"y":0,"z":0.1},"radius":0.03},` +
	`{"id":"v","type":"vibration","frequency":120,"amplitude":0.3,"duration_ms":150},` +
	`{"id":"ball","type":"sdf","shape":{"primitive":"sphere","parameters":{"r":0.04}},"force_scale":2},` +
	`{"id":"slab","type":"sdf","shape":"box","params":{"b":{"x":0.1,"y":0.1,"z":0.01}}}]}`

func effectsValidator(t *testing.T) *schematest.Validator {
	t.Helper()
	types, err := protocol.NewTypeTable(nil)
	if err != nil {
		t.Fatal(err)
	}
	v := schematest.ForSet(schema.New(schema.Options{Types: types}))
	t.Cleanup(v.Close)
	return v
}

// The schemas describe what protocol accepts and writes: every valid
// declaration passes, and what the encoders write (the read shape, the
// entries, the navigation answer, the state extensions) passes the closed
// output schemas.
func TestSchemaEffectsAndNavigation(t *testing.T) {
	v := effectsValidator(t)
	u, warns, perr := protocol.DecodeEffectsUpdate([]byte(effectsBody), "")
	if perr != nil || len(warns) != 0 {
		t.Fatal(perr, warns)
	}
	inForce := protocol.EffectsInForce{SessionID: 4}
	for i, e := range u.Set {
		inForce.Effects = append(inForce.Effects, protocol.EffectInForce{Effect: e, RemainingMs: i*10 - 1})
	}
	nav, _, perr := protocol.DecodeEntryWarn(protocol.KeyNavigation, []byte(`{"mode":"bubble","bubble":{"shape":{"primitive":"rounded_box","parameters":{"b":{"x":0.03,"y":0.03,"z":0.03},"r":0.01}}}}`), "")
	if perr != nil {
		t.Fatal(perr)
	}
	state := protocol.NavigationState{CenterM: protocol.Vec3{Z: 0.1}, VelocityZoneWidthM: 0.03, Zone: protocol.ZoneVelocity,
		WorkspaceOffsetM: protocol.Vec3{X: 0.2}, VelocityMps: protocol.Vec3{X: 0.05}}
	msg := `{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0}}},"effects":` + effectsBody +
		`,"configure":{"navigation":{"mode":"bubble","bubble":{"center":{"position":{"x":0,"y":0,"z":0.15}}}}}}]}`
	for _, tt := range []struct{ name, doc string }{
		{schema.EffectsUpdateInput, effectsBody},
		{schema.EffectsUpdateInput, string(u.AppendJSON(nil))},
		{"client-message", msg},
		{schema.EffectsInForce, string(inForce.AppendJSON(nil))},
		{schema.EffectsInForce, string((&protocol.EffectsInForce{}).AppendJSON(nil))},
		{schema.EffectsInForce, string((&protocol.EffectsInForce{SessionID: 1 << 62, Effects: inForce.Effects,
			Gateway: &protocol.EffectsGateway{ID: "gw", Address: "10.0.0.3:7070", SessionID: 4}}).AppendJSON(nil))},
		{schema.EntryName(protocol.KeyNavigation), string(nav.AppendJSON(nil))},
		{schema.EntryName(protocol.KeyNavigation) + ".input", string(nav.AppendJSON(nil))},
		{schema.EntryName(protocol.KeyNavigation) + ".input", `{"mode":"bubble"}`},
		{schema.NavigationView, string((&protocol.NavigationView{Config: nav.(protocol.Navigation), State: &state}).AppendJSON(nil))},
		{schema.NavigationView, string((&protocol.NavigationView{Config: protocol.DefaultNavigation()}).AppendJSON(nil))},
		{schema.EntryName(protocol.KeyForceClamp), string(protocol.DefaultEntry(protocol.KeyForceClamp).AppendJSON(nil))},
		{schema.EntryName(protocol.KeyForceSlewLimit), string(protocol.DefaultEntry(protocol.KeyForceSlewLimit).AppendJSON(nil))},
		{schema.EntryName(protocol.KeyForceSlewLimit) + ".input", `{"max_rate":250}`},
		{schema.StateEffects, string(protocol.AppendEffectsState(nil, 2, []protocol.EffectProxy{{ID: "floor", PositionM: protocol.Vec3{Z: 0.1}, Contact: true}}))},
		{schema.StatePassivity, string(protocol.PassivityState{EnergyJ: -0.01, AddedDampingNsPerM: 2}.AppendJSON(nil))},
	} {
		if err := v.Check(tt.name, []byte(tt.doc)); err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}

// What the decoder refuses for a reason a schema can state (a range, a
// missing member, an unknown value), the schema refuses too.
func TestSchemaRefusesWhatTheDecoderRefuses(t *testing.T) {
	v := effectsValidator(t)
	for _, tt := range []struct{ name, doc string }{
		{schema.EffectsUpdateInput, `{"set":[{"id":"w","type":"wall","position":{"x":0,"y":0,"z":0},"normal":{"x":0,"y":0,"z":1},"stiffness":20001}]}`},
		{schema.EffectsUpdateInput, `{"set":[{"id":"w","type":"wall","position":{"x":0,"y":0,"z":0},"stiffness":1}]}`},
		{schema.EffectsUpdateInput, `{"set":[{"id":"a b","type":"damper","scalar":1}]}`},
		{schema.EffectsUpdateInput, `{"set":[{"id":"d","type":"damper"}]}`},
		{schema.EffectsUpdateInput, `{"set":[{"id":"v","type":"vibration","frequency":900,"amplitude":1}]}`},
		{schema.EffectsUpdateInput, `{"set":[{"id":"s","type":"sdf","shape":{"primitive":"teapot","parameters":{}}}]}`},
		{schema.EffectsUpdateInput, `{"set":[{"id":"s","type":"magnet"}]}`},
		{schema.EffectsUpdateInput, `{"set":[{"id":"m","type":"field","jacobian":[[1,0,0],[0,1],[0,0,1]],"origin":{"x":0,"y":0,"z":0},"radius":1}]}`},
		{schema.EntryName(protocol.KeyNavigation) + ".input", `{"mode":"teleport"}`},
		{schema.EntryName(protocol.KeyNavigation) + ".input", `{"bubble":{"max_speed":11}}`},
		{schema.EntryName(protocol.KeyForceClamp) + ".input", `{"max_force":51}`},
	} {
		err := v.Check(tt.name, []byte(tt.doc))
		if err == nil {
			t.Errorf("%s accepts %s", tt.name, tt.doc)
		}
		k := protocol.KeyNavigation
		switch {
		case strings.HasPrefix(tt.name, "effects"):
			if _, _, perr := protocol.DecodeEffectsUpdate([]byte(tt.doc), ""); perr == nil {
				t.Errorf("the decoder accepts %s", tt.doc)
			}
			continue
		case strings.Contains(tt.name, "force_clamp"):
			k = protocol.KeyForceClamp
		}
		if _, perr := protocol.DecodeEntry(k, []byte(tt.doc), ""); perr == nil {
			t.Errorf("the decoder accepts %s", tt.doc)
		}
	}
}

// A state frame whose arms carry the extension members validates against
// the frame schemas, whole and with a subscribed subset of fields.
func TestSchemaFramesWithStateExtensions(t *testing.T) {
	v := effectsValidator(t)
	types, err := protocol.NewTypeTable(nil)
	if err != nil {
		t.Fatal(err)
	}
	ext := &protocol.ArmStateExtensions{
		HasEffects: true, EffectCount: 2, Proxies: []protocol.EffectProxy{{ID: "floor", PositionM: protocol.Vec3{Z: 0.05}, Contact: true}},
		HasPassivity: true, Passivity: protocol.PassivityState{EnergyJ: -0.002, AddedDampingNsPerM: 1.5},
		HasNavigation: true, Navigation: protocol.NavigationState{Zone: protocol.ZoneDead, VelocityZoneWidthM: 0.03},
	}
	f := &protocol.Frame{SessionID: 1, Arms: []protocol.ArmFrame{
		{DeviceID: "049D", State: protocol.ArmState{BodyOrientation: protocol.Quat{W: 1}, Ext: ext}},
		{DeviceID: "0A11", State: protocol.ArmState{BodyOrientation: protocol.Quat{W: 1}}},
	}}
	frame := protocol.AppendFrame(nil, f, types)
	if !strings.Contains(string(frame), `"effects":{"count":2`) || !strings.Contains(string(frame), `"passivity":{"energy":-0.002`) {
		t.Fatalf("frame without the extensions: %s", frame)
	}
	if err := v.Check(schema.StateFrame, frame); err != nil {
		t.Fatal(err)
	}
	var m protocol.ClientMessage
	if errs := protocol.DecodeClientMessage([]byte(`{"session":{"configure":{"subscribe":{"state":["cursor_position"]}}}}`), types, &m); len(errs) != 0 {
		t.Fatal(errs)
	}
	f.ArmState = m.Session.Subscribe.ArmState
	sub := protocol.AppendFrame(nil, f, types)
	if !strings.Contains(string(sub), `"state":{"cursor_position":{"x":0,"y":0,"z":0},"effects":`) {
		t.Fatalf("subset frame: %s", sub)
	}
	if err := v.Check(schema.StateFrameSubset, sub); err != nil {
		t.Fatal(err)
	}
	// A member the schema does not know still fails: the extensions did
	// not open the state object.
	bad := []byte(strings.Replace(string(frame), `"passivity":`, `"passivity_x":1,"passivity":`, 1))
	if err := v.Check(schema.StateFrame, bad); err == nil {
		t.Fatal("an unknown state member validates")
	}
}
