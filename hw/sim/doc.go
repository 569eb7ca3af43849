// Package sim holds simulated haptic devices: an Arm and a Grip that
// implement hw.Driver with no hardware behind them. They are what a
// newcomer sees first, what CI starts by the thousand, and the physics
// behind the firmware emulator (hw/emulator), so emulated and simulated
// arms behave alike.
//
// # The arm
//
// The end effector is a point mass (Physics.MassKg, by default
// EffectiveMassKg) in the device frame (Z up, +X right, +Y forward; SI
// units), stepped at the fixed step ArmOptions.PeriodS, sub-stepped to at
// most Physics.MaxSubstepS (1 ms by default; with the hand model 0.1 ms,
// and shorter where a stiff, light or barely damped grip needs it to step
// stably: Validate refuses one that would need under 1 µs). Within a sub-step every force
// is held and the mass and viscous damping are integrated exactly, so a
// force the loop holds for a period acts on the arm as a zero-order hold
// acts on a real one (the plant of Colgate and Brown's 2b/T bound), at any
// loop rate. Physics documents every constant and its source; NewArm uses
// DefaultPhysics and NewArmWithPhysics takes others. Forces on it:
//
//   - the actuator, per Command.Mode: ModeForce applies ForceN; ModePosition
//     is a servo toward PositionM whose speed is capped at MaxServoSpeedMps;
//     ModeAngle is the same servo toward ForwardKinematics(AnglesDeg);
//     ModeTorque maps joint torques (N·mm) to a force through the inverse of
//     the Jacobian transpose; ModeIdle applies nothing. The actuator force is
//     clamped inside the driver whatever the caller did: to the family's
//     force limit, in ModeForce plus room for the host's largest gravity
//     support (hw.ActuatorLimitN), and State.ForceN reports it after the
//     clamp;
//   - gravity, Physics.MassKg·GravityMps2 downwards, always (the mass
//     Info.EffectiveMassKg reports, which the host compensates);
//   - viscous damping b (Physics.DampingNspm), plus Coulomb friction
//     (static and kinetic) that keeps a resting cursor put under a small
//     net force;
//   - a soft boundary: a stiff spring and damper that push the cursor back
//     inside the sphere of WorkspaceRadiusM around Info.WorkspaceCenterM,
//     backed by a hard end stop EndStopMarginM further out;
//   - the scripted hand (ArmOptions.Motion): a spring-damper pulling the
//     handle toward a moving target, as a user's hand would;
//   - the user's hand (Physics.Hand): a steady push, on the handle or,
//     with the hand model on, on a hand mass held to the handle by a
//     spring and damper (the scripted motion then moves the hand).
//
// The encoder quantizes the reported position to Physics.EncoderStepM;
// the physics keeps the exact one.
//
// # Gravity compensation
//
// The simulated arm has no firmware, so Info.HostGravityCompensation is
// true: the service's loop adds EffectiveMassKg·GravityMps2·scale upwards
// when gravity compensation is enabled. Configure only records the gravity
// settings. So with compensation off, or scaled well below 1 (below about
// 0.92, where the missing weight exceeds static friction), a hands-off
// cursor sags and comes to rest on the bottom of the workspace boundary:
// the simulated equivalent of an uncompensated arm dropping. The position
// and angle servos carry the arm's own weight, as firmware servos do.
//
// # Kinematics
//
// Three joints: base yaw A0 (0 along +Y; positive toward +X when
// right-handed, toward -X when Settings.LeftHanded), shoulder elevation A1
// and elbow bend A2, with links UpperLinkM and ForearmM and the shoulder
// ShoulderHeightM above the base. State.AnglesDeg follows the cursor by
// inverse kinematics each step (elbow up), State.AngularVelocityDps is
// J⁻¹·v, and State.BodyOrientation is the identity turned about Z by the
// base yaw. TorqueScaling on scales all joint torques together when one
// exceeds MaxJointTorqueNmm (the force keeps its direction); off clips each
// joint alone.
//
// # The grip
//
// A Grip reports orientation, buttons, a hall (squeeze) level and a battery
// that drains over BatteryLifeS of simulated time, never below MinBattery.
// With MotionNone it lies still: identity orientation, nothing pressed. It
// has no actuator and ignores commands.
//
// # Families
//
// A simulated device belongs to one of the vendor's product families
// (families.go): the Inverse3, Minverse and Inverse3x arms, the wired and
// the wireless VerseGrip. The family decides the device type number
// (Info.Model), the force limit, the workspace sphere and the id range;
// ArmOptions.Family and GripOptions.Family pick it, NewDevice builds any
// family, and a Fleet (the --sim flag) says how many of each to build.
//
// # Identity
//
// Ids and UUIDs derive from the family and the index alone (ArmID, GripID,
// ArmUUID, GripUUID over the family's quarter of the index space), so the
// same flags give the same devices after a restart and stored device
// config comes back.
//
// # Time and concurrency
//
// Time is simulated: each Exchange advances exactly one period, so tests
// and benchmarks are deterministic and free of wall-clock timing. A device
// is used by one goroutine at a time, as hw.Driver says; distinct devices
// share nothing and may be stepped in parallel. Exchange never allocates.
package sim
