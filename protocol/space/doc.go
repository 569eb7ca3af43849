// Package space is hapticd's coordinate pipeline: the wire vector types
// and the maps between a device's frame and a session's application space
// (PROTOCOL 2.3). It imports only the standard library.
//
// # Frames
//
// The device frame is right-handed, Z up, +X right, +Y forward (PROTOCOL
// 1.2). Every position, velocity, force and orientation a client sends or
// receives is in its application space:
//
//	device frame → basis → mount (or preset) → application space
//	app = mount.Position + R·(mount.Scale ⊙ (P·dev))
//
// # Basis
//
// A basis is a signed axis permutation written as three letters, each of
// X, Y and Z exactly once, each optionally prefixed by + or -: "XZY",
// "-XZY", "+X-Z+Y". There are 48. The i-th letter names the device axis
// that becomes application axis i, with its sign: under "XZY" application
// Y is device Z and application Z is device Y, so a client with Y up sees
// the arm's vertical on its Y. Half of the bases mirror the space
// (determinant -1); that is how a left-handed engine gets its convention.
// Permutation.String spells a basis canonically, without "+" signs.
//
// # Mount and presets
//
// A mount is a Transform: scale, then rotate, then translate. Presets are
// named mounts: defaults and arm_front are the identity (origin at the
// device base, arm facing +Y); *_centered put the origin at the workspace
// centre; led_front* turn the device 180° about Z.
//
// # What each quantity gets
//
// Positions get the whole transform; velocities the same without the
// translation. Forces and damping are rotated but not scaled, so a newton
// stays a newton at any workspace scale (see View.ForceToApp).
// Orientations are conjugated by the basis and turned by the mount rotation
// (see View.OrientationToApp).
//
// # Concurrency and cost
//
// Permutation, Transform and View are values without hidden state; read
// them from any number of goroutines. NewView does the trigonometry once
// per configuration change; the View methods are a few multiply-adds, never
// allocate and never lock, so the real-time loop calls them every tick.
package space
