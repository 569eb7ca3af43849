package space

// Preset names (PROTOCOL 4). PresetCustom is what the preset entry reads
// once a mount has been set; it has no transform of its own.
const (
	PresetDefaults         = "defaults"
	PresetArmFront         = "arm_front"
	PresetArmFrontCentered = "arm_front_centered"
	PresetLEDFront         = "led_front"
	PresetLEDFrontCentered = "led_front_centered"
	PresetCustom           = "custom"
)

// presetNames is never written; PresetNames hands out copies.
var presetNames = [...]string{
	PresetDefaults, PresetArmFront, PresetArmFrontCentered, PresetLEDFront, PresetLEDFrontCentered,
}

// PresetNames returns the valid preset names ("custom" is not one: it is a
// reading, not a choice). The slice is the caller's.
func PresetNames() []string {
	names := make([]string, len(presetNames))
	copy(names, presetNames[:])
	return names
}

// PresetTransform returns the mount transform of a named preset, and false
// for an unknown name (including "custom").
//
// workspaceCenterM is the workspace centre as the mount sees it, that is
// after the basis: pass basis.Apply(deviceCentre). With the identity basis
// that is the device-frame centre itself. The centred presets put the
// application origin there; led_front* turn the device 180° about Z, so
// application +Y points from the arm towards the user.
func PresetTransform(name string, workspaceCenterM Vec3) (Transform, bool) {
	t := IdentityTransform()
	c := workspaceCenterM
	switch name {
	case PresetDefaults, PresetArmFront:
	case PresetArmFrontCentered:
		// app = v - c. 0 - x, not -x: a centre on an axis would read -0
		// in the mount a client gets back (toursim: "x":-0).
		t.Position = Vec3{X: 0 - c.X, Y: 0 - c.Y, Z: 0 - c.Z}
	case PresetLEDFront:
		t.Rotation = Quat{Z: 1}
	case PresetLEDFrontCentered:
		// app = Rz(180°)·(v - c) = Rz·v - Rz·c, and -Rz·c = (c.x, c.y, -c.z).
		t.Rotation = Quat{Z: 1}
		t.Position = Vec3{X: c.X, Y: c.Y, Z: 0 - c.Z}
	default:
		return Transform{}, false
	}
	return t, true
}
