package protocol

import (
	"errors"

	"github.com/hapticd/hapticd/protocol/space"
)

// DeviceConfig is a device's device-global entries (arms only). It is a
// value: copy it freely.
type DeviceConfig struct {
	Handedness          Handedness
	TorqueScaling       TorqueScaling
	GravityCompensation GravityCompensation
	HomeReturn          HomeReturn
	ForceClamp          ForceClamp
	ForceSlewLimit      ForceSlewLimit
	PassivityController PassivityController
}

// DefaultDeviceConfig is every device-global entry at its default.
func DefaultDeviceConfig() DeviceConfig {
	return DeviceConfig{
		Handedness:          DefaultEntry(KeyHandedness).(Handedness),
		TorqueScaling:       DefaultEntry(KeyTorqueScaling).(TorqueScaling),
		GravityCompensation: DefaultEntry(KeyGravityCompensation).(GravityCompensation),
		HomeReturn:          DefaultEntry(KeyHomeReturn).(HomeReturn),
		ForceClamp:          DefaultEntry(KeyForceClamp).(ForceClamp),
		ForceSlewLimit:      DefaultEntry(KeyForceSlewLimit).(ForceSlewLimit),
		PassivityController: DefaultEntry(KeyPassivityController).(PassivityController),
	}
}

// Get returns the entry k; nil for a session-scoped key.
func (c *DeviceConfig) Get(k Key) Entry {
	switch k {
	case KeyHandedness:
		return c.Handedness
	case KeyTorqueScaling:
		return c.TorqueScaling
	case KeyGravityCompensation:
		return c.GravityCompensation
	case KeyHomeReturn:
		return c.HomeReturn
	case KeyForceClamp:
		return c.ForceClamp
	case KeyForceSlewLimit:
		return c.ForceSlewLimit
	case KeyPassivityController:
		return c.PassivityController
	}
	return nil
}

// Set stores e. It reports false (and changes nothing) for a session-scoped
// entry, which belongs in a SessionConfig.
func (c *DeviceConfig) Set(e Entry) bool {
	switch v := e.(type) {
	case Handedness:
		c.Handedness = v
	case TorqueScaling:
		c.TorqueScaling = v
	case GravityCompensation:
		c.GravityCompensation = v
	case HomeReturn:
		c.HomeReturn = v
	case ForceClamp:
		c.ForceClamp = v
	case ForceSlewLimit:
		c.ForceSlewLimit = v
	case PassivityController:
		c.PassivityController = v
	default:
		return false
	}
	return true
}

// Reset restores k to its default.
func (c *DeviceConfig) Reset(k Key) {
	if !k.SessionScoped() && k.valid() {
		c.Set(DefaultEntry(k))
	}
}

// AppendJSON appends the stored form:
// {"handedness":"right","torque_scaling":{...},"gravity_compensation":{...},"home_return":{...},
// "force_clamp":{...},"force_slew_limit":{...},"passivity_controller":{...}}.
func (c DeviceConfig) AppendJSON(dst []byte) []byte {
	dst = append(dst, '{')
	dst = c.appendMembers(dst)
	return append(dst, '}')
}

// appendMembers appends the members of the stored form without braces; a
// frame's config object carries the same members.
func (c *DeviceConfig) appendMembers(dst []byte) []byte {
	dst = append(dst, `"handedness":`...)
	dst = c.Handedness.AppendJSON(dst)
	dst = append(dst, `,"torque_scaling":`...)
	dst = c.TorqueScaling.AppendJSON(dst)
	dst = append(dst, `,"gravity_compensation":`...)
	dst = c.GravityCompensation.AppendJSON(dst)
	dst = append(dst, `,"home_return":`...)
	dst = c.HomeReturn.AppendJSON(dst)
	dst = append(dst, `,"force_clamp":`...)
	dst = c.ForceClamp.AppendJSON(dst)
	dst = append(dst, `,"force_slew_limit":`...)
	dst = c.ForceSlewLimit.AppendJSON(dst)
	dst = append(dst, `,"passivity_controller":`...)
	return c.PassivityController.AppendJSON(dst)
}

// MarshalJSON is AppendJSON.
func (c DeviceConfig) MarshalJSON() ([]byte, error) { return c.AppendJSON(nil), nil }

// UnmarshalJSON decodes the stored form and validates every entry, so that a
// hand-edited state file cannot smuggle in an invalid value. Missing keys
// take their defaults; unknown keys are ignored (a newer service may have
// written them: StoredDeviceConfig lists them, for the store to keep). One entry that does not decode fails the whole document;
// StoredDeviceConfig keeps the others.
func (c *DeviceConfig) UnmarshalJSON(data []byte) error {
	out, _, err := decodeDeviceConfig(data, false, nil)
	if err != nil {
		return err
	}
	*c = out
	return nil
}

// decodeDeviceConfig decodes the stored form. With tolerate, an entry that
// does not decode takes its default and is listed in bad; without it, it
// is the error. A document that is not a JSON object is always the error.
// A member that is not a device-global entry is noted in unknown, if set,
// as is a member of an entry's object that its decode does not read.
func decodeDeviceConfig(data []byte, tolerate bool, unknown *unknownMembers) (DeviceConfig, []RejectedEntry, error) {
	out := DefaultDeviceConfig()
	var doc Doc
	root, e := parseObject(&doc, data, `{"handedness": "right", ...}`)
	if e != nil {
		return out, nil, e
	}
	var bad []RejectedEntry
	at := rootPath("")
	for it := root.Members(); it.Next(); {
		k, ok := keyFromNameBytes(it.Key())
		if (!ok || k.SessionScoped()) && unknown != nil {
			unknown.add(&it)
			continue
		}
		// A name given twice counts by its last occurrence, as on the
		// wire: an earlier one is neither in force nor rejected (a bad
		// first "handedness" was reported rejected while the second was
		// in force).
		if !ok || k.SessionScoped() || !it.Value().Exists() || it.Superseded() {
			continue
		}
		c := at.child(k.Name())
		var inner unknownMembers
		e, err := decodeEntryValue(k, it.Value(), &c, keeping(unknown, &inner))
		if err != nil {
			if !tolerate {
				return out, nil, err
			}
			// Its default is written: nothing of it is kept.
			bad = append(bad, RejectedEntry{Key: k, Err: *err})
			continue
		}
		out.Set(e)
		if unknown != nil {
			*unknown = append(*unknown, keptIn(e, inner)...)
		}
	}
	return out, bad, nil
}

// keeping is the warnings of a stored entry's decode: none heard, and the
// members it does not read collected in inner when unknown is set (the
// caller keeps them: a newer build's field inside an entry this build
// knows).
func keeping(unknown, inner *unknownMembers) warnings {
	if unknown == nil {
		return warnings{}
	}
	return warnings{kept: inner}
}

// RejectedEntry is one entry of a stored document that this build does not
// accept (a value a newer build wrote, a hand edit's typo): the entry took
// its default, and Err says what was wrong with the stored value.
type RejectedEntry struct {
	Key Key
	Err Error
}

// rejectedError joins the errors of bad, nil when there are none.
func rejectedError(bad []RejectedEntry) error {
	if len(bad) == 0 {
		return nil
	}
	errs := make([]error, len(bad))
	for i := range bad {
		errs[i] = &bad[i].Err
	}
	return errors.Join(errs...)
}

// StoredDeviceConfig decodes a stored device-global document entry by
// entry: every entry that decodes is in Config, with the same validation
// as the wire (DeviceConfig's); one that does not takes its default and is
// listed in Rejected. A member that is not a device-global entry is in
// Unknown, as the file has it, for the store to write back, and so is a
// member of an accepted entry's object that the entry's decode does not
// read (a newer build's field), In its place. A document that is not a
// JSON object is an error as for DeviceConfig.
type StoredDeviceConfig struct {
	Config   DeviceConfig
	Rejected []RejectedEntry
	Unknown  []UnknownMember
}

// UnmarshalJSON decodes the stored form, keeping every entry that decodes.
func (s *StoredDeviceConfig) UnmarshalJSON(data []byte) error {
	var unknown unknownMembers
	cfg, bad, err := decodeDeviceConfig(data, true, &unknown)
	if err != nil {
		return err
	}
	s.Config, s.Rejected, s.Unknown = cfg, bad, unknown.lastOnly()
	return nil
}

// RejectedEntries is the error of every entry that did not decode, joined;
// nil when every entry did (the state directory's store keeps the file as
// evidence then).
func (s *StoredDeviceConfig) RejectedEntries() error { return rejectedError(s.Rejected) }

// SessionConfig is the session-scoped entries of one (session, device)
// pair. It is a value: copy it freely (the Damping pointers are never
// written through, only replaced).
type SessionConfig struct {
	// Preset is a preset name, or PresetCustom once a mount was set.
	Preset string
	// Mount is the user's mount while Preset is PresetCustom, identity
	// otherwise: a preset's own transform depends on the device's workspace
	// centre and is computed by the caller (space.PresetTransform).
	Mount Transform
	// Basis is the device-level basis; nil means the session-level basis
	// applies.
	Basis     *Basis
	Damping   Damping
	ForceGate ForceGate
	// Navigation is the bubble navigation entry; a value without pointers,
	// so == compares it.
	Navigation Navigation
}

// DefaultSessionConfig is preset "defaults", identity mount, no device
// basis, damping {scalar: 0} and force gate {gain: 0.3}.
func DefaultSessionConfig() SessionConfig {
	return SessionConfig{
		Preset:    DefaultEntry(KeyPreset).(Preset).Preset,
		Mount:     space.IdentityTransform(),
		Damping:   DefaultEntry(KeyDamping).(Damping),
		ForceGate: DefaultEntry(KeyForceGate).(ForceGate),

		Navigation: DefaultNavigation(),
	}
}

// Get returns the entry k; nil for a device-global key. With no device
// basis, Get(KeyBasis) answers the identity: the caller that knows the
// session's basis reports that one instead.
func (c *SessionConfig) Get(k Key) Entry {
	switch k {
	case KeyPreset:
		return Preset{Preset: c.Preset}
	case KeyMount:
		return Mount{Transform: c.Mount}
	case KeyBasis:
		if c.Basis == nil {
			return DefaultEntry(KeyBasis)
		}
		return *c.Basis
	case KeyDamping:
		return c.Damping
	case KeyForceGate:
		return c.ForceGate
	case KeyNavigation:
		return c.Navigation
	}
	return nil
}

// Set stores e. A mount makes the preset read "custom"; a preset resets the
// mount to identity (its transform is the caller's to compute). It reports
// false (and changes nothing) for a device-global entry.
func (c *SessionConfig) Set(e Entry) bool {
	switch v := e.(type) {
	case Preset:
		c.Preset = v.Preset
		c.Mount = space.IdentityTransform()
	case Mount:
		c.Preset = PresetCustom
		c.Mount = v.Transform
	case Basis:
		c.Basis = &v
	case Damping:
		c.Damping = v.Clone()
	case ForceGate:
		c.ForceGate = v
	case Navigation:
		c.Navigation = v
	default:
		return false
	}
	return true
}

// Unchanged reports whether setting entries in order would leave c as it
// is. It allocates nothing, so a session can skip a configure that a client
// re-sends every tick. An entry Set does not take (a device-global one)
// reports false: applying it is an error, not a no-op.
func (c *SessionConfig) Unchanged(entries []Entry) bool {
	next := *c
	// Set copies a Damping's values and boxes a Basis; a config that is only
	// compared may share the one and compares the other by value.
	var basis Basis
	hasBasis := false
	for _, e := range entries {
		switch v := e.(type) {
		case Damping:
			next.Damping = v
		case Basis:
			basis, hasBasis = v, true
		default:
			if !next.Set(e) {
				return false
			}
		}
	}
	if hasBasis && (c.Basis == nil || *c.Basis != basis) {
		return false
	}
	return next.Equal(c)
}

// Reset restores k to its default. Resetting the preset or the mount
// restores both (they are one placement); resetting the basis removes the
// device basis so the session-level one applies.
func (c *SessionConfig) Reset(k Key) {
	switch k {
	case KeyPreset, KeyMount:
		d := DefaultSessionConfig()
		c.Preset, c.Mount = d.Preset, d.Mount
	case KeyBasis:
		c.Basis = nil
	case KeyDamping, KeyForceGate, KeyNavigation:
		c.Set(DefaultEntry(k))
	}
}

// Equal compares values, not pointers: two configs that read the same are
// equal however their Basis and Damping were allocated. Every field is
// compared (TestSessionConfigEqualComparesEveryField fails otherwise), so a
// caller that skips work on Equal never misses a change.
func (c *SessionConfig) Equal(o *SessionConfig) bool {
	for k := KeyPreset; int(k) <= numKeys; k++ {
		if k.SessionScoped() && !c.SameEntry(o, k) {
			return false
		}
	}
	return true
}

// SameEntry reports whether entry k reads the same in c and o. The
// placement (preset and mount) is one entry: KeyPreset and KeyMount both
// compare the two. A device-global key reads the same.
func (c *SessionConfig) SameEntry(o *SessionConfig, k Key) bool {
	switch k {
	case KeyPreset, KeyMount:
		return c.Preset == o.Preset && c.Mount == o.Mount
	case KeyBasis:
		return (c.Basis == nil) == (o.Basis == nil) && (c.Basis == nil || *c.Basis == *o.Basis)
	case KeyDamping:
		return c.Damping.Equal(o.Damping)
	case KeyForceGate:
		return c.ForceGate == o.ForceGate
	case KeyNavigation:
		return c.Navigation == o.Navigation
	}
	return true
}

// Take sets entry k of c to o's, whole: the placement (preset and mount)
// together, the device basis set or unset as in o. Pointers are shared,
// as they are never written through.
func (c *SessionConfig) Take(o *SessionConfig, k Key) {
	switch k {
	case KeyPreset, KeyMount:
		c.Preset, c.Mount = o.Preset, o.Mount
	case KeyBasis:
		c.Basis = o.Basis
	case KeyDamping:
		c.Damping = o.Damping
	case KeyForceGate:
		c.ForceGate = o.ForceGate
	case KeyNavigation:
		c.Navigation = o.Navigation
	}
}

// TakeChanged takes from after (Take) every entry that differs between
// before and after, and leaves the others as they are in c: a change that
// one of several writers of a document made goes onto it without undoing
// what the others stored.
func (c *SessionConfig) TakeChanged(before, after *SessionConfig) {
	for k := KeyPreset; int(k) <= numKeys; k++ {
		if k.SessionScoped() && !before.SameEntry(after, k) {
			c.Take(after, k)
		}
	}
}

// AppendJSON appends the stored form: {"preset": "defaults"|"custom"|...,
// "mount": {"transform": ...}, "basis": {"permutation"}|null,
// "damping": {...}, "force_gate": {...}, "navigation": {...}}.
func (c SessionConfig) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"preset":`...)
	dst = AppendString(dst, c.Preset)
	dst = append(dst, `,"mount":`...)
	dst = Mount{Transform: c.Mount}.AppendJSON(dst)
	dst = append(dst, `,"basis":`...)
	if c.Basis == nil {
		dst = append(dst, "null"...)
	} else {
		dst = c.Basis.AppendJSON(dst)
	}
	dst = append(dst, `,"damping":`...)
	dst = c.Damping.AppendJSON(dst)
	dst = append(dst, `,"force_gate":`...)
	dst = c.ForceGate.AppendJSON(dst)
	dst = append(dst, `,"navigation":`...)
	dst = c.Navigation.AppendJSON(dst)
	return append(dst, '}')
}

// MarshalJSON is AppendJSON.
func (c SessionConfig) MarshalJSON() ([]byte, error) { return c.AppendJSON(nil), nil }

// UnmarshalJSON decodes the stored form with the same validation as the
// wire. Missing keys take defaults, unknown keys are ignored. A mount is
// read only with preset "custom". One entry that does not decode fails the
// whole document; StoredSessionConfig keeps the others.
func (c *SessionConfig) UnmarshalJSON(data []byte) error {
	out, _, err := decodeSessionConfig(data, false, nil)
	if err != nil {
		return err
	}
	*c = out
	return nil
}

// decodeSessionConfig decodes the stored form. With tolerate, an entry that
// does not decode takes its default and is listed in bad (a bad preset or
// mount: the default placement, as they are one); without it, it is the
// error. A document that is not a JSON object is always the error. A
// member that is not a session-scoped entry is noted in unknown, if set,
// as is a member of an entry's object that its decode does not read.
func decodeSessionConfig(data []byte, tolerate bool, unknown *unknownMembers) (SessionConfig, []RejectedEntry, error) {
	out := DefaultSessionConfig()
	var doc Doc
	root, e := parseObject(&doc, data, `{"preset": "defaults", ...}`)
	if e != nil {
		return out, nil, e
	}
	var bad []RejectedEntry
	reject := func(k Key, err *Error) error {
		if !tolerate {
			return err
		}
		bad = append(bad, RejectedEntry{Key: k, Err: *err})
		return nil
	}
	at := rootPath("")
	var mount Value
	presetBad := false
	for it := root.Members(); it.Next(); {
		k, isKey := keyFromNameBytes(it.Key())
		if !isKey || !k.SessionScoped() {
			if unknown != nil {
				unknown.add(&it)
			}
			continue
		}
		val := it.Value()
		// The last occurrence of a name counts; Superseded scans ahead,
		// so it is asked of the names decoded here only (a document of
		// many unknown names costs one pass).
		if !val.Exists() || it.Superseded() {
			continue
		}
		switch {
		case it.KeyIs("preset"):
			pat := at.child("preset")
			name, known, err := readEnum(val, &pat, presetNames)
			if err == nil && !known && name != PresetCustom {
				err = errAt(CodeUnknownPreset, &pat, "unknown preset %q in stored config: set the entry again (deleting the file resets its other entries too)", name)
			}
			if err != nil {
				if rerr := reject(KeyPreset, err); rerr != nil {
					return out, nil, rerr
				}
				presetBad = true
				continue
			}
			out.Preset = name
		case it.KeyIs("mount"):
			mount = val
		default:
			kat := at.child(k.Name())
			var inner unknownMembers
			e, err := decodeEntryValue(k, val, &kat, keeping(unknown, &inner))
			if err != nil {
				if rerr := reject(k, err); rerr != nil {
					return out, nil, rerr
				}
				continue
			}
			out.Set(e)
			if unknown != nil {
				*unknown = append(*unknown, keptIn(e, inner)...)
			}
		}
	}
	if presetBad {
		out.Preset = DefaultSessionConfig().Preset
	}
	if out.Preset == PresetCustom {
		mat := at.child("mount")
		var err *Error
		var e Mount
		var inner unknownMembers
		if !mount.Exists() {
			err = errAt(CodeInvalidValue, &mat, `stored preset "custom" needs a mount: set the placement again (deleting the file resets its other entries too)`)
		} else {
			e, err = decodeStoredMount(mount, &mat, keeping(unknown, &inner))
		}
		if err != nil {
			if rerr := reject(KeyMount, err); rerr != nil {
				return out, nil, rerr
			}
			d := DefaultSessionConfig()
			out.Preset, out.Mount = d.Preset, d.Mount
		} else {
			out.Mount = e.Transform
			if unknown != nil {
				*unknown = append(*unknown, keptIn(e, inner)...)
			}
		}
	}
	return out, bad, nil
}

// StoredSessionConfig decodes a stored profile document of one device
// entry by entry, as StoredDeviceConfig does a device's: every entry that
// decodes is in Config; one that does not takes its default and is listed
// in Rejected; a member that is not a session-scoped entry is in Unknown,
// and so is a member of an accepted entry's object that the entry's
// decode does not read, In its place.
type StoredSessionConfig struct {
	Config   SessionConfig
	Rejected []RejectedEntry
	Unknown  []UnknownMember
}

// UnmarshalJSON decodes the stored form, keeping every entry that decodes.
func (s *StoredSessionConfig) UnmarshalJSON(data []byte) error {
	var unknown unknownMembers
	cfg, bad, err := decodeSessionConfig(data, true, &unknown)
	if err != nil {
		return err
	}
	s.Config, s.Rejected, s.Unknown = cfg, bad, unknown.lastOnly()
	return nil
}

// RejectedEntries is the error of every entry that did not decode, joined;
// nil when every entry did.
func (s *StoredSessionConfig) RejectedEntries() error { return rejectedError(s.Rejected) }

// DecodeStoredLeaseMs decodes a profile's stored lease (its session
// level's "lease_ms", a number of milliseconds) with the wire's range
// (session.configure.lease.ms).
func DecodeStoredLeaseMs(data []byte) (int, *Error) {
	var doc Doc
	if err := doc.Parse(data); err != nil {
		return 0, err
	}
	at := rootPath("lease_ms")
	return readInt(doc.Root(), &at, LeaseMinMs, LeaseMaxMs)
}
