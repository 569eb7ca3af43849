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
