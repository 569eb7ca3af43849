package effect

import (
	"math"

	"github.com/hapticd/hapticd/hw"
)

// freeDistance is a wall-like effect's signed distance from x to its
// surface, positive on the free side (where the cursor may be) and negative
// past the surface, in metres.
func freeDistance(s *state, p *Params, x hw.Vec3) float64 {
	switch s.kind {
	case Wall:
		return p.AxisUnit.Dot(x.Sub(p.PointM))
	case LimitSphere:
		d := x.Sub(p.PointM).Norm() - p.RadiusM
		if s.keepIn {
			return -d
		}
		return d
	case LimitBox:
		d := sdBox(x.Sub(p.PointM), p.HalfExtentsM)
		if s.keepIn {
			return -d
		}
		return d
	case Shape:
		d := shapeDistance(s.prim, p, x)
		if s.keepIn {
			return -d
		}
		return d
	}
	return math.Inf(1)
}

// freeNormal is the unit gradient of freeDistance at x: the direction out
// of the wall into free space. The plane, the sphere and the boxes have it
// in closed form; the other shapes take central differences (6 more
// distances).
func freeNormal(s *state, p *Params, x hw.Vec3) hw.Vec3 {
	var n hw.Vec3
	switch {
	case s.kind == Wall:
		return p.AxisUnit
	case s.kind == LimitSphere || (s.kind == Shape && s.prim == PrimSphere):
		n = x.Sub(p.PointM)
		if s.keepIn {
			n = n.Scale(-1)
		}
	case s.kind == Shape && s.prim == PrimPlane:
		n = p.AxisUnit
		if s.keepIn {
			n = n.Scale(-1)
		}
	case s.kind == LimitBox || (s.kind == Shape && (s.prim == PrimBox || s.prim == PrimRoundedBox)):
		n = boxGradient(x.Sub(p.PointM), p.HalfExtentsM)
		if s.keepIn {
			n = n.Scale(-1)
		}
	default:
		const h = 1e-6 // m: far below a desk arm's encoder resolution
		n = hw.Vec3{
			X: freeDistance(s, p, hw.Vec3{X: x.X + h, Y: x.Y, Z: x.Z}) - freeDistance(s, p, hw.Vec3{X: x.X - h, Y: x.Y, Z: x.Z}),
			Y: freeDistance(s, p, hw.Vec3{X: x.X, Y: x.Y + h, Z: x.Z}) - freeDistance(s, p, hw.Vec3{X: x.X, Y: x.Y - h, Z: x.Z}),
			Z: freeDistance(s, p, hw.Vec3{X: x.X, Y: x.Y, Z: x.Z + h}) - freeDistance(s, p, hw.Vec3{X: x.X, Y: x.Y, Z: x.Z - h}),
		}
	}
	l := n.Norm()
	if !(l > 0) {
		return hw.Vec3{Z: 1} // the centre of a sphere: any way out will do
	}
	return n.Scale(1 / l)
}

// shapeDistance is the SDF of a primitive (negative inside), after Inigo
// Quilez's catalogue, which the vendor's shapes follow. Centred shapes sit
// on PointM; a capsule and a capped cylinder run from PointM to EndM.
func shapeDistance(prim Primitive, p *Params, x hw.Vec3) float64 {
	q := x.Sub(p.PointM)
	switch prim {
	case PrimSphere:
		return q.Norm() - p.RadiusM
	case PrimEllipsoid:
		r := p.HalfExtentsM
		k0 := hw.Vec3{X: q.X / r.X, Y: q.Y / r.Y, Z: q.Z / r.Z}.Norm()
		k1 := hw.Vec3{X: q.X / (r.X * r.X), Y: q.Y / (r.Y * r.Y), Z: q.Z / (r.Z * r.Z)}.Norm()
		if k1 == 0 {
			return -min(r.X, r.Y, r.Z)
		}
		return k0 * (k0 - 1) / k1
	case PrimBox:
		return sdBox(q, p.HalfExtentsM)
	case PrimRoundedBox:
		return sdBox(q, p.HalfExtentsM) - p.RadiusM
	case PrimPlane:
		return p.AxisUnit.Dot(q)
	case PrimCapsule:
		ba := p.EndM.Sub(p.PointM)
		h := 0.0
		if bb := ba.Dot(ba); bb > 0 {
			h = clamp01(q.Dot(ba) / bb)
		}
		return q.Sub(ba.Scale(h)).Norm() - p.RadiusM
	case PrimCappedCylinder:
		return sdCappedCylinder(q, p.EndM.Sub(p.PointM), p.RadiusM)
	case PrimCapsuleVertical:
		q.Y -= math.Max(-p.HeightM, math.Min(q.Y, p.HeightM))
		return q.Norm() - p.RadiusM
	case PrimCappedCylinderVertical:
		dx := math.Hypot(q.X, q.Z) - p.RadiusM
		dy := math.Abs(q.Y) - p.HeightM
		return math.Min(math.Max(dx, dy), 0) + math.Hypot(math.Max(dx, 0), math.Max(dy, 0))
	case PrimTorus:
		return math.Hypot(math.Hypot(q.X, q.Z)-p.RadiusM, q.Y) - p.MinorRadiusM
	case PrimBoxFrame:
		return sdBoxFrame(q, p.HalfExtentsM, p.MinorRadiusM)
	case PrimLink:
		// Quilez's sdLink, its straight runs along Y and its plane XY.
		y := math.Max(math.Abs(q.Y)-p.HeightM, 0)
		return math.Hypot(math.Hypot(q.X, y)-p.RadiusM, q.Z) - p.MinorRadiusM
	}
	return math.Inf(1)
}

// sdBoxFrame is Quilez's sdBoxFrame: the twelve edges of the box of
// half-extents b, e thick.
func sdBoxFrame(q, b hw.Vec3, e float64) float64 {
	px, py, pz := math.Abs(q.X)-b.X, math.Abs(q.Y)-b.Y, math.Abs(q.Z)-b.Z
	qx, qy, qz := math.Abs(px+e)-e, math.Abs(py+e)-e, math.Abs(pz+e)-e
	part := func(x, y, z float64) float64 {
		out := hw.Vec3{X: math.Max(x, 0), Y: math.Max(y, 0), Z: math.Max(z, 0)}.Norm()
		return out + math.Min(math.Max(x, math.Max(y, z)), 0)
	}
	return math.Min(part(px, qy, qz), math.Min(part(qx, py, qz), part(qx, qy, pz)))
}

func sdBox(q, b hw.Vec3) float64 {
	dx, dy, dz := math.Abs(q.X)-b.X, math.Abs(q.Y)-b.Y, math.Abs(q.Z)-b.Z
	out := hw.Vec3{X: math.Max(dx, 0), Y: math.Max(dy, 0), Z: math.Max(dz, 0)}.Norm()
	return out + math.Min(math.Max(dx, math.Max(dy, dz)), 0)
}

// sdCappedCylinder: q relative to the axis's start a, ba = b − a.
func sdCappedCylinder(q, ba hw.Vec3, r float64) float64 {
	baba := ba.Dot(ba)
	paba := q.Dot(ba)
	x := q.Scale(baba).Sub(ba.Scale(paba)).Norm() - r*baba
	y := math.Abs(paba-baba*0.5) - baba*0.5
	x2, y2 := x*x, y*y*baba
	var d float64
	if math.Max(x, y) < 0 {
		d = -math.Min(x2, y2)
	} else {
		if x > 0 {
			d += x2
		}
		if y > 0 {
			d += y2
		}
	}
	return math.Copysign(math.Sqrt(math.Abs(d)), d) / baba
}

func clamp01(x float64) float64 {
	if !(x > 0) {
		return 0
	}
	if x > 1 {
		return 1
	}
	return x
}
