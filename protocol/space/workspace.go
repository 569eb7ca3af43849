package space

// Then stacks a workspace transform w after v (set_transform, the vendor's
// 3.5 session workspace): the application space of the result is w applied
// to the application space of v,
//
//	app' = w.Position + R_w·(w.Scale ⊙ app)
//
// so a mount places the device and the workspace then moves, turns and
// scales what the session sees. Forces, damping and orientations follow the
// same rules as NewView's: rotated and mirrored, never scaled. w's rotation
// is normalised and its scale components must be non-zero (callers
// validate). Then does not allocate.
func (v View) Then(w Transform) View {
	w.Rotation = w.Rotation.Normalize()
	r := quatToMat(w.Rotation)
	s := w.Scale
	rs := mulMat(r, diag(s))
	out := View{pos: w.Position}
	p := mulVec(&rs, v.pos)
	out.pos.X += p.X
	out.pos.Y += p.Y
	out.pos.Z += p.Z
	out.fwd = mulMat(rs, v.fwd)
	out.inv = mulMat(v.inv, mulMat(diag(Vec3{X: 1 / s.X, Y: 1 / s.Y, Z: 1 / s.Z}), transpose(r)))

	sign := diag(Vec3{X: signOf(s.X), Y: signOf(s.Y), Z: signOf(s.Z)})
	out.rot = mulMat(r, mulMat(sign, v.rot))
	// As in NewView: conjugating by the mirror sign(S) equals conjugating
	// by the proper rotation det·sign(S), which a quaternion holds.
	c := sign
	if det(c) < 0 {
		for i := range 3 {
			c[i][i] = -c[i][i]
		}
	}
	cq := matToQuat(c)
	out.outer = w.Rotation.Mul(cq).Mul(v.outer)
	out.conv = cq.Mul(v.conv)
	return out
}
