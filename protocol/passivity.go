package protocol

// The passivity entries are device-global (HTTP only, persisted per device
// like handedness): the last stages of every arm's force output (a
// session's set_cursor_force, its effects and its navigation, with the
// controller's damping), after the passivity controller. The clamp bounds
// that force's magnitude and the slew limit its rate of change, so that no
// effect declaration, force command or navigation can jerk the handle.
// Position, angle and torque commands do not pass them: a position or angle
// target goes to the arm's own servo (in an Inverse3's firmware; a
// simulated arm's caps its speed and force), and joint torques are scaled
// by the force scale and the lease ramp alone, within the device's own
// limits. Neither raises the driver's own force limit.

// ForceClamp bounds the magnitude of the output force (N).
type ForceClamp struct{ MaxForceN float64 }

// ForceSlewLimit bounds how fast the output force may change (N/s).
type ForceSlewLimit struct{ MaxRateNPerS float64 }

// Ranges and defaults of the passivity entries. The default clamp is an
// Inverse3's rated force; the default slew limit lets the force cross that
// range in 2 ms, well above what a stiff wall needs and well below a step.
const (
	ForceClampMax         = 50.0 // N
	ForceClampDefaultN    = 10.0
	ForceSlewMinNPerS     = 10.0
	ForceSlewMaxNPerS     = 100000.0
	ForceSlewDefaultNPerS = 5000.0
	forceClampExample     = `{"max_force": 10}`
	forceSlewLimitExample = `{"max_rate": 5000}`
)

// PassivityController switches the passivity controller of a device's
// output (the observer always runs) and says what it keeps passive. It is
// on by default, in the "rendered" scope: it guards the sources the loop
// renders that are passive by design (springs, dampers, friction, walls,
// limits, shapes, sdf effects, navigation), whose energy goes negative only
// when sampling makes them generate it, and leaves out a client's own force
// and the field and vibration effects, which drive the arm on purpose. In
// the "output" scope it guards the whole output, the client's force
// included: a client that streams a wall it computes itself wants that, but
// it also damps a steady push (a client's set_cursor_force of 1.5 N on a
// free arm ended near 0.13 N, measured with the transport tests), which is
// why it is not the default. See docs/protocol.md, Passivity.
type PassivityController struct {
	Enabled bool
	// Scope is "rendered" or "output" (PassivityScopes).
	Scope string
}

// PassivityScopes lists the controller's scopes, the default first (a copy).
func PassivityScopes() []string { return append([]string(nil), passivityScopes...) }

// passivityScopes is indexed by the loop's passivity.Scope; never written.
var passivityScopes = []string{"rendered", "output"}

const passivityControllerExample = `{"enabled": true, "scope": "rendered"}`

func (PassivityController) Key() Key { return KeyPassivityController }
func (PassivityController) entry()   {}

// AppendJSON appends {"enabled": bool, "scope": "rendered"|"output"}.
func (e PassivityController) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"enabled":`...)
	dst = appendBool(dst, e.Enabled)
	dst = append(dst, `,"scope":`...)
	dst = AppendString(dst, e.Scope)
	return append(dst, '}')
}

// decodePassivityController reads {"enabled": bool, "scope": name}:
// "enabled" is required, "scope" defaults to "rendered".
func decodePassivityController(v Value, at *pathSeg, w warnings) (PassivityController, *Error) {
	if e := expectObject(v, at, passivityControllerExample); e != nil {
		return PassivityController{}, e
	}
	out := PassivityController{Scope: passivityScopes[0]}
	seenEnabled := false
	for it := v.Members(); it.Next(); {
		val := it.Value()
		switch {
		case (it.KeyIs("enabled") || it.KeyIs("scope")) && it.Superseded():
			// Given again later: the last occurrence counts.
		case it.KeyIs("enabled") && !val.Exists():
			seenEnabled = false // null is absent
		case it.KeyIs("scope") && !val.Exists():
			out.Scope = passivityScopes[0] // null is absent: the default
		case it.KeyIs("enabled"):
			c := at.child("enabled")
			b, err := readBool(val, &c)
			if err != nil {
				return PassivityController{}, err
			}
			out.Enabled, seenEnabled = b, true
		case it.KeyIs("scope"):
			c := at.child("scope")
			name, ok := val.StringBytes()
			i := -1
			for j, n := range passivityScopes {
				if ok && n == string(name) {
					i = j
				}
			}
			if i < 0 {
				return PassivityController{}, errAt(CodeInvalidValue, &c, "scope must be one of %s", nameList(passivityScopes))
			}
			out.Scope = passivityScopes[i]
		default:
			w.unknownField(at, &it)
		}
	}
	if !seenEnabled {
		return PassivityController{}, errAt(CodeInvalidValue, at, `passivity_controller needs "enabled": true or false, e.g. %s`, passivityControllerExample)
	}
	return out, nil
}

func (e PassivityController) MarshalJSON() ([]byte, error) { return e.AppendJSON(nil), nil }

func (ForceClamp) Key() Key     { return KeyForceClamp }
func (ForceSlewLimit) Key() Key { return KeyForceSlewLimit }
func (ForceClamp) entry()       {}
func (ForceSlewLimit) entry()   {}

// AppendJSON appends {"max_force": N}.
func (e ForceClamp) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"max_force":`...)
	dst = AppendFloat(dst, e.MaxForceN)
	return append(dst, '}')
}

// AppendJSON appends {"max_rate": N/s}.
func (e ForceSlewLimit) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"max_rate":`...)
	dst = AppendFloat(dst, e.MaxRateNPerS)
	return append(dst, '}')
}

func (e ForceClamp) MarshalJSON() ([]byte, error)     { return e.AppendJSON(nil), nil }
func (e ForceSlewLimit) MarshalJSON() ([]byte, error) { return e.AppendJSON(nil), nil }

func decodeForceClamp(v Value, at *pathSeg, w warnings) (ForceClamp, *Error) {
	val, c, err := soleMember(v, at, w, "max_force", forceClampExample)
	if err != nil {
		return ForceClamp{}, err
	}
	if !val.Exists() {
		return ForceClamp{}, errAt(CodeInvalidValue, at, `force_clamp needs "max_force" (N, 0..%g), e.g. %s`, ForceClampMax, forceClampExample)
	}
	f, err := readRange(val, &c, 0, ForceClampMax)
	return ForceClamp{MaxForceN: f}, err
}

func decodeForceSlewLimit(v Value, at *pathSeg, w warnings) (ForceSlewLimit, *Error) {
	val, c, err := soleMember(v, at, w, "max_rate", forceSlewLimitExample)
	if err != nil {
		return ForceSlewLimit{}, err
	}
	if !val.Exists() {
		return ForceSlewLimit{}, errAt(CodeInvalidValue, at, `force_slew_limit needs "max_rate" (N/s, %g..%g), e.g. %s`, ForceSlewMinNPerS, ForceSlewMaxNPerS, forceSlewLimitExample)
	}
	f, err := readRange(val, &c, ForceSlewMinNPerS, ForceSlewMaxNPerS)
	return ForceSlewLimit{MaxRateNPerS: f}, err
}
