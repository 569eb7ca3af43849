package hw

import "math"

// Value helpers on Vec3 and Angles3. They take and return values and are
// small enough to inline, so tick-path code that uses them allocates
// nothing.

// Add returns v+w.
func (v Vec3) Add(w Vec3) Vec3 { return Vec3{X: v.X + w.X, Y: v.Y + w.Y, Z: v.Z + w.Z} }

// Sub returns v−w.
func (v Vec3) Sub(w Vec3) Vec3 { return Vec3{X: v.X - w.X, Y: v.Y - w.Y, Z: v.Z - w.Z} }

// Scale returns v·k.
func (v Vec3) Scale(k float64) Vec3 { return Vec3{X: v.X * k, Y: v.Y * k, Z: v.Z * k} }

// Dot returns the dot product v·w.
func (v Vec3) Dot(w Vec3) float64 { return v.X*w.X + v.Y*w.Y + v.Z*w.Z }

// Norm returns v's Euclidean length.
func (v Vec3) Norm() float64 { return math.Sqrt(v.Dot(v)) }

// Finite reports whether v is usable as a value: no component is NaN or
// infinite. Components so large that their sum overflows count as not
// finite too; no force, position or speed a device handles comes near.
func (v Vec3) Finite() bool {
	s := v.X + v.Y + v.Z
	return !math.IsNaN(s) && !math.IsInf(s, 0)
}

// ClampNorm returns v scaled down to length limit, keeping its direction,
// or v itself when it is no longer than limit.
func (v Vec3) ClampNorm(limit float64) Vec3 {
	n2 := v.Dot(v)
	if n2 <= limit*limit {
		return v
	}
	return v.Scale(limit / math.Sqrt(n2))
}

// Finite reports whether no value of a is NaN or infinite, as Vec3.Finite
// does.
func (a Angles3) Finite() bool {
	s := a.A0 + a.A1 + a.A2
	return !math.IsNaN(s) && !math.IsInf(s, 0)
}
