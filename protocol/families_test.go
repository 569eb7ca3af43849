package protocol

import (
	"encoding/json"
	"strings"
	"testing"
)

// state.transform leaves out each part at its identity, as the vendor's 3.5
// frames do, and writes every other part whole.
func TestStateTransformOmitsIdentityParts(t *testing.T) {
	id := Transform{Rotation: Quat{W: 1}, Scale: Vec3{X: 1, Y: 1, Z: 1}}
	moved, turned, scaled := id, id, id
	moved.Position = Vec3{X: 0.1}
	turned.Rotation = Quat{W: 0.7071067811865476, Z: 0.7071067811865476}
	scaled.Scale = Vec3{X: 2, Y: 2, Z: 2}
	all := Transform{Position: moved.Position, Rotation: turned.Rotation, Scale: scaled.Scale}
	for _, tt := range []struct {
		name string
		tr   Transform
		want string
	}{
		{"identity", id, `{}`},
		{"zero value", Transform{}, `{}`},
		{"position only", moved, `{"position":{"x":0.1,"y":0,"z":0}}`},
		{"rotation only", turned, `{"rotation":{"w":0.7071067811865476,"x":0,"y":0,"z":0.7071067811865476}}`},
		{"scale only", scaled, `{"scale":{"x":2,"y":2,"z":2}}`},
		{"every part", all, `{"position":{"x":0.1,"y":0,"z":0},"rotation":{"w":0.7071067811865476,"x":0,"y":0,"z":0.7071067811865476},"scale":{"x":2,"y":2,"z":2}}`},
	} {
		got := string(appendPartialTransform(nil, tt.tr))
		if got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
}

// A Minverse or an Inverse3x in the inverse3 array says so in config.type;
// under the reference's names config.type is the array's name; a wired
// grip carries status.error and a wireless one does not.
func TestFrameNamesTheFamily(t *testing.T) {
	haply, _ := NewTypeTable(nil)
	reference, _ := NewNamedTypeTable(NamingReference, nil)
	for _, tt := range []struct {
		types      *TypeTable
		model      int
		array, typ string
	}{
		{haply, 6, "inverse3", "minverse"},
		{haply, 5, "inverse3", "inverse3x"},
		{haply, 4, "inverse3", "inverse3"},
		{haply, 99, "inverse3", "inverse3"},
		{reference, 6, "arm3", "arm3"},
	} {
		fam := FamilyOf(TypeArm, LinkAny, tt.model)
		f := Frame{Arms: []ArmFrame{{DeviceID: "049D", Config: &DeviceView{Info: DeviceInfo{ID: "049D", Model: fam.DeviceType, Family: fam.Name}}}}}
		var doc map[string][]struct {
			Config struct {
				Type       string `json:"type"`
				DeviceInfo struct {
					DeviceType int `json:"device_type"`
				} `json:"device_info"`
			} `json:"config"`
		}
		b := AppendFrame(nil, &f, tt.types)
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		if arms := doc[tt.array]; len(arms) != 1 || arms[0].Config.Type != tt.typ || arms[0].Config.DeviceInfo.DeviceType != fam.DeviceType {
			t.Errorf("model %d: %s, want it under %s with config.type %s", tt.model, b, tt.array, tt.typ)
		}
	}
	f := Frame{Grips: []GripFrame{{DeviceID: "1", Link: LinkWired, Status: GripStatus{Error: 3}}, {DeviceID: "2", Link: LinkWireless}}}
	b := string(AppendFrame(nil, &f, haply))
	if !strings.Contains(b, `"verse_grip":[{"device_id":"1"`) || !strings.Contains(b, `"ready":false,"error":3}`) || strings.Count(b, `"error"`) != 1 {
		t.Fatalf("grip status: %s", b)
	}
}
