package protocol

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// A rotation or a direction of any finite magnitude names what its
// direction says: {"w": 1e200} is the identity as {"w": 2} is. The
// decoders refused a quaternion or vector whose squared length overflowed
// (1e200, 1e308) or underflowed (1e-200) with "must be a non-zero
// quaternion/vector", which is false, while the schema (only the zero
// quaternion is refused) accepted it. Only zero is refused now.
func TestRotationsAndDirectionsOfAnyMagnitude(t *testing.T) {
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12 }
	h := math.Sqrt(0.5)
	for _, m := range []string{"2", "1e200", "1e308", "1.7976931348623157e308", "1e-200", "5e-324", "1e154", "1e-160"} {
		t.Run(m, func(t *testing.T) {
			// Two equal components: the direction must survive, not only a
			// single axis (which any rescaling would keep).
			quat := fmt.Sprintf(`{"w":%s,"x":%s,"y":0,"z":0}`, m, m)
			vec := fmt.Sprintf(`{"x":0,"y":%s,"z":%s}`, m, m)
			e, err := DecodeEntry(KeyMount, []byte(`{"transform":{"rotation":`+quat+`}}`), "")
			if err != nil {
				t.Fatalf("mount rotation %s: %v", quat, err)
			}
			if r := e.(Mount).Transform.Rotation; !near(r.W, h) || !near(r.X, h) || r.Y != 0 || r.Z != 0 {
				t.Errorf("mount rotation %s: %+v", quat, r)
			}
			u, _, err := DecodeEffectsUpdate([]byte(`{"set":[`+
				`{"id":"w","type":"wall","position":{"x":0,"y":0,"z":0},"normal":`+vec+`,"stiffness":1},`+
				`{"id":"s","type":"spring","anchor":"line","position":{"x":0,"y":0,"z":0},"direction":`+vec+`,"stiffness":1},`+
				`{"id":"v","type":"vibration","frequency":10,"amplitude":1,"direction":`+vec+`},`+
				`{"id":"b","type":"limit_box","center":{"x":0,"y":0,"z":0},"half_extents":{"x":0.1,"y":0.1,"z":0.1},"rotation":`+quat+`,"stiffness":1},`+
				`{"id":"f","type":"sdf","shape":{"primitive":"sphere","parameters":{"r":0.1}},"transform":{"rotation":`+quat+`}}`+
				`]}`), "")
			if err != nil {
				t.Fatalf("effects: %v", err)
			}
			for i, d := range []Vec3{u.Set[0].Wall.Normal, u.Set[1].Spring.Direction, u.Set[2].Vibration.Direction} {
				if d.X != 0 || !near(d.Y, h) || !near(d.Z, h) {
					t.Errorf("%s's direction %s: %+v", u.Set[i].ID, vec, d)
				}
			}
			for i, r := range []Quat{u.Set[3].LimitBox.Rotation, u.Set[4].SDF.Pose.Rotation} {
				if !near(r.W, h) || !near(r.X, h) || r.Y != 0 || r.Z != 0 {
					t.Errorf("%s's rotation %s: %+v", u.Set[3+i].ID, quat, r)
				}
			}
			// An SDF plane's normal is bounded by the SDF length (100), so
			// only the tiny magnitudes reach it.
			if f, _ := parseFloatForTest(m); f <= 1 {
				u, _, err := DecodeEffectsUpdate([]byte(`{"set":[{"id":"p","type":"sdf","shape":{"primitive":"plane","parameters":{"n":`+vec+`,"h":0}}}]}`), "")
				if err != nil {
					t.Fatalf("plane normal %s: %v", vec, err)
				}
				if n := u.Set[0].SDF.Shape.Params.N; n.X != 0 || !near(n.Y, h) || !near(n.Z, h) {
					t.Errorf("plane normal %s: %+v", vec, n)
				}
			}
		})
	}
	// Zero is still refused, by a message that is now true.
	for _, tc := range []struct{ key, body string }{
		{"mount", `{"transform":{"rotation":{"w":0,"x":0,"y":-0,"z":0}}}`},
	} {
		if _, err := DecodeEntry(KeyMount, []byte(tc.body), ""); err == nil || !strings.Contains(err.Message, "non-zero quaternion") {
			t.Errorf("%s %s: %v", tc.key, tc.body, err)
		}
	}
	for _, body := range []string{
		`{"set":[{"id":"w","type":"wall","position":{"x":0,"y":0,"z":0},"normal":{"x":0,"y":-0,"z":0},"stiffness":1}]}`,
		`{"set":[{"id":"p","type":"sdf","shape":{"primitive":"plane","parameters":{"n":{"x":0,"y":0,"z":0},"h":0}}}]}`,
		`{"set":[{"id":"b","type":"limit_box","center":{"x":0,"y":0,"z":0},"half_extents":{"x":0.1,"y":0.1,"z":0.1},"rotation":{"w":0,"x":0,"y":0,"z":0},"stiffness":1}]}`,
	} {
		if _, _, err := DecodeEffectsUpdate([]byte(body), ""); err == nil || !strings.Contains(err.Message, "non-zero") {
			t.Errorf("%s: %v", body, err)
		}
	}
}

func parseFloatForTest(s string) (float64, error) {
	var f float64
	_, err := fmt.Sscan(s, &f)
	return f, err
}
