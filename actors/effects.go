package actors

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/hapticd/hapticd/actors/activity"
	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/actors/loop/effect"
	"github.com/hapticd/hapticd/actors/loop/passivity"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/event"
	"github.com/hapticd/hapticd/protocol/space"
)

// armEffects is what one session declared on one arm, as its per-tick path
// keeps it: the declaration in the session's application space (what GET
// .../effects reports), the Set published from it and the view it was
// converted with, so a change of basis, mount or transform converts it
// again. Only the session's reader touches it.
type armEffects struct {
	declared []protocol.Effect
	// endsNs[i] is when declared[i]'s ttl or vibration runs out (service
	// Clock; 0: never): it is then dropped and effect-expired published.
	endsNs []int64
	// declaredNs[i] is when declared[i] was last set: a field's validity
	// counts from its refresh.
	declaredNs []int64
	set        *effect.Set
	view       *View
	// deadlineNs is the lease deadline last written for the arm: past it
	// the lease lapsed and the effects were dropped with it.
	deadlineNs int64
}

// remove drops declared effect i. It copies: the slices it had are
// published with a Set (declaredEffects), and GET reads them on other
// goroutines.
func (a *armEffects) remove(i int) {
	a.declared = append(append([]protocol.Effect(nil), a.declared[:i]...), a.declared[i+1:]...)
	a.endsNs = append(append([]int64(nil), a.endsNs[:i]...), a.endsNs[i+1:]...)
	a.declaredNs = append(append([]int64(nil), a.declaredNs[:i]...), a.declaredNs[i+1:]...)
}

// errEffectNotRendered wraps the effects this service validates on the
// wire but its loop cannot render as declared.
var errEffectNotRendered = errors.New("not rendered")

// effectsBefore runs before a message's entry e for d is applied: it drops
// the session's effects on d when their control ended (lease lapsed,
// released, another session took the arm), ends the effects whose time
// ran out, and converts the rest again when the session's view of d
// changed. It costs a map lookup for a session without effects.
func (p *tickPath) effectsBefore(f *protocol.Frame, d *Device, e *protocol.DeviceEntry, now int64) {
	a := p.fx[d]
	if a == nil {
		return
	}
	id := p.sess.ID
	if d.Register().Owner() != id || now > a.deadlineNs || !a.adoptInForce(d, id) {
		// The effects whose time ran out while the lease still held them
		// expired before the control ended: say so, as the next message
		// within the lease would have.
		dropped := 0
		for i := range a.declared {
			if expiredBy(a.endsNs[i], min(now, a.deadlineNs)) {
				p.svc.activity.Publish(event.EffectExpired(d.Name, d.ID, id, a.declared[i].ID))
			} else {
				dropped++
			}
		}
		if now > a.deadlineNs && dropped > 0 {
			// A client that renews after a lapse (a GC pause, a hitch)
			// would otherwise take the arm back without its walls and
			// hear nothing of it. Once: the entry goes with the drop.
			f.Warnings = append(f.Warnings, *effectsDroppedWarning(e, d, dropped, now-a.deadlineNs))
		}
		p.dropEffects(d)
		return
	}
	changed := false
	for i := 0; i < len(a.declared); {
		if e := a.endsNs[i]; e != 0 && now >= e {
			p.svc.activity.Publish(event.EffectExpired(d.Name, d.ID, id, a.declared[i].ID))
			a.remove(i)
			changed = true
			continue
		}
		i++
	}
	if v := d.ViewFor(id); changed || v != a.view {
		// Every effect was accepted when declared; a new view can still
		// make one unrenderable (a set_transform that turns a box, a scale
		// that stretches a length past the loop's). Rendered as it was, it
		// would stay where the session's space no longer puts it: it ends,
		// as a refused declaration would have.
		publishRefused(p.svc.activity, d, id, a.convert(id, v))
		if !p.publishEffects(d, a) {
			p.dropEffects(d) // control ended meanwhile
		}
	}
}

// effectRefusal is an effect a new view made one the loop cannot render.
type effectRefusal struct {
	id  string
	err error
}

// convert builds a's Set with view v. An effect that v makes one the loop
// cannot render (a set_transform or mount that turns a box, a scale that
// stretches a length past the loop's) is removed from a and returned: it
// ends, as a refused declaration would have, rather than stay rendered
// where the session's space no longer puts it.
func (a *armEffects) convert(session uint64, v *View) []effectRefusal {
	var refused []effectRefusal
	for {
		set, bad, err := buildSet(session, a.declared, a.declaredNs, &v.Space)
		if err == nil {
			a.set, a.view = set, v
			return refused
		}
		refused = append(refused, effectRefusal{a.declared[bad].ID, err})
		a.remove(bad)
	}
}

// publishRefused publishes effect-refused for each effect of session's on
// d that a new view ended (armEffects.convert).
func publishRefused(to *activity.Activity, d *Device, session uint64, refused []effectRefusal) {
	for _, r := range refused {
		to.Publish(event.EffectRefused(d.Name, d.ID, session, r.id, string(protocol.CodeInvalidValue), r.err.Error()))
	}
}

// declaration is a's declaration as it goes out with its Set.
func (a *armEffects) declaration() *declaredEffects {
	return &declaredEffects{effects: a.declared, endsNs: a.endsNs, declaredNs: a.declaredNs, view: a.view}
}

// adoptInForce reports whether the Set d renders is still a's: the one
// the session published, or the device actor's conversion of it for a view
// changed since (reconvertEffects), which a then takes as its own. Any
// other Set means the session's control of d ended.
func (a *armEffects) adoptInForce(d *Device, session uint64) bool {
	cur := d.rt.Effects()
	if cur == a.set {
		return true
	}
	decl := convertedFrom(cur, session)
	if decl == nil {
		return false
	}
	a.declared, a.endsNs, a.declaredNs, a.set, a.view = decl.effects, decl.endsNs, decl.declaredNs, cur, decl.view
	return true
}

// convertedFrom is set's declaration when set is a local session's own
// (published by its reader, or converted again by the device actor: only
// those two publish a Set of a local session's id with a declaration of
// its own), nil otherwise.
func convertedFrom(set *effect.Set, session uint64) *declaredEffects {
	decl := declarationOf(set)
	if decl == nil || set.Session != session || decl.forwarded != nil || decl.view == nil {
		return nil
	}
	return decl
}

// reconvertEffects converts the effects s's session has the device render
// again with the view just published for it, so that the arm renders them
// in the new space from its next tick. A mount, preset or basis changed
// over HTTP (another program configuring the session, as the vendor's
// remote configurator does) used to move them only at the session's next
// message: a session quiet within its lease felt its walls in the old
// frame meanwhile. The session adopts the new Set at its next message
// (armEffects.adoptInForce); an effect the new view makes unrenderable ends
// here, with effect-refused.
func (c *deviceCore) reconvertEffects(s *sessionState) {
	o := c.dev.Register().Owner()
	if o == 0 || c.sessions[o] != s {
		return
	}
	// A session's reader may publish between the load and the swap: then
	// its Set is converted again (it checks its view after publishing,
	// too; publishEffects).
	for range 4 {
		cur := c.dev.rt.Effects()
		decl := convertedFrom(cur, o)
		v := c.dev.ViewFor(o)
		if decl == nil || decl.view == v {
			return
		}
		if decl.view.Space == v.Space {
			return // nothing the effects are converted with changed
		}
		a := &armEffects{declared: decl.effects, endsNs: decl.endsNs, declaredNs: decl.declaredNs}
		refused := a.convert(o, v)
		a.set.Declaration = a.declaration()
		if c.dev.rt.ReplaceEffects(cur, a.set) {
			c.dev.framesChanged()
			publishRefused(c.activity, c.dev, o, refused)
			return
		}
	}
}

// expiredBy reports whether an effect that ends at endNs (0: no ttl_ms)
// had ended by atNs: one whose time ran out before its lease lapsed
// expired (effect-expired), it was not dropped by the lapse.
func expiredBy(endNs, atNs int64) bool { return endNs != 0 && endNs <= atNs }

// effectsDroppedBy counts the effects of set, the Set a loop rendered for
// a session whose lease lapsed at lapsedNs, that the lapse drops: as the
// session's effects_dropped warning counts them, every one but those that
// expired before it. A Set with no declaration of this process's (a lab
// gateway's, forwarded) counts whole.
func effectsDroppedBy(set *effect.Set, lapsedNs int64) int {
	decl := declarationOf(set)
	if decl == nil || len(decl.endsNs) != set.Len() {
		return set.Len()
	}
	n := 0
	for _, end := range decl.endsNs {
		if !expiredBy(end, lapsedNs) {
			n++
		}
	}
	return n
}

// effectsDroppedWarning tells the session that its lease on d lapsed
// lateNs before the message of entry e, and took its n effects there with
// it.
func effectsDroppedWarning(e *protocol.DeviceEntry, d *Device, n int, lateNs int64) *protocol.Error {
	what := fmt.Sprintf("its %d effects there were dropped (their force ramped out with the command's) and are not rendered now; declare them again", n)
	if n == 1 {
		what = "its effect there was dropped (its force ramped out with the command's) and is not rendered now; declare it again"
	}
	return protocol.Errorf(protocol.CodeEffectsDropped, e.Path,
		"the lease on %s %s lapsed %.0f ms before this message: %s",
		e.TypeKey, d.ID, float64(lateNs)/float64(time.Millisecond), what)
}

// dropEffects forgets the session's effects on d and withdraws them from
// the loop.
func (p *tickPath) dropEffects(d *Device) {
	d.rt.DropEffects(p.sess.ID)
	delete(p.fx, d)
}

// forgetLeftDevices drops the session's effects on the devices that left
// devs (unplugged, or gone with their lab node): nothing names such a
// Device again (an arm plugged back is a new one), and the entry would
// keep it, with its loop and driver, alive as long as the session lives.
func (p *tickPath) forgetLeftDevices(devs *DeviceSet) {
	if devs == p.fxSet {
		return
	}
	p.fxSet = devs
	for d := range p.fx {
		if devs.Find(d.Type, d.ID) != d {
			delete(p.fx, d)
		}
	}
}

// effects applies an entry's "effects" member to d, after its command (if
// any) was written: it takes control of a free arm, applies the update to
// the session's effects on the arm whole or not at all, publishes them to
// the loop and renews the lease like a command.
func (p *tickPath) effects(f *protocol.Frame, d *Device, e *protocol.DeviceEntry, now int64, leaseMs int) {
	at := e.Path + ".effects"
	id := p.sess.ID
	if d.Type != protocol.TypeArm {
		f.Warnings = append(f.Warnings, *protocol.Errorf(protocol.CodeUnknownKey, at,
			"a %s has no force output: effects were ignored", e.TypeKey))
		return
	}
	reg := d.Register()
	wasOwner := reg.Owner() == id
	if owner := reg.Claim(id); owner != id {
		msg := "controlled by another session until it disconnects or its lease lapses"
		f.Errors = append(f.Errors, *protocol.Errorf(protocol.CodeDeviceBusy, at,
			"%s %s is controlled by %s until it disconnects or its lease lapses", e.TypeKey, d.ID, holderText(owner)))
		p.noteBusy(d, owner, now)
		// As device-busy: at most one event per device per busyEvery, not
		// one per tick of a client that keeps trying.
		k := busyKey{d.Type, d.ID}
		if last, ok := p.fxBusy[k]; !ok || now-last >= int64(busyEvery) {
			if p.fxBusy == nil {
				p.fxBusy = map[busyKey]int64{}
			}
			maps.DeleteFunc(p.fxBusy, func(_ busyKey, at int64) bool { return now-at >= int64(busyEvery) })
			p.fxBusy[k] = now
			p.svc.activity.Publish(event.EffectRefused(d.Name, d.ID, id, firstEffectID(&e.Effects), string(protocol.CodeDeviceBusy), msg))
		}
		return
	}
	defer p.releaseIfClosed(d)
	a := p.fx[d]
	if a == nil {
		a = &armEffects{}
	}
	u := &e.Effects
	if !u.Empty() {
		view := d.ViewFor(id)
		pl, perr := planEffects(id, a, u, now, at, view)
		if perr == nil {
			a.declared, a.declaredNs, a.set, a.view = pl.declared, pl.declaredNs, pl.set, view
			a.endsNs = endsOf(pl.declared, pl.declaredNs)
			f.Warnings = append(f.Warnings, pl.warnings...)
			f.Warnings = appendSampledTooCoarsely(f.Warnings, u, at, p.svc.periodNs)
		}
		if perr != nil {
			f.Errors = append(f.Errors, *perr)
			p.svc.activity.Publish(event.EffectRefused(d.Name, d.ID, id, pl.refused, string(perr.Code), perr.Message))
			if !wasOwner && p.fx[d] == nil {
				// The refused declaration took the arm for nothing.
				reg.Release(id)
			}
			return
		}
		if !p.publishEffects(d, a) {
			// The lease lapsed while this message was handled and another
			// session took the arm: its effects stay, these are refused.
			owner := reg.Owner()
			f.Errors = append(f.Errors, *protocol.Errorf(protocol.CodeDeviceBusy, at,
				"%s %s is controlled by %s: this session's lease lapsed before its effects were published", e.TypeKey, d.ID, holderText(owner)))
			p.svc.activity.Publish(event.EffectRefused(d.Name, d.ID, id, firstEffectID(&e.Effects), string(protocol.CodeDeviceBusy), "the lease lapsed and another session took the arm"))
			delete(p.fx, d)
			return
		}
	}
	if p.fx == nil {
		p.fx = map[*Device]*armEffects{}
	}
	p.fx[d] = a
	p.renewLease(d, e, leaseMs, wasOwner, a)
}

// appendSampledTooCoarsely warns of each vibration u sets at or above half
// the loop's rate: the wire takes up to 500 Hz (half of 1 kHz), but a 1 kHz
// loop samples a 500 Hz sine at its zeros and renders nothing, and a loop
// run slower (--loop-hz) renders a faster one as a slower alias. The
// declaration stands; the warning says why it is not felt as declared.
// The rate is this service's loop: on a lab gateway the node renders the
// effect at its own, which the gateway does not know.
func appendSampledTooCoarsely(dst []protocol.Error, u *protocol.EffectsUpdate, at string, periodNs int64) []protocol.Error {
	loopHz := float64(time.Second) / float64(periodNs)
	for i := range u.Set {
		e := &u.Set[i]
		if e.Type == protocol.EffectVibration && 2*e.Vibration.FrequencyHz >= loopHz {
			dst = append(dst, *protocol.Errorf(protocol.CodeOutOfRange, fmt.Sprintf("%s.set[%d].frequency", at, i),
				"vibration %q: %g Hz is at or above half the loop's %g Hz: sampled at that rate it renders as nothing (at exactly half) or as a slower alias; declare under %g Hz, or run the loop faster (--loop-hz)",
				e.ID, e.Vibration.FrequencyHz, loopHz, loopHz/2))
		}
	}
	return dst
}

// effectsPlan is an effects update applied to a session's declaration on
// one arm: the declaration and the Set it makes, or, when it is refused,
// the id of the effect that was.
type effectsPlan struct {
	declared   []protocol.Effect
	declaredNs []int64
	warnings   []protocol.Error
	set        *effect.Set
	refused    string
}

// planEffects applies u to a (clear, remove, set), checks the cap and
// converts the result with view into the Set the loop renders, changing
// nothing; the error refuses u whole.
func planEffects(session uint64, a *armEffects, u *protocol.EffectsUpdate, now int64, at string, view *View) (effectsPlan, *protocol.Error) {
	pl := effectsPlan{refused: firstEffectID(u)}
	declared, declaredNs, warnings, perr := applyEffectsUpdate(a, u, now, at)
	if perr != nil {
		return pl, perr
	}
	set, bad, err := buildSet(session, declared, declaredNs, &view.Space)
	if err != nil {
		pl.refused = declared[bad].ID
		return pl, protocol.Errorf(protocol.CodeInvalidValue, effectPath(at, u, pl.refused, err), "%v", err)
	}
	pl.declared, pl.declaredNs, pl.warnings, pl.set = declared, declaredNs, warnings, set
	return pl, nil
}

// refusedEffects finds, before anything of the message in hand applies,
// the effects members that would be refused once their arm is reached
// (too many effects across messages, an effect the loop cannot render),
// and publishes effect-refused for each: such a message applies not at
// all, like one the decoder refused (docs/protocol.md, "Effects"). An
// arm another session holds is left to the entry (device_busy, the rest
// applies). A message that changes the view an arm's effects are
// converted with (the session's basis or profile; that arm's basis, mount,
// preset or set_transform, when it changes it) leaves that arm's effects to
// their entry: they are checked there with the new view, as before.
func (p *tickPath) refusedEffects(snap *sessionSnapshot, devs *DeviceSet) []protocol.Error {
	msg := &p.msg
	sp := &msg.Session
	if sp.Profile != nil && sp.Profile.Name != snap.profile || sp.Basis != nil && *sp.Basis != snap.basis ||
		sp.SetBasis != nil || sp.SetCoordinateOrigin != "" {
		return nil
	}
	declares := false
	for i := range msg.Devices {
		e := &msg.Devices[i]
		declares = declares || e.HasEffects && !e.Effects.Empty()
	}
	if !declares {
		return nil
	}
	id := p.sess.ID
	// turnsView reports whether the message changes the session's view of
	// d (an entry of d's whose set_transform, basis, mount or preset
	// changes it; clients re-send theirs every tick): d's effects are then
	// checked at its entry, after the change. Another arm's view is not
	// the one d's effects are converted with.
	turnsView := func(d *Device) bool {
		for j := range msg.Devices {
			e := &msg.Devices[j]
			if p.find(j, e, devs) != d {
				continue
			}
			if _, changed := workspaceChange(d, id, e); changed {
				return true
			}
			for k, c := range e.Configure {
				if key := c.Key(); (key == protocol.KeyBasis || key == protocol.KeyMount || key == protocol.KeyPreset) &&
					!d.unchangedBy(id, e.Configure[k:k+1]) {
					return true
				}
			}
		}
		return false
	}
	now := p.svc.opts.Clock.Now()
	var errs []protocol.Error
	// planned is each arm's declaration after the entries checked so far:
	// two entries for one arm apply one after the other.
	var planned map[*Device]*armEffects
	for i := range msg.Devices {
		e := &msg.Devices[i]
		if !e.HasEffects || e.Effects.Empty() {
			continue
		}
		d := p.find(i, e, devs)
		if d == nil || d.Type != protocol.TypeArm {
			continue
		}
		if owner := d.Register().Owner(); owner != 0 && owner != id {
			continue
		}
		if turnsView(d) {
			continue
		}
		base := planned[d]
		if base == nil {
			base = p.effectsLeft(d, now)
		}
		pl, perr := planEffects(id, base, &e.Effects, now, e.Path+".effects", d.ViewFor(id))
		if perr != nil {
			errs = append(errs, *perr)
			p.svc.activity.Publish(event.EffectRefused(d.Name, d.ID, id, pl.refused, string(perr.Code), perr.Message))
			continue
		}
		if planned == nil {
			planned = map[*Device]*armEffects{}
		}
		planned[d] = &armEffects{declared: pl.declared, declaredNs: pl.declaredNs}
	}
	return errs
}

// effectsLeft is the session's declaration on d as effectsBefore will
// leave it at now (the control ended: none; the time of some ran out, or
// the session's view of d changed so that some no longer render: the
// others), without changing anything.
func (p *tickPath) effectsLeft(d *Device, now int64) *armEffects {
	a := p.fx[d]
	if a == nil || d.Register().Owner() != p.sess.ID || now > a.deadlineNs {
		return &armEffects{}
	}
	if cur := d.rt.Effects(); cur != a.set {
		// The device actor's conversion of a's Set for a newer view, as
		// effectsBefore will adopt it; another Set: the control ended.
		decl := convertedFrom(cur, p.sess.ID)
		if decl == nil {
			return &armEffects{}
		}
		a = &armEffects{declared: decl.effects, endsNs: decl.endsNs, declaredNs: decl.declaredNs, set: cur, view: decl.view}
	}
	left := &armEffects{}
	for i := range a.declared {
		if end := a.endsNs[i]; end == 0 || now < end {
			left.declared = append(left.declared, a.declared[i])
			left.declaredNs = append(left.declaredNs, a.declaredNs[i])
			left.endsNs = append(left.endsNs, a.endsNs[i])
		}
	}
	if v := d.ViewFor(p.sess.ID); v != a.view {
		for {
			_, bad, err := buildSet(p.sess.ID, left.declared, left.declaredNs, &v.Space)
			if err == nil {
				break
			}
			left.remove(bad)
		}
	}
	return left
}

// renewLease writes the session's command in force on d again with a new
// deadline: an effects member is a control action. The command a message
// wrote in this entry is renewed already; otherwise the last command the
// session wrote in this term is, unless the loop disarmed it (a halt, a
// driver error: only a new command re-arms a force), or an idle command
// (the effects' force alone) on a fresh claim or after such a disarm.
func (p *tickPath) renewLease(d *Device, e *protocol.DeviceEntry, leaseMs int, wasOwner bool, a *armEffects) {
	id := p.sess.ID
	reg := d.Register()
	deadline := p.leaseDeadline(leaseMs)
	a.deadlineNs = deadline
	if e.Command.Kind != protocol.CmdNone && e.Command.Kind != protocol.CmdProbePosition {
		return // command wrote it, with the same deadline
	}
	p.seq++
	params := d.ViewFor(id).Params
	if wasOwner && reg.Renew(id, p.seq, deadline, params) {
		keepView(reg, id, params, func() *loop.Params { return d.ViewFor(id).Params })
		p.closedSince(d)
		return
	}
	if !reg.Write(id, p.seq, deadline, &hw.Command{}, params) {
		p.dropEffects(d)
		return
	}
	keepView(reg, id, params, func() *loop.Params { return d.ViewFor(id).Params }) // as tickPath.command
	p.closedSince(d)
}

// closedSince releases d and drops the session's effects on it if the
// session closed while renewLease wrote its command (Close released what
// it saw before).
func (p *tickPath) closedSince(d *Device) {
	if p.sess.closed.Load() {
		d.Register().Release(p.sess.ID)
		d.rt.DropEffects(p.sess.ID)
	}
}

// applyEffectsUpdate returns a's declaration with u applied (clear, then
// remove, then set by id), or the error that refuses it whole.
func applyEffectsUpdate(a *armEffects, u *protocol.EffectsUpdate, now int64, at string) ([]protocol.Effect, []int64, []protocol.Error, *protocol.Error) {
	var declared []protocol.Effect
	var declaredNs []int64
	if !u.Clear {
		declared = append(declared, a.declared...)
		declaredNs = append(declaredNs, a.declaredNs...)
	}
	var warnings []protocol.Error
	for k, rid := range u.Remove {
		i := indexOfEffect(declared, rid)
		if i < 0 {
			warnings = append(warnings, *protocol.Errorf(protocol.CodeUnknownEffect, at+".remove["+strconv.Itoa(k)+"]",
				"no effect %q on this arm: nothing removed", rid))
			continue
		}
		declared = append(declared[:i], declared[i+1:]...)
		declaredNs = append(declaredNs[:i], declaredNs[i+1:]...)
	}
	for _, ef := range u.Set {
		if i := indexOfEffect(declared, ef.ID); i >= 0 {
			declared[i], declaredNs[i] = ef, now
			continue
		}
		declared = append(declared, ef)
		declaredNs = append(declaredNs, now)
	}
	if len(declared) > protocol.MaxEffectsPerArm {
		return nil, nil, nil, protocol.Errorf(protocol.CodeTooManyEffects, at,
			"the arm would hold %d effects of this session; at most %d: remove some first", len(declared), protocol.MaxEffectsPerArm)
	}
	return declared, declaredNs, warnings, nil
}

// effectPath is the path of the effect id in u's set (at.set[i], and the
// member err names, if it names one), or at when u does not set it (it was
// in force already, and a change of the session's view made it
// unrenderable).
func effectPath(at string, u *protocol.EffectsUpdate, id string, err error) string {
	if i := indexOfEffect(u.Set, id); i >= 0 {
		p := at + ".set[" + strconv.Itoa(i) + "]"
		var fe *effectMemberError
		if errors.As(err, &fe) {
			p += "." + fe.member
		}
		return p
	}
	return at
}

// effectMemberError is a refusal of one member of a declared effect (its
// wire path below the effect, "transform.scale"), so that the error entry
// points at it.
type effectMemberError struct {
	member string
	err    error
}

func (e *effectMemberError) Error() string { return e.err.Error() }
func (e *effectMemberError) Unwrap() error { return e.err }

func indexOfEffect(list []protocol.Effect, id string) int {
	for i := range list {
		if list[i].ID == id {
			return i
		}
	}
	return -1
}

func firstEffectID(u *protocol.EffectsUpdate) string {
	if len(u.Set) > 0 {
		return u.Set[0].ID
	}
	if len(u.Remove) > 0 {
		return u.Remove[0]
	}
	return ""
}

// endsOf is when each effect's ttl or vibration runs out (0: never).
func endsOf(declared []protocol.Effect, declaredNs []int64) []int64 {
	ends := make([]int64, len(declared))
	for i := range declared {
		ends[i] = effectEndNs(&declared[i], declaredNs[i])
	}
	return ends
}

func effectEndNs(e *protocol.Effect, fromNs int64) int64 {
	ms := e.TTLMs
	if e.Type == protocol.EffectVibration && e.Vibration.DurationMs > 0 && (ms == 0 || e.Vibration.DurationMs < ms) {
		ms = e.Vibration.DurationMs
	}
	if ms == 0 {
		return 0
	}
	return fromNs + int64(ms)*int64(time.Millisecond)
}

// buildSet converts a declaration to the device frame and makes the Set the
// loop renders. On error, bad is the index of the effect refused and err
// names it.
func buildSet(session uint64, declared []protocol.Effect, declaredNs []int64, view *space.View) (set *effect.Set, bad int, err error) {
	specs := make([]effect.Spec, len(declared))
	for i := range declared {
		if err := toSpec(&specs[i], declared[i].ToDevice(view), declaredNs[i]); err != nil {
			return nil, i, fmt.Errorf("effect %q: %w", declared[i].ID, err)
		}
	}
	set, err = effect.NewSet(session, specs)
	if err == nil {
		return set, 0, nil
	}
	// NewSet names the effect it refused but not where it is: find it, so
	// that the error points at it and not at the first effect in force.
	for i := range specs {
		if _, one := effect.NewSet(session, specs[i:i+1]); one != nil {
			return nil, i, one
		}
	}
	return nil, 0, err
}

// toSpec fills sp with e (in the device frame) as the loop renders it.
// Expiry counts from fromNs, the service Clock time of the declaration,
// which is the loop's clock.
func toSpec(sp *effect.Spec, e protocol.Effect, fromNs int64) error {
	if err := lengthsRendered(&e); err != nil {
		return err
	}
	*sp = effect.Spec{ID: e.ID, ExpiresNs: effectEndNs(&e, fromNs)}
	p := &sp.Params
	switch e.Type {
	case protocol.EffectSpring:
		s := &e.Spring
		sp.Kind = [...]effect.Kind{protocol.SpringToPoint: effect.SpringPoint, protocol.SpringToLine: effect.SpringLine, protocol.SpringToPlane: effect.SpringPlane}[s.Anchor]
		p.PointM, p.AxisUnit = hw.Vec3(s.PositionM), hw.Vec3(s.Direction)
		p.StiffnessNPerM, p.DampingNsPerM = s.StiffnessNPerM, s.DampingNsPerM
	case protocol.EffectDamper:
		// The loop's damper is a scalar plus a diagonal: a per-axis damper
		// in axes the device's are a signed permutation of (every basis
		// and mount preset) is exact; another rotation is refused.
		m := &e.Damper.MatrixNsPerM
		for i := range 3 {
			for j := range 3 {
				if i != j && math.Abs(m[i][j]) > 1e-9*(1+math.Abs(m[i][i])+math.Abs(m[j][j])) {
					return errors.New("a per-axis damper whose axes are turned against the device's is " + errEffectNotRendered.Error() + ": use a scalar damper")
				}
			}
		}
		sp.Kind = effect.Damper
		p.DampingPerAxisNsPerM = hw.Vec3{X: m[0][0], Y: m[1][1], Z: m[2][2]}
	case protocol.EffectFriction:
		sp.Kind = effect.Friction
		p.CoulombN, p.StickMps = e.Friction.ForceN, e.Friction.SlipVelocityMps
	case protocol.EffectWall:
		sp.Kind = effect.Wall
		p.PointM, p.AxisUnit = hw.Vec3(e.Wall.PositionM), hw.Vec3(e.Wall.Normal)
		p.StiffnessNPerM, p.DampingNsPerM = e.Wall.StiffnessNPerM, e.Wall.DampingNsPerM
	case protocol.EffectLimitSphere:
		s := &e.LimitSphere
		sp.Kind, sp.KeepInside = effect.LimitSphere, s.Keep == protocol.KeepInside
		p.PointM, p.RadiusM = hw.Vec3(s.CenterM), s.RadiusM
		p.StiffnessNPerM, p.DampingNsPerM = s.StiffnessNPerM, s.DampingNsPerM
	case protocol.EffectLimitBox:
		b := &e.LimitBox
		h, err := axisAlignedHalfExtents(&b.Axes, b.HalfExtentsM)
		if err != nil {
			return err
		}
		sp.Kind, sp.KeepInside = effect.LimitBox, b.Keep == protocol.KeepInside
		p.PointM, p.HalfExtentsM = hw.Vec3(b.CenterM), h
		p.StiffnessNPerM, p.DampingNsPerM = b.StiffnessNPerM, b.DampingNsPerM
	case protocol.EffectField:
		fe := &e.Field
		sp.Kind = effect.Field
		p.ForceN, p.JacobianNPerM, p.PointM, p.RadiusM = hw.Vec3(fe.ForceN), fe.JacobianNPerM, hw.Vec3(fe.OriginM), fe.RadiusM
		// The model is valid for valid_ms from its refresh; a ttl ends it
		// sooner.
		if end := fromNs + int64(fe.ValidMs)*int64(time.Millisecond); sp.ExpiresNs == 0 || end < sp.ExpiresNs {
			sp.ExpiresNs = end
		}
	case protocol.EffectVibration:
		v := &e.Vibration
		sp.Kind = effect.Vibration
		p.FrequencyHz, p.AmplitudeN, p.AxisUnit = v.FrequencyHz, v.AmplitudeN, hw.Vec3(v.Direction)
	case protocol.EffectSDF:
		return sdfSpec(sp, &e.SDF)
	default:
		return errors.New("unknown effect type")
	}
	return nil
}

// lengthsRendered refuses, at the member and in the declaration's words, a
// length or position of e (in the device frame) past the loop's
// effect.MaxLengthM: the wire takes up to 100 m of the session's space, and
// a workspace scale stretches it further. NewSet would refuse it too, but
// naming its own fields (point_m, radius_m), which no client sent.
func lengthsRendered(e *protocol.Effect) error {
	// prefix is the shape's parameters as the client sent them (nested or
	// flat); joined to the member only for an error, so that a check
	// allocates nothing.
	type length struct {
		prefix, member string
		v              float64
	}
	var ls [9]length
	n := 0
	prefix := ""
	add := func(member string, v float64) {
		if n < len(ls) && v != 0 {
			ls[n] = length{prefix, member, v}
			n++
		}
	}
	addVec := func(member string, v protocol.Vec3) {
		add(member, max(math.Abs(v.X), math.Abs(v.Y), math.Abs(v.Z)))
	}
	switch e.Type {
	case protocol.EffectSpring:
		addVec("position", e.Spring.PositionM)
	case protocol.EffectWall:
		addVec("position", e.Wall.PositionM)
	case protocol.EffectLimitSphere:
		addVec("center", e.LimitSphere.CenterM)
		add("radius", e.LimitSphere.RadiusM)
	case protocol.EffectLimitBox:
		addVec("center", e.LimitBox.CenterM)
		addVec("half_extents", e.LimitBox.HalfExtentsM)
	case protocol.EffectField:
		addVec("origin", e.Field.OriginM)
		add("radius", e.Field.RadiusM)
	case protocol.EffectSDF:
		// The shape's sizes are in its own frame (transform.scale sets
		// how long its unit is); the range is converted.
		s := &e.SDF
		q := &s.Shape.Params
		add("range", s.RangeM)
		prefix = s.SDFParamsPrefix()
		add("r", q.R)
		add("r1", q.R1)
		add("r2", q.R2)
		add("h", q.H)
		add("e", q.E)
		add("le", q.Le)
		addVec("a", q.A)
		addVec("b", q.B)
	}
	for _, l := range ls[:n] {
		if !(math.Abs(l.v) <= effect.MaxLengthM) {
			member := l.prefix + l.member
			return &effectMemberError{member: member, err: fmt.Errorf(
				"%s is %.4g m where the loop renders it (the device frame; a shape's own units for its parameters), past the %g m it renders: the wire takes lengths up to %g m of the session's space, before its set_transform scale",
				member, l.v, effect.MaxLengthM, protocol.EffectLengthMax)}
		}
	}
	return nil
}

// sdfSpec fills sp with an SDF effect (device frame): the shape's sizes in
// its local frame, the frame, and the force curve.
func sdfSpec(sp *effect.Spec, s *protocol.SDFEffect) error {
	prim, ok := effect.ParsePrimitive(s.Shape.Primitive)
	ease, eok := effect.ParseSDFEase(s.Ease)
	sym, sok := effect.ParseSDFSymmetry(s.Symmetry)
	if !ok {
		return errors.New("an sdf " + s.Shape.Primitive + " is " + errEffectNotRendered.Error() + " by this service's loop; it renders " + strings.Join(sdfRendered, ", "))
	}
	if !eok || !sok || s.Blend != "additive" {
		return errors.New("sdf ease " + s.Ease + ", symmetry " + s.Symmetry + " or blend " + s.Blend + " is " + errEffectNotRendered.Error())
	}
	sp.Kind, sp.Primitive = effect.SDF, prim
	sp.Curve = effect.SDFCurve{Ease: ease, Reverse: s.ReverseEasing, Symmetry: sym}
	_, shape := bubbleShape(s.Shape)
	q := &s.Shape.Params
	switch prim {
	case effect.PrimPlane:
		// d = n·x − h: the plane through h·n.
		n := hw.Vec3(q.N)
		shape.AxisUnit, shape.PointM = n, n.Scale(q.H)
	case effect.PrimBoxFrame:
		shape.HalfExtentsM, shape.MinorRadiusM = hw.Vec3(q.B), q.E
	case effect.PrimLink:
		shape.RadiusM, shape.MinorRadiusM, shape.HeightM = q.R1, q.R2, q.Le
	}
	p := &sp.Params
	*p = shape
	p.ToLocal, p.LocalOffsetM, p.DevMPerLocalM = s.ToLocal, hw.Vec3(s.LocalOffset), s.FrameMPerLocalM
	p.RangeM, p.ForceScaleN = s.RangeM, s.ForceScaleN
	// The loop bounds the frame (effect.CheckSDFFrame); say what it
	// refuses in the words of the declaration, not the loop's fields.
	switch effect.CheckSDFFrame(p) {
	case effect.SDFFrameScale:
		return &effectMemberError{member: "transform.scale", err: fmt.Errorf(
			"an sdf whose transform.scale (with set_transform's scale) makes a unit of its shape about %.3g m of handle motion is %w: the loop renders %g to %g m",
			p.DevMPerLocalM, errEffectNotRendered, effect.SDFMinDevMPerLocalM, effect.SDFMaxDevMPerLocalM)}
	case effect.SDFFramePlace:
		return &effectMemberError{member: "transform.position", err: fmt.Errorf(
			"an sdf whose transform.position is more than %g units of its shape (the distance over transform.scale) from the device's origin is %w: move it closer or scale it up",
			effect.SDFMaxLocal, errEffectNotRendered)}
	}
	return nil
}

// sdfRendered lists the primitives an sdf effect renders (effect.SDF).
var sdfRendered = []string{"sphere", "ellipsoid", "box", "rounded_box", "plane", "capsule", "capped_cylinder",
	"capsule_vertical", "capped_cylinder_vertical", "torus", "box_frame", "link"}

// axisAlignedHalfExtents maps a box whose axes (columns, device frame) are
// a signed permutation of the device's to its half-extents along the
// device's axes; the loop's boxes are axis-aligned.
func axisAlignedHalfExtents(axes *protocol.Mat3, h protocol.Vec3) (hw.Vec3, error) {
	in := [3]float64{h.X, h.Y, h.Z}
	var out [3]float64
	for j := range 3 {
		found := false
		for i := range 3 {
			if math.Abs(math.Abs(axes[i][j])-1) < 1e-6 {
				out[i], found = in[j], true
			}
		}
		if !found {
			return hw.Vec3{}, errors.New("a limit_box turned against the device's axes is " + errEffectNotRendered.Error() + ": the loop's boxes are axis-aligned")
		}
	}
	return hw.Vec3{X: out[0], Y: out[1], Z: out[2]}, nil
}

// dropSessionEffects withdraws every effect session declared (it ended).
func (s *Service) dropSessionEffects(session uint64) {
	for _, d := range s.Devices().All() {
		d.rt.DropEffects(session)
	}
}

// effectsAfterCommand notes a command the entry wrote to d: it renewed
// the lease of the session's effects there too.
func (p *tickPath) effectsAfterCommand(d *Device, e *protocol.DeviceEntry, leaseMs int) {
	a := p.fx[d]
	if a == nil || e.Command.Kind == protocol.CmdNone || e.Command.Kind == protocol.CmdProbePosition {
		return
	}
	if d.Register().Owner() == p.sess.ID {
		a.deadlineNs = p.leaseDeadline(leaseMs)
	}
}

// armExtScratch holds the arm state extensions of one frame, reused from
// frame to frame so a session framing effects does not allocate.
type armExtScratch struct {
	n       int
	exts    []protocol.ArmStateExtensions
	proxies [][]protocol.EffectProxy
	rep     loop.EffectsReport
}

func (xs *armExtScratch) reset() {
	if xs != nil {
		xs.n = 0
	}
}

// armExt returns d's state extensions as session's view v sees them at
// nowNs (service Clock): the effects in force (count, and each wall's proxy
// point in the session's space, with its navigation's workspace offset as
// cursor_position has it) and the passivity layer's figures, while
// the arm renders effects; the passivity figures alone while a session
// controls the arm and the controller guards the whole output (its
// "output" scope: the session's force is in it); nil otherwise
// (applyNavigation adds the figures to a navigating session's). An effect whose time ran out is
// not in force, though the Set holds it until its session's next entry for
// d (effectsBefore): GET stops listing it then too. xs may be nil (then it
// allocates).
func armExt(d *Device, v *View, xs *armExtScratch, nowNs int64) *protocol.ArmStateExtensions {
	set := d.rt.Effects()
	if set == nil || set.Len() == 0 || d.Register().Owner() != set.Session {
		if !outputScopedControl(d, v) {
			return nil
		}
		x := xs.next()
		*x = protocol.ArmStateExtensions{}
		x.HasPassivity, x.Passivity = true, passivityState(d)
		return x
	}
	// The declaration published with the Set, effect for effect: when
	// each one's ttl or duration ends, as GET and the session count it (a
	// field past its valid_ms is stale, not ended: its refresh may come).
	decl := declarationOf(set)
	ended := func(i int) bool {
		return decl != nil && i >= 0 && i < len(decl.endsNs) && decl.endsNs[i] != 0 && nowNs >= decl.endsNs[i]
	}
	inForce := 0
	for i := range set.Len() {
		if !ended(i) {
			inForce++
		}
	}
	if inForce == 0 {
		if !outputScopedControl(d, v) {
			return nil
		}
		x := xs.next()
		*x = protocol.ArmStateExtensions{}
		x.HasPassivity, x.Passivity = true, passivityState(d)
		return x
	}
	if xs == nil {
		xs = &armExtScratch{}
	}
	x := xs.next()
	proxies := xs.proxies[xs.n-1][:0]
	rep := &xs.rep
	d.rt.LoadEffects(rep)
	// The proxies are where the frame puts the cursor: with the
	// navigation's workspace offset, as cursor_position (applyNavigation).
	var offset space.Vec3
	offsetRead := false
	for i := range rep.N {
		r := &rep.Effects[i]
		// Only the effects of this Set: a lab node's report can still be
		// of the declaration before it (its push lags a generation).
		if i := set.IndexOf(r.ID); r.Removing || i < 0 || ended(i) {
			continue
		}
		switch r.Kind {
		case effect.Wall, effect.LimitSphere, effect.LimitBox, effect.Shape:
			if !offsetRead {
				if st, ok := navigationState(v); ok {
					offset = st.WorkspaceOffsetM
				}
				offsetRead = true
			}
			proxies = append(proxies, protocol.EffectProxy{ID: r.ID, PositionM: addVec(v.Space.PositionToApp(space.Vec3(r.ProxyM)), offset), Contact: r.Contact})
		}
	}
	xs.proxies[xs.n-1] = proxies
	*x = protocol.ArmStateExtensions{HasEffects: true, EffectCount: inForce, Proxies: proxies,
		HasPassivity: true, Passivity: passivityState(d)}
	return x
}

// next is a fresh extensions entry of the frame (xs nil: allocated).
func (xs *armExtScratch) next() *protocol.ArmStateExtensions {
	if xs == nil {
		return new(protocol.ArmStateExtensions)
	}
	if xs.n == len(xs.exts) {
		xs.exts = append(xs.exts, protocol.ArmStateExtensions{})
		xs.proxies = append(xs.proxies, nil)
	}
	xs.n++
	return &xs.exts[xs.n-1]
}

// passivityState is d's passivity figures as an arm state carries them:
// the energy the controller watches and the damping it adds now.
func passivityState(d *Device) protocol.PassivityState {
	out := d.rt.Output()
	return protocol.PassivityState{EnergyJ: out.EnergyJ, AddedDampingNsPerM: out.AddedDampingNsPerM}
}

// outputScopedControl says whether a session controls d while its
// passivity controller guards the whole output (the "output" scope), as v
// (any session's view: the entry is device-global) reports the entry: then
// the session's own force is what the controller watches, and every
// session's frames carry the figures, as they carry its effects.
func outputScopedControl(d *Device, v *View) bool {
	return v != nil && d.Register().Owner() != 0 && v.Config.Device.PassivityController.Scope == passivity.ScopeOutput.String()
}

// anyOutputScopedControl says whether one of arms is controlled in the
// output scope (outputScopedControl). Arm runs (framecache.go), shared by
// every session and built from the loops' snapshots, carry no extensions:
// a frame that must carry the figures builds its elements itself.
func anyOutputScopedControl(arms []*Device) bool {
	for _, d := range arms {
		if d.Register().Owner() != 0 && outputScopedControl(d, d.defaultView.Load()) {
			return true
		}
	}
	return false
}

// declaredEffects is the declaration behind a published Set, as its
// session declared it: the Set's Declaration, immutable once published.
type declaredEffects struct {
	effects []protocol.Effect
	endsNs  []int64
	// declaredNs and view are what a local session's Set was converted
	// from and with (nil view: forwarded or held), so that the device
	// actor can convert it again when the view changes (reconvertEffects).
	declaredNs []int64
	view       *View
	// forwarded names a lab gateway's session that declared them, when
	// this process renders them for it (RenderForwarded).
	forwarded *ForwardedEffects
}

// ForwardedEffects is what a lab's node knows of the effects a gateway's
// session declared on one of its arms, besides the Set it renders: the
// declaration as the session made it and whose it is, so that GET
// /{type}/{id}/effects on the node lists the effects in force on the arm
// as the gateway's does. Immutable once handed over.
type ForwardedEffects struct {
	// GatewayID and GatewayAddress name the gateway (its --node-id and
	// cluster address); SessionID is the session on it.
	GatewayID, GatewayAddress string
	SessionID                 uint64
	// Effects are as the session declared them, in its own space, one per
	// spec of the Set and in its order; EndsNs when each one's ttl ends
	// (service Clock; 0: never).
	Effects []protocol.Effect
	EndsNs  []int64
	// ForceToSession maps a device-frame force into the session's space.
	ForceToSession [3][3]float64
}

// DeclaredEffects is set's declaration as its session made it (in the
// session's space), when each of its effects' ttl ends (service Clock; 0:
// never) and the map of a device-frame force into that space, for a lab
// gateway to forward with the Set; ok is false when set is not the
// declaration published on d. It never blocks.
func (d *Device) DeclaredEffects(set *effect.Set) (effects []protocol.Effect, endsNs []int64, forceToSession [3][3]float64, ok bool) {
	decl := declarationOf(set)
	if decl == nil || decl.forwarded != nil {
		return nil, nil, forceToSession, false
	}
	view := d.ViewFor(set.Session)
	for j, e := range [3]space.Vec3{{X: 1}, {Y: 1}, {Z: 1}} {
		col := view.Space.ForceToApp(e)
		forceToSession[0][j], forceToSession[1][j], forceToSession[2][j] = col.X, col.Y, col.Z
	}
	return decl.effects, decl.endsNs, forceToSession, true
}

// declarationOf is set's declaration (nil: none, or no set).
func declarationOf(set *effect.Set) *declaredEffects {
	if set == nil {
		return nil
	}
	decl, _ := set.Declaration.(*declaredEffects)
	return decl
}

// publishEffects hands a's Set, with its declaration, to d's loop: GET
// reads the declaration with the Set in force (EffectsInForce), and a lab
// gateway forwards it with the Set (ForwardEffects, called by
// SetEffectsOf).
//
// It reports false, publishing nothing, when the session no longer controls
// d (its lease lapsed while the message was handled and another session
// took the arm): the new owner's effects stay as they are.
func (p *tickPath) publishEffects(d *Device, a *armEffects) bool {
	for range 4 {
		// Each Set is built anew with its declaration (a.remove copies), so
		// one already published keeps the declaration it went out with.
		if a.set != nil && a.set.Declaration == nil {
			a.set.Declaration = a.declaration()
		}
		if !d.rt.SetEffectsOf(p.sess.ID, a.set) {
			return false
		}
		d.framesChanged()
		// The device actor publishes a new view, then converts the Set in
		// force with it (reconvertEffects): a Set converted with the view
		// before it and published after that is converted again here.
		v := d.ViewFor(p.sess.ID)
		if v == a.view || v.Space == a.view.Space {
			return true
		}
		publishRefused(p.svc.activity, d, p.sess.ID, a.convert(p.sess.ID, v))
	}
	return true
}

// EffectsInForce is what GET /{type}/{id}/effects answers: the effects d
// renders for its controlling session, as that session declared them, with
// the time each has left. A device renders none while nobody controls it,
// or when its controller declared none.
func (s *Service) EffectsInForce(d *Device) protocol.EffectsInForce {
	set := d.rt.Effects()
	decl := declarationOf(set)
	if decl == nil || d.Register().Owner() != set.Session {
		return protocol.EffectsInForce{Effects: []protocol.EffectInForce{}}
	}
	now := s.opts.Clock.Now()
	out := protocol.EffectsInForce{SessionID: set.Session, Effects: make([]protocol.EffectInForce, 0, len(decl.effects))}
	var rep loop.EffectsReport
	d.rt.LoadEffects(&rep)
	toSession := d.ViewFor(set.Session).Space.ForceToApp
	if fw := decl.forwarded; fw != nil {
		out.Gateway = &protocol.EffectsGateway{ID: fw.GatewayID, Address: fw.GatewayAddress, SessionID: fw.SessionID}
		toSession = func(f space.Vec3) space.Vec3 {
			m := &fw.ForceToSession
			return space.Vec3{X: m[0][0]*f.X + m[0][1]*f.Y + m[0][2]*f.Z,
				Y: m[1][0]*f.X + m[1][1]*f.Y + m[1][2]*f.Z,
				Z: m[2][0]*f.X + m[2][1]*f.Y + m[2][2]*f.Z}
		}
	}
	for i := range decl.effects {
		left := -1
		if e := decl.endsNs[i]; e != 0 {
			if now >= e {
				// Its time ran out: it faded out and is no longer in
				// force, though the session drops it only at its next
				// message.
				continue
			}
			left = int((e - now) / int64(time.Millisecond))
		}
		in := protocol.EffectInForce{Effect: decl.effects[i], RemainingMs: left}
		for j := range rep.N {
			if r := &rep.Effects[j]; r.ID == decl.effects[i].ID && !r.Removing {
				in.ForceN, in.HasForce = toSession(space.Vec3(r.ForceN)), true
			}
		}
		out.Effects = append(out.Effects, in)
	}
	return out
}

// Output is the passivity layer's figures of d's output (loop.Device.Output).
func (d *Device) Output() loop.OutputReport { return d.rt.Output() }

// RenderForwarded makes set the effects d's loop renders for set.Session,
// an owner of d's register from another process (a lab gateway's commands,
// written by its node): validated and converted there, by the code a local
// session's go through (buildSet), and rebuilt here by effect.NewSet. They
// take no control and render under that owner's lease like a local
// session's. They replace what is in force only if mayReplace allows the
// register's holder (0: nobody) at the moment of the publish (nil: always),
// and RenderForwarded reports whether they did: a session that claims the
// device meanwhile keeps its own. GET /{type}/{id}/effects on this process
// lists them as fw declared them, marked with fw's gateway and session;
// with no fw, or one that does not match set spec for spec, it lists none.
func (d *Device) RenderForwarded(set *effect.Set, fw *ForwardedEffects, mayReplace func(holder uint64) bool) bool {
	if set != nil && fw != nil && len(fw.Effects) == set.Len() && len(fw.EndsNs) == set.Len() {
		decl := &declaredEffects{effects: fw.Effects, endsNs: fw.EndsNs, forwarded: fw}
		for i := range fw.Effects {
			if set.Spec(i).ID != fw.Effects[i].ID {
				decl = nil
				break
			}
		}
		if decl != nil {
			set.Declaration = decl
		}
	}
	if !d.rt.SetEffectsIf(set, mayReplace) {
		return false
	}
	d.framesChanged()
	return true
}

// RenderHeld makes set the effects d's loop renders for a holder of d's
// register that is no client (hapticd --sim-effects), as RenderForwarded
// does: GET /{type}/{id}/effects lists none of them, and frames show them.
func (d *Device) RenderHeld(set *effect.Set) { d.RenderForwarded(set, nil, nil) }

// DropForwarded withdraws the effects RenderForwarded gave owner, if they
// are still in force, and reports whether it did.
func (d *Device) DropForwarded(owner uint64) bool { return d.rt.DropEffects(owner) }

// LoadEffects is the loop's latest effects report (loop.Device.LoadEffects).
func (d *Device) LoadEffects(dst *loop.EffectsReport) bool { return d.rt.LoadEffects(dst) }

// Effects is the Set in force on d's loop (nil: none).
func (d *Device) Effects() *effect.Set { return d.rt.Effects() }
