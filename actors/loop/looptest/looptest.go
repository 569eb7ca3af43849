// Package looptest holds test doubles for the real-time loop: a manual
// Clock and a scriptable fake hw.Driver. They are for tests in any package
// that runs a loop.Device (the device actor's tests too).
package looptest

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/hapticd/hapticd/hw"
)

// Clock is a manual clock; its zero value reads 0. It is safe for
// concurrent use.
type Clock struct{ ns atomic.Int64 }

// NewClock returns a clock reading startNs.
func NewClock(startNs int64) *Clock {
	c := &Clock{}
	c.ns.Store(startNs)
	return c
}

// Now returns the clock's time.
func (c *Clock) Now() int64 { return c.ns.Load() }

// Set moves the clock to ns.
func (c *Clock) Set(ns int64) { c.ns.Store(ns) }

// Advance moves the clock forward by ns and returns the new time.
func (c *Clock) Advance(ns int64) int64 { return c.ns.Add(ns) }

// ErrInjected is what a Driver returns for an injected failure.
var ErrInjected = errors.New("looptest: injected exchange failure")

// ErrClosed is what a closed Driver returns.
var ErrClosed = errors.New("looptest: driver is closed")

// StateFunc computes the state a Driver reports for its n-th exchange
// (1-based) of cmd. It runs on the loop's goroutine.
type StateFunc func(n uint64, cmd *hw.Command, st *hw.State)

// Driver is a fake hw.Driver and hw.Configurer. It records the commands it
// receives and reports a settable state; failures can be injected. It is
// safe for a test to inspect it while a loop runs it.
type Driver struct {
	exchanges  atomic.Uint64
	halts      atomic.Uint64
	configures atomic.Uint64

	info hw.Info

	mu       sync.Mutex // guards the following
	last     hw.Command
	state    hw.State
	stateFn  StateFunc
	failFor  int
	failErr  error
	panicAt  uint64
	settings hw.Settings
	closed   bool
}

var (
	_ hw.Driver     = (*Driver)(nil)
	_ hw.Configurer = (*Driver)(nil)
)

// ArmInfo is the Info of NewArm's fake arm: 10 N clamp, 0.2 kg effective
// mass, host gravity compensation.
func ArmInfo() hw.Info {
	return hw.Info{
		Kind: hw.KindArm, ID: "0A1B", UUID: "00000000-0000-0000-0000-00000000a1b0",
		Simulated: true, MaxForceN: hw.ArmMaxForceN, EffectiveMassKg: hw.ArmEffectiveMassKg, HostGravityCompensation: true,
		WorkspaceCenterM: hw.ArmWorkspaceCenterM(),
	}
}

// NewArm returns a fake arm with ArmInfo.
func NewArm() *Driver { return NewDriver(ArmInfo()) }

// NewDriver returns a fake driver with the given Info.
func NewDriver(info hw.Info) *Driver { return &Driver{info: info} }

// Info implements hw.Driver.
func (d *Driver) Info() hw.Info { return d.info }

// Exchange implements hw.Driver: it records cmd and reports the state.
func (d *Driver) Exchange(cmd *hw.Command, st *hw.State) error {
	n := d.exchanges.Add(1)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	if d.panicAt != 0 && n >= d.panicAt {
		panic("looptest: injected panic in Exchange")
	}
	if d.failFor > 0 {
		d.failFor--
		return d.failErr
	}
	d.last = *cmd
	if d.stateFn != nil {
		d.stateFn(n, cmd, &d.state)
	}
	*st = d.state
	if cmd.Mode == hw.ModeForce {
		st.ForceN = cmd.ForceN
	}
	return nil
}

// Halt implements hw.Driver: the recorded command becomes ModeIdle.
func (d *Driver) Halt() error {
	d.halts.Add(1)
	d.mu.Lock()
	d.last = hw.Command{}
	d.mu.Unlock()
	return nil
}

// Close implements hw.Driver.
func (d *Driver) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	d.closed = true
	d.last = hw.Command{}
	return nil
}

// Configure implements hw.Configurer.
func (d *Driver) Configure(s hw.Settings) error {
	d.configures.Add(1)
	d.mu.Lock()
	d.settings = s
	d.mu.Unlock()
	return nil
}

// SetState sets the state reported from now on.
func (d *Driver) SetState(st hw.State) {
	d.mu.Lock()
	d.state = st
	d.mu.Unlock()
}

// SetStateFunc makes f compute the reported state on every exchange.
func (d *Driver) SetStateFunc(f StateFunc) {
	d.mu.Lock()
	d.stateFn = f
	d.mu.Unlock()
}

// FailNext makes the next n exchanges fail with err (ErrInjected if nil).
func (d *Driver) FailNext(n int, err error) {
	if err == nil {
		err = ErrInjected
	}
	d.mu.Lock()
	d.failFor, d.failErr = n, err
	d.mu.Unlock()
}

// PanicFrom makes every exchange from the n-th (1-based, counting all
// exchanges so far) panic.
func (d *Driver) PanicFrom(n uint64) {
	d.mu.Lock()
	d.panicAt = n
	d.mu.Unlock()
}

// Last returns the last command the driver applied (ModeIdle after Halt).
func (d *Driver) Last() hw.Command {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.last
}

// Settings returns the settings last passed to Configure.
func (d *Driver) Settings() hw.Settings {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.settings
}

// Exchanges counts Exchange calls (failed ones too).
func (d *Driver) Exchanges() uint64 { return d.exchanges.Load() }

// Halts counts Halt calls.
func (d *Driver) Halts() uint64 { return d.halts.Load() }

// Configures counts Configure calls.
func (d *Driver) Configures() uint64 { return d.configures.Load() }
