// Package effect is the math of the effects a session declares and a
// device's loop renders every tick: springs to a point, a line and a
// plane, dampers, Coulomb friction, a plane wall and SDF shapes rendered
// with a proxy, sphere and box workspace limits, a local linear force
// field, vibration and the vendor's SDF effect (sdf.go: a force along a
// shape's distance gradient, by a curve of the distance). It is pure and
// allocation-free on the tick path: NewSet validates and copies a
// declaration (on the session's goroutine); a Renderer, owned by the loop,
// turns the Set in force and the cursor's state into a force once per tick.
//
// Units are SI and named in every field: metres (M), newtons (N), N/m
// (NPerM), N·s/m (NsPerM), m/s (Mps), hertz (Hz), nanoseconds of the
// loop's clock (Ns). Positions and directions are in the device frame.
//
// Energy safety: a parameter change never steps a force. Every number of
// an updated effect moves to its new value through two first-order stages
// of SmoothNs each; a new effect fades in over its FadeNs, a removed or
// expired one fades out. A wall-like effect (Wall, LimitSphere, LimitBox,
// Shape) acts only on a cursor that went through its surface; a surface
// that comes over the cursor (appears, jumps, grows) leaves its proxy with
// the cursor and pushes nothing until the cursor is free again. An SDF
// effect is a conservative field; an update that would change its force at
// the cursor by more than a quarter of its scale cross-fades instead of
// gliding.
//
// The loop (package loop) sums the Renderer's force with the session's
// command before its passivity stage, clamp, slew limit and lease ramp,
// so whatever ends a session's control ends its effects' forces with the
// same ramp.
package effect
