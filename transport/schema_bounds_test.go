package transport

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hapticd/hapticd/actors/recording"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/schema"
)

// agreeCase is one document that the schema and the decoder must judge
// alike: both accept it or both refuse it (docs/protocol.md, Schema: what
// the schema refuses is what the service answers with errors).
type agreeCase struct {
	name   string // the schema
	doc    string
	decode func(doc []byte) bool // accepted by the decoder
}

func effectsDecoder(doc []byte) bool {
	_, _, err := protocol.DecodeEffectsUpdate(doc, "")
	return err == nil
}

func entryDecoder(k protocol.Key) func([]byte) bool {
	return func(doc []byte) bool {
		_, err := protocol.DecodeEntry(k, doc, "")
		return err == nil
	}
}

func messageDecoder(doc []byte) bool {
	var m protocol.ClientMessage
	return len(protocol.DecodeClientMessage(doc, nil, &m)) == 0
}

func jnum(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// around lists values at a range's ends and just past them, from the Go
// constants the decoder checks against.
func around(lo, hi float64) []float64 {
	return []float64{lo, hi, math.Nextafter(lo, math.Inf(-1)), math.Nextafter(hi, math.Inf(1)), (lo + hi) / 2}
}

// TestSchemaAndDecoderAgree: the tour (tourhostile) found bounds the
// service enforced that the schema did not state (a deprecated
// force_scale past 1, a gravity_scaling_factor past 2, a handedness
// "LEFT", a bubble centre or an effect position past its bound, a
// subscribed device of an unknown type, a zero normal) and the other way
// nulls the service takes as absent that the schema refused (an effect's
// damping, ttl_ms, keep, ...). Each value is built from the constant the
// decoder checks, at the bound and just past it, and every effect member
// is tried as null, so a bound changed in the code alone fails here.
func TestSchemaAndDecoderAgree(t *testing.T) {
	v := effectsValidator(t)
	var cases []agreeCase
	add := func(name string, decode func([]byte) bool, doc string) {
		cases = append(cases, agreeCase{name, doc, decode})
	}

	// Deprecated bodies are checked as their replacements are.
	for _, r := range protocol.DeprecatedRoutes() {
		name := schema.DeprecatedBodyName(r)
		decode := func(doc []byte) bool { _, err := r.Translate(doc); return err == nil }
		dev := ""
		if r.Key != 0 {
			dev = `"device_id":"049D",`
		}
		for _, f := range r.LegacyFields() {
			var values []string
			switch {
			case r.Setting == protocol.SettingForceScale:
				for _, x := range around(0, protocol.ForceScaleMax) {
					values = append(values, jnum(x))
				}
			case f.To == "scaling_factor":
				for _, x := range around(0, protocol.GravityScaleMax) {
					values = append(values, jnum(x))
				}
			case f.To == "handedness":
				values = []string{`"left"`, `"right"`, `"LEFT"`, `"up"`, `""`}
			case f.Kind == protocol.KindBool:
				values = []string{"true", "false", "1"}
			}
			values = append(values, "null")
			for _, x := range values {
				// Every other field valid.
				body := "{" + dev
				for _, g := range r.LegacyFields() {
					val := x
					if g.Name != f.Name {
						val = map[protocol.JSONKind]string{protocol.KindBool: "true", protocol.KindNumber: "0.5", protocol.KindString: `"left"`}[g.Kind]
					}
					body += fmt.Sprintf("%q:%s,", g.Name, val)
				}
				add(name, decode, strings.TrimSuffix(body, ",")+"}")
			}
		}
	}

	// Navigation: every numeric member of the bubble from the decoder's
	// table, the centre's position.
	nav := schema.EntryName(protocol.KeyNavigation) + ".input"
	for _, n := range protocol.BubbleNumbers() {
		for _, x := range around(n.Lo, n.Hi) {
			add(nav, entryDecoder(protocol.KeyNavigation), fmt.Sprintf(`{"mode":"bubble","bubble":{%q:%s}}`, n.Name, jnum(x)))
		}
	}
	for _, x := range around(-protocol.NavCenterMax, protocol.NavCenterMax) {
		add(nav, entryDecoder(protocol.KeyNavigation), fmt.Sprintf(`{"bubble":{"center":{"position":{"x":0,"y":%s,"z":0}}}}`, jnum(x)))
	}

	for _, shape := range []string{
		`{"primitive":"sphere","parameters":{"r":` + jnum(protocol.NavShapeMax) + `}}`,
		`{"primitive":"sphere","parameters":{"r":` + jnum(math.Nextafter(protocol.NavShapeMax, 1)) + `}}`,
		`{"primitive":"box","parameters":{"b":{"x":0.1,"y":0.1,"z":` + jnum(math.Nextafter(protocol.NavShapeMax, 1)) + `}}}`,
		`{"primitive":"plane","parameters":{"n":{"x":0,"y":0,"z":1},"h":0}}`,
		`{"primitive":"cone","parameters":{"c":{"x":0.6,"y":0.8},"h":0.05}}`,
		`{"primitive":"torus","parameters":{"r1":0.1,"r2":0.05}}`,
	} {
		add(nav, entryDecoder(protocol.KeyNavigation), `{"mode":"bubble","bubble":{"shape":`+shape+`}}`)
	}

	// Effects: one valid effect of every type, each member in turn null
	// (absent: a default, or the error for a required one), each point at
	// and past its bound, each direction zero.
	base := map[string]string{
		"spring":       `"anchor":"line","position":{"x":0,"y":0,"z":0},"direction":{"x":0,"y":0,"z":1},"stiffness":100,"damping":1`,
		"damper":       `"scalar":1,"vector":{"x":1,"y":0,"z":0}`,
		"friction":     `"force":0.4,"slip_velocity":0.01`,
		"wall":         `"position":{"x":0,"y":0,"z":0},"normal":{"x":0,"y":0,"z":1},"stiffness":100,"damping":1`,
		"limit_sphere": `"center":{"x":0,"y":0,"z":0},"radius":0.1,"keep":"inside","stiffness":100,"damping":1`,
		"limit_box":    `"center":{"x":0,"y":0,"z":0},"half_extents":{"x":0.1,"y":0.1,"z":0.1},"rotation":{"w":1,"x":0,"y":0,"z":0},"keep":"outside","stiffness":100,"damping":1`,
		"field":        `"force":{"x":0,"y":0,"z":1},"jacobian":[[-1,0,0],[0,-1,0],[0,0,-1]],"origin":{"x":0,"y":0,"z":0},"radius":0.1,"valid_ms":100`,
		"vibration":    `"frequency":100,"amplitude":0.5,"duration_ms":100,"direction":{"x":0,"y":0,"z":1}`,
		"sdf":          `"shape":{"primitive":"sphere","parameters":{"r":0.05}},"transform":{"position":{"x":0,"y":0,"z":0}},"force_scale":1,"range":0.01,"ease":"linear","reverse_easing":false,"symmetry":"single","blend":"additive"`,
	}
	effect := func(typ, members string) string {
		return `{"set":[{"id":"e","type":"` + typ + `","ttl_ms":1000,` + members + `}]}`
	}
	for i, typ := range protocol.EffectTypeNames() {
		b, ok := base[typ]
		if !ok {
			t.Fatalf("no base effect of type %s", typ)
		}
		add(schema.EffectsUpdateInput, effectsDecoder, effect(typ, b))
		fields := append(protocol.EffectFields(protocol.EffectType(i+1)), "ttl_ms", "id", "type")
		for _, f := range fields {
			// The member given last wins: null after the base's value.
			add(schema.EffectsUpdateInput, effectsDecoder, effect(typ, b+fmt.Sprintf(",%q:null", f)))
		}
		for _, p := range []string{"position", "center", "origin"} {
			if !slices.Contains(fields, p) {
				continue
			}
			for _, x := range around(-protocol.EffectLengthMax, protocol.EffectLengthMax) {
				add(schema.EffectsUpdateInput, effectsDecoder, effect(typ, b+fmt.Sprintf(`,%q:{"x":%s,"y":0,"z":0}`, p, jnum(x))))
			}
		}
		for _, d := range []string{"normal", "direction"} {
			if slices.Contains(fields, d) {
				for _, x := range []string{"0", "1e200", "1e-200", "-1"} {
					add(schema.EffectsUpdateInput, effectsDecoder, effect(typ, b+fmt.Sprintf(`,%q:{"x":%s,"y":0,"z":0}`, d, x)))
				}
			}
		}
	}
	for _, anchor := range []string{"point", "line", "plane"} {
		add(schema.EffectsUpdateInput, effectsDecoder, effect("spring", `"anchor":"`+anchor+`","position":{"x":0,"y":0,"z":0},"stiffness":1`))
	}
	for _, q := range []string{`{"w":0,"x":0,"y":0,"z":0}`, `{"w":1e200,"x":0,"y":0,"z":0}`, `{"w":0,"x":1e-200,"y":0,"z":0}`} {
		add(schema.EffectsUpdateInput, effectsDecoder, effect("limit_box", base["limit_box"]+`,"rotation":`+q))
		add(schema.EffectsUpdateInput, effectsDecoder, effect("sdf", `"shape":"sphere","params":{"r":0.1},"transform":{"rotation":`+q+`}`))
		add(schema.EntryName(protocol.KeyMount)+".input", entryDecoder(protocol.KeyMount), `{"transform":{"rotation":`+q+`}}`)
	}
	for _, x := range around(-protocol.EffectLengthMax, protocol.EffectLengthMax) {
		add(schema.EffectsUpdateInput, effectsDecoder, effect("sdf", fmt.Sprintf(`"shape":"sphere","params":{"r":0.1},"transform":{"position":{"x":%s,"y":0,"z":0}}`, jnum(x))))
	}
	for _, s := range []string{"1", "-1", "0.5"} {
		add(schema.EffectsUpdateInput, effectsDecoder, effect("sdf", `"shape":"sphere","params":{"r":0.1},"transform":{"scale":{"x":`+s+`,"y":`+s+`,"z":`+s+`}}`))
	}
	for _, n := range []string{`{"x":0,"y":0,"z":0}`, `{"x":0,"y":0,"z":1e-200}`, `{"x":0,"y":0,"z":100}`, `{"x":0,"y":0,"z":101}`} {
		add(schema.EffectsUpdateInput, effectsDecoder, effect("sdf", `"shape":{"primitive":"plane","parameters":{"n":`+n+`,"h":0}}`))
	}
	for _, sc := range []string{`{"x":0,"y":0}`, `{"x":0.6,"y":0.8}`, `{"x":1e308,"y":1e308}`} {
		add(schema.EffectsUpdateInput, effectsDecoder, effect("sdf", `"shape":{"primitive":"capped_torus","parameters":{"r1":0.05,"r2":0.01,"sc":`+sc+`}}`))
	}

	for _, list := range []string{`["a","b"]`, `["a","a"]`} {
		add(schema.EffectsUpdateInput, effectsDecoder, `{"remove":`+list+`}`)
	}

	// Every entry as the service writes it is a valid body; each of its
	// members in turn null must be judged alike too.
	for _, k := range protocol.Keys() {
		body := string(protocol.DefaultEntry(k).AppendJSON(nil))
		name := schema.EntryName(k) + ".input"
		add(name, entryDecoder(k), body)
		var members map[string]any
		if json.Unmarshal([]byte(body), &members) != nil {
			continue
		}
		for m := range members {
			add(name, entryDecoder(k), strings.TrimSuffix(body, "}")+fmt.Sprintf(",%q:null}", m))
		}
	}

	// A subscribed device's type is one the decoder resolves, exactly.
	for _, typ := range []string{"arm3", "inverse3", "verse_grip", "ARM3", "robot", ""} {
		add("client-message", messageDecoder, `{"session":{"configure":{"subscribe":{"devices":[{"device_type":"`+typ+`","device_id":"049D"}]}}}}`)
	}

	for _, c := range cases {
		byDecoder := c.decode([]byte(c.doc))
		err := v.Check(c.name, []byte(c.doc))
		if bySchema := err == nil; bySchema != byDecoder {
			t.Errorf("%s %s: the decoder accepts it: %v, the schema: %v (%v)", c.name, c.doc, byDecoder, bySchema, err)
		}
	}
	t.Logf("%d documents judged alike", len(cases))
}

// The served schema of POST /recordings' body states what the service
// checks of a name and a rate (tourhostile: it took any string and any
// number): each document at the rules' edges is judged alike by the
// schema and by the service's decoder and Options.Check.
func TestRecordingSchemaAndDecoderAgree(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	name := func(n string) string { return `{"name":` + strconv.Quote(n) + `}` }
	docs := []string{
		name(""), name("a"), name("run-1_b.mcap"), name("_x"), name("-x"), name(".hidden"), name("a b"), name("é"),
		name("a/b"), name(strings.Repeat("n", recording.MaxNameLen)), name(strings.Repeat("n", recording.MaxNameLen+1)),
		`{"name":null}`, `{"rate_hz":null}`, `{}`, `{"devices":[]}`, `{"sessions":[]}`, `{"devices":["X"]}`, `{"sessions":[1]}`,
	}
	for _, r := range []float64{0, recording.MinRateHz, math.Nextafter(recording.MinRateHz, 0), 1000, -1, -recording.MinRateHz} {
		docs = append(docs, `{"rate_hz":`+jnum(r)+`}`)
	}
	for _, doc := range docs {
		schemaOK := ts.schema.Check("recording.input", []byte(doc)) == nil
		o, perr := decodeRecordingOptions([]byte(doc))
		serviceOK := perr == nil && o.Check() == nil
		if schemaOK != serviceOK {
			t.Errorf("%s: the schema accepts it %v, the service %v", doc, schemaOK, serviceOK)
		}
	}
}
