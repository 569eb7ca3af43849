package actors

import (
	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/actors/loop/effect"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/space"
)

// Bubble navigation (protocol.Navigation) as the device actor hands it to
// the loop: each session view's Params carry the session's navigation in
// the device frame (loop.Navigation), so the loop renders it with that
// session's commands and under its lease. The workspace offset the loop
// integrates lives in a loop.NavigationTrack per session and device, kept
// in sessionState across config and set_transform changes; turning
// navigation off drops it (the workspace returns to what set_transform
// says) and so does the session's end. Frames and GET read the track's
// report: the offset is added to set_transform's position, so positions,
// state.transform and state.navigation all show it.

// defaultSessionConfig is the session-scoped defaults on this device: the
// protocol's, with the default bubble sized for the arm.
func (c *deviceCore) defaultSessionConfig() protocol.SessionConfig {
	cfg := protocol.DefaultSessionConfig()
	c.sizeNavigation(&cfg)
	return cfg
}

// defaultConfig is defaultSessionConfig shared by every session that keeps
// it (sessionState.cfg): the same pointer while the default stays the same.
func (c *deviceCore) defaultConfig() *protocol.SessionConfig {
	def := c.defaultSessionConfig()
	if c.sharedDefault == nil || !c.sharedDefault.Equal(&def) {
		c.sharedDefault = &def
	}
	return c.sharedDefault
}

// sizeNavigation fits the sizes of cfg's bubble that no client gave to the
// arm's workspace (protocol.Navigation.SizedFor): the Inverse3's 5 cm
// default bubble fills a Minverse's whole workspace, and its hand could
// never reach the velocity zone. Every config a session holds is sized, so
// what is in force, stored and answered is the same.
func (c *deviceCore) sizeNavigation(cfg *protocol.SessionConfig) {
	radius := 0.0
	if c.dev.Type == protocol.TypeArm {
		// By the family's device type number, as the serial driver reads
		// its figures; a lab gateway's proxy carries the node arm's.
		radius = hw.ArmFiguresOf(c.dev.Info.Model).WorkspaceRadiusM
	}
	cfg.Navigation = cfg.Navigation.SizedFor(radius)
}

// navigation compiles s's navigation for the loop, nil when it is off. It
// keeps s's track while navigation stays on.
func (c *deviceCore) navigation(s *sessionState) *loop.Navigation {
	nav := s.cfg.Navigation
	if c.dev.Type != protocol.TypeArm || !nav.Enabled() {
		s.nav = nil
		return nil
	}
	basis := c.effectiveBasis(s)
	perm, err := space.ParsePermutation(basis.Permutation)
	if err != nil {
		perm = space.IdentityPermutation()
	}
	mount := space.NewView(perm, c.effectiveMount(s.cfg, basis))
	bubble, err := compileBubble(nav, &mount, s.workspace)
	if err != nil {
		// The entry was validated on the way in: this is a stored file
		// gone wrong. Navigate nowhere rather than render it.
		c.log.Error().Err(err).Msg("navigation in force cannot be rendered; it stays off")
		s.nav = nil
		return nil
	}
	if s.nav == nil {
		s.nav = loop.NewNavigationTrack()
	}
	return &loop.Navigation{Bubble: bubble, Track: s.nav}
}

// compileBubble is nav's bubble for the loop: mount is the view of the
// session's basis and mount (the bubble lives in mount space), workspace
// its set_transform, which carries the velocity into application space.
func compileBubble(nav protocol.Navigation, mount *space.View, workspace space.Transform) (*effect.Bubble, error) {
	db := nav.ToDevice(mount)
	bn := &nav.Bubble
	b := effect.Bubble{
		ToLocal:            db.ToLocal,
		LocalOffset:        hw.Vec3(db.LocalOffset),
		DevMPerLocalM:      db.DevMPerLocalM,
		CenterM:            hw.Vec3(bn.Center.PositionM),
		WidthM:             bn.VelocityZoneWidthM,
		HysteresisM:        bn.HysteresisM,
		SpeedGainPerS:      bn.SpeedGainPerS,
		MaxSpeedMps:        bn.MaxSpeedMps,
		DeadDampingNsPerM:  bn.DeadZoneDampingNsPerM,
		ZoneStiffnessNPerM: bn.VelocityZoneStiffnessNPerM,
		WallStiffnessNPerM: bn.WallStiffnessNPerM,
		WallDampingNsPerM:  bn.WallDampingNsPerM,
	}
	switch bn.Easing {
	case "quadratic":
		b.Ease = effect.EaseQuadratic
	case "cubic":
		b.Ease = effect.EaseCubic
	}
	switch bn.Center.Mode {
	case protocol.CenterDrift:
		b.DriftRateMps = bn.Center.DriftRateMps
	case protocol.CenterCursor:
		b.AtCursor = true
	}
	b.Primitive, b.Shape = bubbleShape(bn.Shape)
	ws := space.NewView(space.IdentityPermutation(), workspace)
	for j, e := range [3]space.Vec3{{X: 1}, {Y: 1}, {Z: 1}} {
		col := ws.VelocityToApp(e)
		b.ToApp[0][j], b.ToApp[1][j], b.ToApp[2][j] = col.X, col.Y, col.Z
	}
	return effect.NewBubble(b)
}

// bubbleShape maps a bubble's SDF shape (protocol.BubbleShapes) to the
// loop's primitive and sizes, centred on the bubble's centre.
func bubbleShape(s protocol.SDFShape) (effect.Primitive, effect.Params) {
	p := s.Params
	var out effect.Params
	prim, _ := effect.ParsePrimitive(s.Primitive)
	switch s.Primitive {
	case "sphere":
		out.RadiusM = p.R
	case "ellipsoid":
		out.HalfExtentsM = hw.Vec3(p.A)
	case "box":
		out.HalfExtentsM = hw.Vec3(p.B)
	case "rounded_box":
		out.HalfExtentsM, out.RadiusM = hw.Vec3(p.B), p.R
	case "capsule", "capped_cylinder":
		out.PointM, out.EndM, out.RadiusM = hw.Vec3(p.A), hw.Vec3(p.B), p.R
	case "capsule_vertical", "capped_cylinder_vertical":
		out.HeightM, out.RadiusM = p.H, p.R
	case "torus":
		out.RadiusM, out.MinorRadiusM = p.R1, p.R2
	}
	return prim, out
}

// NavigationState is session's navigation state on d as the loop last
// reported it, nil while navigation is off or before the loop rendered
// it. It never blocks.
func (d *Device) NavigationState(session uint64) *protocol.NavigationState {
	st, ok := navigationState(d.ViewFor(session))
	if !ok {
		return nil
	}
	return &st
}

func navigationState(v *View) (protocol.NavigationState, bool) {
	if v == nil || v.Params == nil || v.Params.Navigation == nil {
		return protocol.NavigationState{}, false
	}
	var r loop.NavigationReport
	if !v.Params.Navigation.Track.Load(&r) {
		return protocol.NavigationState{}, false
	}
	return protocol.NavigationState{
		CenterM:               protocol.Vec3(r.CenterM),
		VelocityZoneWidthM:    r.WidthM,
		CollisionExtraInflate: r.InflateM,
		Zone:                  protocol.NavigationZone(r.Zone),
		WorkspaceOffsetM:      protocol.Vec3(r.OffsetM),
		VelocityMps:           protocol.Vec3(r.VelocityMps),
	}, true
}

// applyNavigation adds the session's navigation to an arm's state: the
// workspace offset to the cursor's position (and a position target) and
// to state.transform's position, and state.navigation with d's passivity
// figures.
func applyNavigation(af *protocol.ArmFrame, v *View, d *Device) {
	st, ok := navigationState(v)
	if !ok {
		return
	}
	s := &af.State
	off := st.WorkspaceOffsetM
	s.CursorPosition = addVec(s.CursorPosition, off)
	s.Transform.Position = addVec(s.Transform.Position, off)
	if s.ControlMode == protocol.ControlPosition {
		s.CurrentCursorPosition = addVec(s.CurrentCursorPosition, off)
	}
	// One small allocation per navigating arm per frame: the frame's arm
	// elements are rebuilt every frame, and a navigating session's view
	// is its own, so no encoded state is shared with other sessions.
	if s.Ext == nil {
		s.Ext = new(protocol.ArmStateExtensions)
	}
	s.Ext.HasNavigation = true
	s.Ext.Navigation = st
	// The navigation's energy is in the figures (its own source of the
	// controller's default scope): they come with it, effects or none.
	s.Ext.HasPassivity, s.Ext.Passivity = true, passivityState(d)
}

// workspacePosition takes the navigation's offset out of an application
// position the session commands (set_cursor_position), so that it lands
// where the session sees it.
func workspacePosition(v *View, app space.Vec3) space.Vec3 {
	if st, ok := navigationState(v); ok {
		off := st.WorkspaceOffsetM
		return space.Vec3{X: app.X - off.X, Y: app.Y - off.Y, Z: app.Z - off.Z}
	}
	return app
}

func addVec(a, b space.Vec3) space.Vec3 { return space.Vec3{X: a.X + b.X, Y: a.Y + b.Y, Z: a.Z + b.Z} }
