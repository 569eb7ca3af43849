package protocol

import (
	"encoding/json"
	"testing"
)

// A stored document with one entry this build does not accept: the strict
// decode (DeviceConfig, SessionConfig) refuses it whole, the stored one
// keeps every other entry, gives that one its default and names it.
func TestStoredConfigKeepsTheEntriesThatDecode(t *testing.T) {
	device := []struct {
		doc  string
		bad  Key
		kept func(DeviceConfig) bool
	}{
		{`{"handedness":"ambidextrous","force_clamp":{"max_force":7}}`, KeyHandedness,
			func(c DeviceConfig) bool { return c.ForceClamp.MaxForceN == 7 && c.Handedness == "right" }},
		{`{"handedness":"left","gravity_compensation":{"enabled":true,"scaling_factor":"half"}}`, KeyGravityCompensation,
			func(c DeviceConfig) bool {
				return c.Handedness == "left" && c.GravityCompensation == DefaultDeviceConfig().GravityCompensation
			}},
	}
	for _, tc := range device {
		if err := json.Unmarshal([]byte(tc.doc), new(DeviceConfig)); err == nil {
			t.Errorf("DeviceConfig took %s", tc.doc)
		}
		var s StoredDeviceConfig
		if err := json.Unmarshal([]byte(tc.doc), &s); err != nil {
			t.Fatalf("StoredDeviceConfig of %s: %v", tc.doc, err)
		}
		if len(s.Rejected) != 1 || s.Rejected[0].Key != tc.bad || s.RejectedEntries() == nil || !tc.kept(s.Config) {
			t.Errorf("StoredDeviceConfig of %s: %+v", tc.doc, s)
		}
	}
	session := []struct {
		doc  string
		bad  Key
		kept func(SessionConfig) bool
	}{
		{`{"preset":"arm_front_centered","damping":{"scalar":0.5},"navigation":{"mode":"bubble","bubble":{"center":{"mode":"a-newer-mode"}}}}`, KeyNavigation,
			func(c SessionConfig) bool {
				return c.Preset == "arm_front_centered" && c.Damping.Scalar != nil && *c.Damping.Scalar == 0.5 && c.Navigation == DefaultNavigation()
			}},
		{`{"preset":"a-newer-preset","force_gate":{"gain":0.5}}`, KeyPreset,
			func(c SessionConfig) bool { return c.Preset == "defaults" && c.ForceGate.Gain == 0.5 }},
		{`{"preset":"custom","mount":{"transform":"x"},"force_gate":{"gain":0.5}}`, KeyMount,
			func(c SessionConfig) bool { return c.Preset == "defaults" && c.ForceGate.Gain == 0.5 }},
	}
	for _, tc := range session {
		if err := json.Unmarshal([]byte(tc.doc), new(SessionConfig)); err == nil {
			t.Errorf("SessionConfig took %s", tc.doc)
		}
		var s StoredSessionConfig
		if err := json.Unmarshal([]byte(tc.doc), &s); err != nil {
			t.Fatalf("StoredSessionConfig of %s: %v", tc.doc, err)
		}
		if len(s.Rejected) != 1 || s.Rejected[0].Key != tc.bad || !tc.kept(s.Config) {
			t.Errorf("StoredSessionConfig of %s: %+v", tc.doc, s)
		}
	}
	// Not an object: an error for both, as before.
	if err := json.Unmarshal([]byte(`[1]`), new(StoredDeviceConfig)); err == nil {
		t.Error("StoredDeviceConfig took an array")
	}
}

// A name given twice in a stored document counts by its last occurrence,
// as on the wire: a bad first one is not reported rejected while the
// second is in force (tourstate), and a bad last one is, whatever came
// before it.
func TestStoredConfigNameGivenTwiceCountsByItsLast(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      string // the handedness in force
		rejected  bool
	}{
		{"bad, then good", `{"handedness":"sideways","handedness":"left"}`, "left", false},
		{"good, then bad", `{"handedness":"left","handedness":"sideways"}`, "right", true},
		{"good, then good", `{"handedness":"left","handedness":"right"}`, "right", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s StoredDeviceConfig
			if err := json.Unmarshal([]byte(tc.doc), &s); err != nil {
				t.Fatal(err)
			}
			if string(s.Config.Handedness) != tc.want || (len(s.Rejected) > 0) != tc.rejected {
				t.Errorf("%s: handedness %q, rejected %+v; want %q, rejected %v", tc.doc, s.Config.Handedness, s.Rejected, tc.want, tc.rejected)
			}
		})
	}
	var s StoredSessionConfig
	if err := json.Unmarshal([]byte(`{"basis":{"permutation":"XXY"},"basis":{"permutation":"ZYX"}}`), &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Rejected) != 0 || s.Config.Basis == nil || s.Config.Basis.Permutation != "ZYX" {
		t.Errorf("a profile document's basis given bad, then good: %+v", s)
	}
}
