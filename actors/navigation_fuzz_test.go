package actors

import (
	"testing"

	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/space"
)

// FuzzAcceptedNavigationRenders: every navigation entry the decoder accepts
// compiles into a bubble the loop renders, under the identity and under a
// turned, scaled mount. An entry answered 200 that the loop then refuses
// navigates nowhere, with nothing but a log line to say so.
func FuzzAcceptedNavigationRenders(f *testing.F) {
	for _, shape := range []string{
		`{"primitive":"sphere","parameters":{"r":0.05}}`,
		`{"primitive":"ellipsoid","parameters":{"a":{"x":0.05,"y":0.03,"z":0.02}}}`,
		`{"primitive":"box","parameters":{"b":{"x":0.05,"y":0.03,"z":0.02}}}`,
		`{"primitive":"rounded_box","parameters":{"b":{"x":0.05,"y":0.03,"z":0.02},"r":0.01}}`,
		`{"primitive":"capsule","parameters":{"a":{"x":0,"y":0,"z":0},"b":{"x":0,"y":0,"z":0},"r":0.05}}`,
		`{"primitive":"capped_cylinder","parameters":{"a":{"x":0,"y":-0.02,"z":0},"b":{"x":0,"y":0.02,"z":0},"r":0.05}}`,
		`{"primitive":"capped_cylinder","parameters":{"a":{"x":0,"y":0.02,"z":0},"b":{"x":0,"y":0.02,"z":0},"r":0.05}}`,
		`{"primitive":"capsule_vertical","parameters":{"h":0.02,"r":0.05}}`,
		`{"primitive":"capped_cylinder_vertical","parameters":{"h":0.02,"r":0.05}}`,
		`{"primitive":"torus","parameters":{"r1":0.05,"r2":0.02}}`,
	} {
		f.Add([]byte(`{"mode":"bubble","bubble":{"shape":` + shape + `}}`))
	}
	f.Add([]byte(`{"mode":"bubble","bubble":{"center":{"position":{"x":1,"y":-1,"z":1},"mode":"drift","drift_rate":1},"velocity_zone_width":0.001,"speed_gain":100,"max_speed":10,"easing":"cubic","collision_detection":{"hysteresis":0.05}}}`))
	perm, err := space.ParsePermutation("-XZY")
	if err != nil {
		f.Fatal(err)
	}
	mounts := []space.View{
		space.NewView(space.IdentityPermutation(), space.IdentityTransform()),
		space.NewView(perm, space.Transform{Position: space.Vec3{Z: 0.2}, Rotation: space.Quat{W: 1, Y: 1}.Normalize(), Scale: space.Vec3{X: 2, Y: 2, Z: 2}}),
	}
	workspace := space.Transform{Position: space.Vec3{X: 0.1}, Rotation: space.Quat{W: 1, Z: 1}.Normalize(), Scale: space.Vec3{X: 0.5, Y: 0.5, Z: 0.5}}
	f.Fuzz(func(t *testing.T, data []byte) {
		e, _, perr := protocol.DecodeEntryWarn(protocol.KeyNavigation, data, "")
		if perr != nil {
			return
		}
		nav := e.(protocol.Navigation)
		if !nav.Enabled() {
			return
		}
		for i := range mounts {
			if _, err := compileBubble(nav, &mounts[i], workspace); err != nil {
				t.Fatalf("accepted %s, but the loop refuses it under mount %d: %v", data, i, err)
			}
		}
	})
}
