package protocol

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/hapticd/hapticd/protocol/space"
)

// FuzzDecodeEffects: the effects decoder never panics; whatever it accepts
// encodes to valid JSON that decodes to the same effects (a declaration
// survives a recording and a gateway hop), converts to the device frame
// without NaN, and whatever it refuses carries a code of the error table and
// a message.
func FuzzDecodeEffects(f *testing.F) {
	f.Add([]byte(allEffectsBody))
	f.Add([]byte(`{"set":[` + wallJSON + `]}`))
	f.Add([]byte(`{"remove":["a"],"clear":true}`))
	f.Add([]byte(`{"set":[{"id":"s","type":"sdf","shape":"box","params":{"b":{"x":0.1,"y":0.1,"z":0.01}}}]}`))
	f.Add([]byte(`{"set":[{"id":"p","type":"sdf","shape":{"primitive":"plane","parameters":{"n":{"x":0,"y":0,"z":2},"h":-0.01}},"transform":{"rotation":{"w":0.7071,"x":0.7071,"y":0,"z":0},"scale":{"x":0.5,"y":0.5,"z":0.5}},"force_scale":20,"range":1e-9,"ease":"exponential","reverse_easing":true,"symmetry":"align"}]}`))
	f.Add([]byte(`{"set":[{"id":"c","type":"sdf","shape":{"primitive":"capsule","parameters":{"a":{"x":0,"y":0,"z":0},"b":{"x":0,"y":0,"z":0},"r":1e-300}},"ease":"smoothstep","symmetry":"mirror"}]}`))
	f.Add([]byte(`{"set":[{"id":"m","type":"field","jacobian":[[1,0,0],[0,1,0],[0,0,1e400]],"origin":{"x":0,"y":0,"z":0},"radius":1}]}`))
	basis, err := space.ParsePermutation("-XZY")
	if err != nil {
		f.Fatal(err)
	}
	view := space.NewView(basis, space.Transform{Position: Vec3{X: 0.1}, Rotation: Quat{W: 1, Z: 1}.Normalize(), Scale: Vec3{X: 3, Y: 3, Z: 3}})
	f.Fuzz(func(t *testing.T, data []byte) {
		u, warns, perr := DecodeEffectsUpdate(data, "")
		for _, w := range warns {
			checkListed(t, w)
		}
		if perr != nil {
			checkListed(t, *perr)
			return
		}
		enc := u.AppendJSON(nil)
		if !json.Valid(enc) {
			t.Fatalf("accepted %q, wrote invalid JSON %q", data, enc)
		}
		again, _, perr := DecodeEffectsUpdate(enc, "")
		if perr != nil {
			t.Fatalf("its own encoding %s is refused: %v", enc, perr)
		}
		if string(again.AppendJSON(nil)) != string(enc) {
			t.Fatalf("not stable: %s", enc)
		}
		for _, e := range u.Set {
			d := e.ToDevice(&view)
			if b, _ := json.Marshal(d); !json.Valid(b) || hasNaN(b) {
				t.Fatalf("%s in the device frame is %s", e.ID, b)
			}
		}
	})
}

// FuzzDecodeNavigation: the navigation entry decodes, encodes and decodes
// again to the same value (the sizes left to the arm then given: the
// encoding writes them), or is refused with a listed code.
func FuzzDecodeNavigation(f *testing.F) {
	f.Add([]byte(`{"mode":"bubble","bubble":{"center":{"position":{"x":0,"y":0,"z":0.1},"mode":"drift","drift_rate":0.01},"shape":{"primitive":"rounded_box","parameters":{"b":{"x":0.03,"y":0.03,"z":0.03},"r":0.01}},"easing":"cubic","collision_detection":{"hysteresis":0.001}}}`))
	f.Add([]byte(`{"mode":"off"}`))
	f.Add([]byte(`{"bubble":{"shape":{"primitive":"capped_torus","parameters":{"r1":0.1,"r2":0.02,"sc":{"x":0,"y":0}}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, warns, perr := DecodeEntryWarn(KeyNavigation, data, "")
		for _, w := range warns {
			checkListed(t, w)
		}
		if perr != nil {
			checkListed(t, *perr)
			return
		}
		enc := e.AppendJSON(nil)
		if !json.Valid(enc) || hasNaN(enc) {
			t.Fatalf("accepted %q, wrote %q", data, enc)
		}
		again, perr := DecodeEntry(KeyNavigation, enc, "")
		if perr != nil || again != e.(Navigation).SizedFor(0) {
			t.Fatalf("%s does not round-trip: %v %+v", enc, perr, again)
		}
	})
}

func checkListed(t *testing.T, e Error) {
	t.Helper()
	if _, ok := e.Code.info(); !ok || e.Message == "" {
		t.Fatalf("error %+v: code not in the table or no message", e)
	}
}

func hasNaN(b []byte) bool {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return true
	}
	var walk func(any) bool
	walk = func(v any) bool {
		switch x := v.(type) {
		case float64:
			return math.IsNaN(x) || math.IsInf(x, 0)
		case map[string]any:
			for _, y := range x {
				if walk(y) {
					return true
				}
			}
		case []any:
			for _, y := range x {
				if walk(y) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}
