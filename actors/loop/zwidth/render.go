package zwidth

import (
	"math"

	"github.com/hapticd/hapticd/hw"
)

// ProxyWall is a plane wall rendered with a proxy (god object, Zilles and
// Salisbury 1995): the proxy follows the cursor in free space and stays on
// the surface when the cursor is inside, and a spring pulls the cursor
// toward it. For a plane the proxy is the cursor projected onto the
// surface. It stands in for the loop's effect renderer until that is
// merged (Config.NewWall).
type ProxyWall struct {
	plane        Plane
	stiffnessNpm float64
	proxyM       hw.Vec3
}

// NewProxyWall returns a wall on pl of the given stiffness.
func NewProxyWall(pl Plane, stiffnessNpm float64) *ProxyWall {
	return &ProxyWall{plane: pl, stiffnessNpm: stiffnessNpm}
}

// Force is the wall's force on a cursor at posM; it implements
// WallRenderer.
func (w *ProxyWall) Force(posM, _ hw.Vec3) hw.Vec3 {
	w.proxyM = posM
	if d := w.plane.Depth(posM); d > 0 {
		w.proxyM = posM.Add(w.plane.Normal.Scale(d))
	}
	return w.proxyM.Sub(posM).Scale(w.stiffnessNpm)
}

// ProxyM is the proxy point after the last Force: where the engine should
// draw the contact.
func (w *ProxyWall) ProxyM() hw.Vec3 { return w.proxyM }

// ObserverController is a time-domain passivity observer and controller
// (Hannaford and Ryu 2002) on one force output: the observer sums the
// energy the output absorbed, −F·v·Δt per tick, plus what the controller
// dissipated; when the sum goes negative the controller adds just enough
// damping, α = −E/(|v|²·Δt), to bring it back to zero, capped at
// MaxDampingNspm. It stands in for the loop's passivity controller until
// that is merged (Config.NewPassivity).
type ObserverController struct {
	energyJ float64
	// MaxDampingNspm caps the added damping: a damper sampled every Δt on
	// a mass m is itself unstable past about 2m/Δt.
	MaxDampingNspm float64
	// AddedNspm is the damping added on the last tick, N·s/m.
	AddedNspm float64
}

// NewObserverController returns a controller whose damping stays below
// half the 2m/Δt at which a damper sampled at 1 kHz on a mass of massKg
// would itself go unstable.
func NewObserverController(massKg float64) *ObserverController {
	return &ObserverController{MaxDampingNspm: massKg / 1e-3}
}

// EnergyJ is the observed energy after the last tick, J.
func (o *ObserverController) EnergyJ() float64 { return o.energyJ }

// Filter implements Passivity.
func (o *ObserverController) Filter(f, v hw.Vec3, dtS float64) hw.Vec3 {
	o.energyJ -= f.Dot(v) * dtS
	o.AddedNspm = 0
	vv := v.Dot(v)
	if o.energyJ >= 0 || vv == 0 {
		return f
	}
	a := math.Min(-o.energyJ/(vv*dtS), o.MaxDampingNspm)
	o.AddedNspm = a
	o.energyJ += a * vv * dtS
	return f.Sub(v.Scale(a))
}

var (
	_ WallRenderer = (*ProxyWall)(nil)
	_ Passivity    = (*ObserverController)(nil)
)
