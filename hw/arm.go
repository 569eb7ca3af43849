package hw

// Nominal figures of an Inverse3-class arm. They are provisional: set from
// the vendor's published figures, not yet measured on a real arm. The
// simulated arm (hw/sim) is built to them and the serial arm driver
// (hw/driver) reports them, because the wire does not carry them; keeping
// them here keeps the two alike.
const (
	// ArmMaxForceN is the largest force magnitude an arm may be commanded.
	ArmMaxForceN = 10.0
	// ArmEffectiveMassKg is the end effector's apparent mass, which gravity
	// compensation lifts.
	ArmEffectiveMassKg = 0.2
	// ArmWorkspaceRadiusM is the radius of the reachable workspace sphere
	// around ArmWorkspaceCenterM.
	ArmWorkspaceRadiusM = 0.1
)

// ArmWorkspaceCenterM is the centre of an arm's workspace in its device
// frame: in front of and above the base, within easy reach of both links.
// It is a function because Go has no constant structs.
func ArmWorkspaceCenterM() Vec3 { return Vec3{X: 0, Y: 0.15, Z: 0.1} }

// Device type numbers of the arm families (device_info.device_type, as
// Info.Model). 4 (Inverse3) is the vendor's, seen in its 3.5 inventories;
// the others are not public and are hapticd's choice (docs/protocol.md,
// "Device families").
const (
	ModelInverse3  = 4
	ModelInverse3x = 5
	ModelMinverse  = 6
)

// Minverse figures: the vendor publishes none. Its tutorials clamp targets
// to a 0.04 m sphere around the centred origin, so the workspace sphere is
// a little larger than that, around a centre closer to the base; the force
// limit is less than half the Inverse3's, as its smaller motors suggest.
const (
	MinverseWorkspaceRadiusM = 0.05
	MinverseMaxForceN        = 4.0
)

// MinverseWorkspaceCenterM is the Minverse's workspace centre in its device
// frame.
func MinverseWorkspaceCenterM() Vec3 { return Vec3{X: 0, Y: 0.12, Z: 0.08} }

// ArmFigures are an arm family's figures that the wire does not carry.
// EffectiveMassKg is what the host's gravity feed-forward lifts on an arm
// without firmware compensation; no family publishes one, and the
// simulated arms share the Inverse3's linkage model, so every family has
// ArmEffectiveMassKg until a measurement says otherwise.
type ArmFigures struct {
	MaxForceN        float64
	WorkspaceRadiusM float64
	WorkspaceCenterM Vec3
	EffectiveMassKg  float64
}

// ArmFiguresOf is the figures of the arm family whose device type number is
// model, for a simulated arm and a real one alike. Any other number (0: not
// reported) gets the Inverse3's, the family frames then name; nothing public
// gives the Inverse3x other figures than the Inverse3's.
func ArmFiguresOf(model uint8) ArmFigures {
	if model == ModelMinverse {
		return ArmFigures{MinverseMaxForceN, MinverseWorkspaceRadiusM, MinverseWorkspaceCenterM(), ArmEffectiveMassKg}
	}
	return ArmFigures{ArmMaxForceN, ArmWorkspaceRadiusM, ArmWorkspaceCenterM(), ArmEffectiveMassKg}
}

// MaxGravityScale is the largest gravity compensation scale (Settings.GravityScale).
const MaxGravityScale = 2.0

// ActuatorLimitN is the largest force an arm's actuators deliver in force
// mode: the client's limit maxForceN plus the most gravity support an arm
// of mass massKg can be asked for. The limit counts the client's force
// only, as on real arms, whose firmware adds the support after the host's
// clamp; one rule for simulated and emulated arms alike.
func ActuatorLimitN(maxForceN, massKg float64) float64 {
	return maxForceN + massKg*GravityMps2*MaxGravityScale
}
