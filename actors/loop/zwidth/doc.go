// Package zwidth finds the stiffest virtual wall a simulated arm renders
// stably, in virtual time: the engine behind `hapticbench zwidth`'s
// deterministic mode (through `hapticd zwidth`, since the bench may import
// only protocol) and the tests that hold the service to the ordering issue
// 22 asks for.
//
// # What is simulated
//
// One trial renders a plane wall of stiffness K in front of a simulated arm
// (hw/sim, with its mass, viscous damping b, Coulomb friction, encoder
// quantization and, if asked, the hand model) that a user pushes into the
// wall, over one of three paths:
//
//   - PathClient (A): a client computes a penalty wall from the state it
//     read at its frame (60, 90, 200 Hz) and its force reaches the loop
//     DelayS later, where the loop holds it until the next one: an engine
//     streaming forces over the WebSocket.
//   - PathEffect (B): the loop renders the wall itself every tick (1 or
//     4 kHz) from the latest state: the wall declared as an effect.
//   - PathClientPassivity (C): A with a passivity observer and controller
//     (Hannaford and Ryu 2002) on the loop's output.
//
// The loop adds the gravity compensation the service's loop adds to a
// simulated arm (hw.Info.HostGravityCompensation).
//
// # Stable
//
// A trial is stable when the energy observed at the device (the energy the
// wall's output absorbed plus what the arm's own damping and friction
// dissipated; a passive display never lets it go negative) stays above
// -Config.EnergyBoundJ, and the cursor's peak-to-peak motion along the
// wall's normal from Config.SettleS to Config.SettleS+Config.WindowS after
// contact is at most Config.OscillationM. Limit bisects K geometrically
// between Config.MinNpm and Config.MaxNpm.
//
// # The renderers
//
// The wall the loop renders (B) and the passivity controller (C) are the
// loop's own: LoopWall declares a Wall effect and renders it with
// actors/loop/effect's Renderer, LoopPassivity is actors/loop/passivity's
// Controller, enabled with its defaults. They are reached through
// WallRenderer and Passivity (Config.NewWall, Config.NewPassivity), so a
// test can swap either. The search of B stops at effect.MaxStiffnessNPerM,
// the stiffest wall the loop renders (a session may declare at most 20,000
// N/m over the WebSocket).
//
// # Determinism
//
// Everything runs in simulated time on the calling goroutine: the same
// Config and Row give the same Result on every run, and on every machine
// of the same architecture (on others the compiler may fuse
// multiply-adds, which can move a limit by a bisection step). Nothing allocates
// per tick.
package zwidth
