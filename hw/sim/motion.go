package sim

import "fmt"

// Motion selects the scripted "hand" that moves a simulated device as a user
// would. It is a flag.Value, so a command line and a config file parse it
// alike.
type Motion uint8

const (
	// MotionNone leaves the device alone: no hand on an arm's handle, a grip
	// lying still with no buttons pressed.
	MotionNone Motion = iota
	// MotionCircle moves an arm's cursor round a 0.04 m circle at 0.5 Hz in
	// the XY plane around the workspace centre, and rocks a grip slowly
	// with periodic button presses and squeezes; each device's script is
	// shifted in phase by its index, so devices side by side differ.
	MotionCircle
	// MotionRandom moves the device along a smooth random walk inside its
	// range, reproducible from the seed.
	MotionRandom
)

// motionNames is indexed by Motion; it is never written.
var motionNames = [...]string{
	MotionNone:   "none",
	MotionCircle: "circle",
	MotionRandom: "random",
}

// String returns the flag spelling: "none", "circle" or "random".
func (m Motion) String() string {
	if int(m) < len(motionNames) {
		return motionNames[m]
	}
	return fmt.Sprintf("motion(%d)", uint8(m))
}

// Set parses s as ParseMotion does; it implements flag.Value.
func (m *Motion) Set(s string) error {
	v, err := ParseMotion(s)
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// ParseMotion parses "none", "circle" or "random". The empty string is
// MotionNone, so an unset config field means no motion.
func ParseMotion(s string) (Motion, error) {
	if s == "" {
		return MotionNone, nil
	}
	for i, name := range motionNames {
		if s == name {
			return Motion(i), nil
		}
	}
	return MotionNone, fmt.Errorf("hw/sim: unknown motion %q; use none, circle or random", s)
}
