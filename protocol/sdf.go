package protocol

import (
	"math"
	"strings"
)

// SDF shapes are the vendor's 3.5 signed-distance primitives (MODULES 2.1):
// the bubble of navigation and the shape of an "sdf" effect. Distance is
// negative inside, zero on the surface, positive outside, in metres of the
// space the shape is declared in. The wire form is the catalogue's nested
// {"primitive": name, "parameters": {...}}; vectors are {x, y, z}, the
// two-component parameters (sc, c) are {x, y}.

// SDFParams holds every parameter a primitive may name; a primitive uses the
// ones its row of the catalogue lists (SDFPrimitiveParams) and leaves the
// others zero. Lengths are metres.
type SDFParams struct {
	R, R1, R2, H, W, E, Le float64
	A, B, N                Vec3
	// SC is (cos, sin) of a capped torus's cap angle; C is (sin, cos) of a
	// cone's or solid angle's half angle. Both are normalised on decode.
	SC, C [2]float64
}

// SDFShape is one primitive and its parameters.
type SDFShape struct {
	Primitive string
	Params    SDFParams
}

// sdfParamKind says how a parameter is read and validated.
type sdfParamKind uint8

const (
	sdfLength   sdfParamKind = iota + 1 // number, > 0
	sdfOffset                           // number, any sign
	sdfPoint                            // vec3, any
	sdfExtents                          // vec3, each component > 0
	sdfNormal                           // vec3, non-zero, normalised
	sdfUnitPair                         // {x, y}, non-zero, normalised
)

type sdfParam struct {
	name string
	kind sdfParamKind
}

type sdfPrimitive struct {
	name   string
	params []sdfParam
}

// sdfPrimitives is the catalogue of MODULES 2.1, in its order; never
// written. "vesica_revolved" and the further "exotic" rows the vendor does
// not publish are not accepted.
var sdfPrimitives = []sdfPrimitive{
	{"sphere", []sdfParam{{"r", sdfLength}}},
	{"ellipsoid", []sdfParam{{"a", sdfExtents}}},
	{"box", []sdfParam{{"b", sdfExtents}}},
	{"rounded_box", []sdfParam{{"b", sdfExtents}, {"r", sdfLength}}},
	{"box_frame", []sdfParam{{"b", sdfExtents}, {"e", sdfLength}}},
	{"plane", []sdfParam{{"n", sdfNormal}, {"h", sdfOffset}}},
	{"capsule", []sdfParam{{"a", sdfPoint}, {"b", sdfPoint}, {"r", sdfLength}}},
	{"capped_cylinder", []sdfParam{{"a", sdfPoint}, {"b", sdfPoint}, {"r", sdfLength}}},
	{"capsule_vertical", []sdfParam{{"h", sdfLength}, {"r", sdfLength}}},
	{"capped_cylinder_vertical", []sdfParam{{"h", sdfLength}, {"r", sdfLength}}},
	{"torus", []sdfParam{{"r1", sdfLength}, {"r2", sdfLength}}},
	{"capped_torus", []sdfParam{{"r1", sdfLength}, {"r2", sdfLength}, {"sc", sdfUnitPair}}},
	{"link", []sdfParam{{"r1", sdfLength}, {"r2", sdfLength}, {"le", sdfLength}}},
	{"cone", []sdfParam{{"c", sdfUnitPair}, {"h", sdfLength}}},
	{"solid_angle", []sdfParam{{"c", sdfUnitPair}, {"r", sdfLength}}},
	{"capped_cone", []sdfParam{{"a", sdfPoint}, {"b", sdfPoint}, {"r1", sdfLength}, {"r2", sdfLength}}},
	{"rounded_cone", []sdfParam{{"a", sdfPoint}, {"b", sdfPoint}, {"r1", sdfLength}, {"r2", sdfLength}}},
}

// sdfPrimitiveNames lists the accepted primitives; never written.
var sdfPrimitiveNames = func() []string {
	out := make([]string, len(sdfPrimitives))
	for i, p := range sdfPrimitives {
		out[i] = p.name
	}
	return out
}()

// SDFPrimitiveNames lists the accepted primitive names (a copy).
func SDFPrimitiveNames() []string { return append([]string(nil), sdfPrimitiveNames...) }

// SDFParamSpec describes one parameter of a primitive for schemas and
// docs: Kind is "length" (> 0 m), "offset" (m, any sign), "point" (vec3 m),
// "extents" (vec3, each > 0 m), "normal" (vec3, non-zero) or "unit_pair"
// ({x, y}, non-zero).
type SDFParamSpec struct{ Name, Kind string }

var sdfKindNames = [...]string{sdfLength: "length", sdfOffset: "offset", sdfPoint: "point",
	sdfExtents: "extents", sdfNormal: "normal", sdfUnitPair: "unit_pair"}

// SDFPrimitiveParams lists the parameters of primitive name, all required;
// nil for an unknown primitive.
func SDFPrimitiveParams(name string) []SDFParamSpec {
	for _, p := range sdfPrimitives {
		if p.name == name {
			out := make([]SDFParamSpec, len(p.params))
			for i, q := range p.params {
				out[i] = SDFParamSpec{q.name, sdfKindNames[q.kind]}
			}
			return out
		}
	}
	return nil
}

// SDFLengthMax bounds every length and coordinate of a shape (m): a shape
// larger than this is a unit mistake (millimetres sent as metres).
const SDFLengthMax = 100.0

// SDFAxisMinM is how far apart a capped cylinder's end points must be (m):
// closer, it has no axis to measure a distance along.
const SDFAxisMinM = 1e-6

func findSDFPrimitive(name []byte) *sdfPrimitive {
	for i := range sdfPrimitives {
		if sdfPrimitives[i].name == string(name) {
			return &sdfPrimitives[i]
		}
	}
	return nil
}

// sdfBound is how long a shape's lengths and coordinates may be, and what
// a message says of it past "at most N m".
type sdfBound struct {
	maxM float64
	why  string
}

// effectShapes bounds an effect's shape; navigation's bubble has its own,
// so that its first error names the bound that holds (tourfx2: r 150 was
// told "at most 100 m", then r 99 "at most 0.5 m").
var effectShapes = sdfBound{maxM: SDFLengthMax}

// decodeSDFShape decodes {"primitive", "parameters"}, every length and
// coordinate within bound.
func decodeSDFShape(v Value, at *pathSeg, w warnings, bound sdfBound) (SDFShape, *Error) {
	const example = `{"primitive": "sphere", "parameters": {"r": 0.05}}`
	if err := expectObject(v, at, example); err != nil {
		return SDFShape{}, err
	}
	var prim, params Value
	for it := v.Members(); it.Next(); {
		switch {
		case it.KeyIs("primitive"):
			prim = it.Value()
		case it.KeyIs("parameters"):
			params = it.Value()
		default:
			w.unknownField(at, &it)
		}
	}
	pc := at.child("primitive")
	if !prim.Exists() {
		return SDFShape{}, errAt(CodeInvalidValue, at, `shape needs "primitive" (one of %s) and "parameters", e.g. %s`, nameList(sdfPrimitiveNames), example)
	}
	return decodeSDFNamed(prim, &pc, params, at.child("parameters"), w, bound)
}

// decodeSDFNamed decodes a primitive name and its parameters object; the
// nested and the flat (SDFM: "shape" string and "params") forms share it.
func decodeSDFNamed(prim Value, pc *pathSeg, params Value, parAt pathSeg, w warnings, bound sdfBound) (SDFShape, *Error) {
	b, ok := prim.StringBytes()
	if !ok {
		return SDFShape{}, errAt(CodeInvalidValue, pc, "%s must be a string (one of %s), got %s", pc.last(), nameList(sdfPrimitiveNames), prim.Kind())
	}
	p := findSDFPrimitive(b)
	if p == nil {
		return SDFShape{}, errAt(CodeInvalidValue, pc, "unknown SDF primitive %q: use one of %s", b, nameList(sdfPrimitiveNames))
	}
	out := SDFShape{Primitive: p.name}
	if !params.Exists() {
		return out, errAt(CodeInvalidValue, &parAt, "%s needs parameters %s", p.name, sdfParamList(p))
	}
	if err := expectObject(params, &parAt, `{"r": 0.05}`); err != nil {
		return out, err
	}
	var vals [4]Value
	for it := params.Members(); it.Next(); {
		known := false
		for i, q := range p.params {
			if it.KeyIs(q.name) {
				vals[i], known = it.Value(), true
			}
		}
		if !known {
			w.unknownField(&parAt, &it)
		}
	}
	for i, q := range p.params {
		c := parAt.child(q.name)
		if !vals[i].Exists() {
			return out, errAt(CodeInvalidValue, &parAt, "%s needs parameters %s: %q is missing", p.name, sdfParamList(p), q.name)
		}
		if err := readSDFParam(&out.Params, q, vals[i], &c, w, bound); err != nil {
			return out, err
		}
	}
	if l := norm3(sub3(out.Params.B, out.Params.A)); p.name == "capped_cylinder" && l < SDFAxisMinM {
		// Its axis is b − a: with none, the shape has no distance (the
		// loop refuses it), so a bubble would navigate nowhere.
		c := parAt.child("b")
		return out, errAt(CodeInvalidValue, &c, "a capped_cylinder runs from a to b, which must be at least %g m apart, got %g m", SDFAxisMinM, l)
	}
	return out, nil
}

func sdfParamList(p *sdfPrimitive) string {
	names := make([]string, len(p.params))
	for i, q := range p.params {
		names[i] = q.name
	}
	return strings.Join(names, ", ")
}

func readSDFParam(dst *SDFParams, q sdfParam, v Value, at *pathSeg, w warnings, bound sdfBound) *Error {
	switch q.kind {
	case sdfLength, sdfOffset:
		f, err := readFloat(v, at)
		if err != nil {
			return err
		}
		if q.kind == sdfLength && (f <= 0 || f > bound.maxM) {
			return errAt(CodeOutOfRange, at, "%s %g is out of range: a length above 0 and at most %g m%s", q.name, f, bound.maxM, bound.why)
		}
		if math.Abs(f) > bound.maxM {
			return errAt(CodeOutOfRange, at, "%s %g is out of range -%g..%g m%s", q.name, f, bound.maxM, bound.maxM, bound.why)
		}
		*sdfScalar(dst, q.name) = f
	case sdfPoint, sdfExtents, sdfNormal:
		vec, err := readVec3(v, at, w)
		if err != nil {
			return err
		}
		for i, comp := range [3]float64{vec.X, vec.Y, vec.Z} {
			cc := at.child(vec3Names[i])
			if limit := bound.maxM; q.kind != sdfNormal && math.Abs(comp) > limit {
				return errAt(CodeOutOfRange, &cc, "%s.%s %g is out of range -%g..%g m%s", q.name, vec3Names[i], comp, limit, limit, bound.why)
			} else if math.Abs(comp) > SDFLengthMax {
				// A normal's length is not a distance; normalised below.
				return errAt(CodeOutOfRange, &cc, "%s.%s %g is out of range -%g..%g", q.name, vec3Names[i], comp, SDFLengthMax, SDFLengthMax)
			}
			if q.kind == sdfExtents && comp <= 0 {
				return errAt(CodeOutOfRange, &cc, "%s.%s %g must be above 0 (a half-extent in m)", q.name, vec3Names[i], comp)
			}
		}
		if q.kind == sdfNormal {
			if vec == (Vec3{}) {
				return errAt(CodeOutOfRange, at, "%s must be a non-zero vector (a normal), e.g. {\"x\": 0, \"y\": 0, \"z\": 1}", q.name)
			}
			vec = unitStable(vec)
		}
		*sdfVector(dst, q.name) = vec
	case sdfUnitPair:
		var c [2]float64
		if err := readComponents(v, at, vec2Names, c[:], `{"x": 0.6, "y": 0.8}`, w); err != nil {
			return err
		}
		if c[0] == 0 && c[1] == 0 {
			return errAt(CodeOutOfRange, at, "%s must be a non-zero {x, y} pair (an angle's sine and cosine)", q.name)
		}
		n := math.Hypot(c[0], c[1])
		if math.IsInf(n, 0) {
			// Finite components past 1.3e308: scale down first, as
			// unit3 does, rather than refuse a pair that has an angle.
			m := max(math.Abs(c[0]), math.Abs(c[1]))
			c[0], c[1] = c[0]/m, c[1]/m
			n = math.Hypot(c[0], c[1])
		}
		if math.Abs(n-1) > 1e-12 {
			c[0], c[1] = c[0]/n, c[1]/n
		}
		if q.name == "sc" {
			dst.SC = c
		} else {
			dst.C = c
		}
	}
	return nil
}

var vec2Names = []string{"x", "y"}

func sdfScalar(p *SDFParams, name string) *float64 {
	switch name {
	case "r":
		return &p.R
	case "r1":
		return &p.R1
	case "r2":
		return &p.R2
	case "h":
		return &p.H
	case "w":
		return &p.W
	case "e":
		return &p.E
	}
	return &p.Le
}

func sdfVector(p *SDFParams, name string) *Vec3 {
	switch name {
	case "a":
		return &p.A
	case "b":
		return &p.B
	}
	return &p.N
}

// AppendJSON appends {"primitive": ..., "parameters": {...}} with the
// primitive's parameters in catalogue order.
func (s SDFShape) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"primitive":`...)
	dst = AppendString(dst, s.Primitive)
	dst = append(dst, `,"parameters":{`...)
	p := findSDFPrimitive([]byte(s.Primitive))
	if p != nil {
		for i, q := range p.params {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, q.name)
			dst = append(dst, ':')
			switch q.kind {
			case sdfLength, sdfOffset:
				s := s.Params
				dst = AppendFloat(dst, *sdfScalar(&s, q.name))
			case sdfUnitPair:
				c := s.Params.C
				if q.name == "sc" {
					c = s.Params.SC
				}
				dst = append(dst, `{"x":`...)
				dst = AppendFloat(dst, c[0])
				dst = append(dst, `,"y":`...)
				dst = AppendFloat(dst, c[1])
				dst = append(dst, '}')
			default:
				s := s.Params
				dst = appendVec3(dst, exact, *sdfVector(&s, q.name))
			}
		}
	}
	return append(dst, "}}"...)
}

// MarshalJSON is AppendJSON.
func (s SDFShape) MarshalJSON() ([]byte, error) { return s.AppendJSON(nil), nil }

func norm3(v Vec3) float64 { return math.Sqrt(v.X*v.X + v.Y*v.Y + v.Z*v.Z) }

func scale3(v Vec3, k float64) Vec3 { return Vec3{X: v.X * k, Y: v.Y * k, Z: v.Z * k} }

func dot3(a, b Vec3) float64 { return a.X*b.X + a.Y*b.Y + a.Z*b.Z }
