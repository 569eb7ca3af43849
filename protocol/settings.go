package protocol

import "strings"

// SettingKey names one service setting (PROTOCOL 4, "Settings").
type SettingKey uint8

const (
	SettingForceScale   SettingKey = iota + 1 // devices/force_scale: 0..1, default 1
	SettingSerialEnable                       // system/serial_enable: bool, default true
	SettingGripHook                           // features/grip_hook/enabled: bool, default false
	SettingScreensaver                        // features/screensaver/enabled: bool, default false
)

// ForceScaleMax is the largest devices/force_scale (the smallest is 0).
const ForceScaleMax = 1.0

// settingPaths is indexed by SettingKey; never written.
var settingPaths = [...]string{
	SettingForceScale:   "devices/force_scale",
	SettingSerialEnable: "system/serial_enable",
	SettingGripHook:     "features/grip_hook/enabled",
	SettingScreensaver:  "features/screensaver/enabled",
}

func (k SettingKey) valid() bool { return k >= SettingForceScale && int(k) < len(settingPaths) }

// Path is the key under /settings/ ("devices/force_scale").
func (k SettingKey) Path() string {
	if !k.valid() {
		return ""
	}
	return settingPaths[k]
}

func (k SettingKey) String() string { return k.Path() }

// SettingKeys lists every setting (a copy).
func SettingKeys() []SettingKey {
	out := make([]SettingKey, 0, len(settingPaths)-1)
	for k := SettingForceScale; k.valid(); k++ {
		out = append(out, k)
	}
	return out
}

// SettingFromPath resolves a path under /settings/.
func SettingFromPath(p string) (SettingKey, bool) {
	p = strings.Trim(p, "/")
	for k := SettingForceScale; k.valid(); k++ {
		if settingPaths[k] == p {
			return k, true
		}
	}
	return 0, false
}

// Settings holds every setting. It is a value: copy it freely.
type Settings struct {
	ForceScale   float64 // 0..1: scales every force the service commands
	SerialEnable bool
	GripHook     bool
	Screensaver  bool
}

// DefaultSettings is every setting at its default.
func DefaultSettings() Settings {
	return Settings{ForceScale: 1, SerialEnable: true}
}

// DecodeSetting decodes a settings body: {"value": v} or the bare v. It
// returns a float64 for force_scale and a bool for the others.
func DecodeSetting(k SettingKey, data []byte) (any, *Error) {
	return decodeSettingBytes(k, data, warnings{})
}

// DecodeSettingWarn is DecodeSetting that also returns an unknown_field
// warning for each member beside "value" (at most MaxWarnings, then
// warnings_dropped), for the HTTP answer to list.
func DecodeSettingWarn(k SettingKey, data []byte) (any, []Error, *Error) {
	var w bodyWarnings
	v, err := decodeSettingBytes(k, data, w.sink())
	if err != nil {
		return nil, nil, err
	}
	return v, w.done(k.Path()), nil
}

func decodeSettingBytes(k SettingKey, data []byte, w warnings) (any, *Error) {
	if !k.valid() {
		return nil, Errorf(CodeUnknownSetting, "", "unknown setting: use one of %s", strings.Join(settingPaths[1:], ", "))
	}
	var doc Doc
	if err := doc.Parse(data); err != nil {
		return nil, err
	}
	if err := refuseAnswerEnvelope(doc.Root(), "setting "+k.Path()); err != nil {
		return nil, err
	}
	// The root is named after the setting for the messages ("unknown field
	// "x" in devices/force_scale"); paths point into the body.
	at := rootPath(k.Path())
	v, err := decodeSettingValue(k, doc.Root(), &at, w)
	if err != nil {
		err.Path = trimRoot(k.Path(), err.Path)
	}
	return v, err
}

func decodeSettingValue(k SettingKey, v Value, at *pathSeg, w warnings) (any, *Error) {
	// Messages name the setting ("devices/force_scale 1.5 is out of range
	// 0..1"); paths point into the body.
	name := rootPath(k.Path())
	if v.Kind() == KindObject {
		inner := v.Member("value")
		if !inner.Exists() {
			return nil, errAt(CodeInvalidValue, at, `setting %s needs {"value": ...} or the bare value`, k.Path())
		}
		for it := v.Members(); it.Next(); {
			if !it.KeyIs("value") {
				w.unknownField(at, &it)
			}
		}
		v = inner
		c := at.child("value")
		at = &c
	}
	var out any
	var err *Error
	if k == SettingForceScale {
		out, err = readRange(v, &name, 0, ForceScaleMax)
	} else {
		out, err = readBool(v, &name)
	}
	if err != nil {
		err.Path = at.String()
		return nil, err
	}
	return out, nil
}

// Get returns the value of k: a float64 for force_scale, a bool otherwise;
// nil for an unknown key.
func (s *Settings) Get(k SettingKey) any {
	switch k {
	case SettingForceScale:
		return s.ForceScale
	case SettingSerialEnable:
		return s.SerialEnable
	case SettingGripHook:
		return s.GripHook
	case SettingScreensaver:
		return s.Screensaver
	}
	return nil
}

// Set stores v (as DecodeSetting returns it). It reports false and changes
// nothing when v has the wrong type for k.
func (s *Settings) Set(k SettingKey, v any) bool {
	switch k {
	case SettingForceScale:
		f, ok := v.(float64)
		if !ok || !(f >= 0 && f <= 1) {
			return false
		}
		s.ForceScale = f
		return true
	case SettingSerialEnable, SettingGripHook, SettingScreensaver:
		b, ok := v.(bool)
		if !ok {
			return false
		}
		switch k {
		case SettingSerialEnable:
			s.SerialEnable = b
		case SettingGripHook:
			s.GripHook = b
		default:
			s.Screensaver = b
		}
		return true
	}
	return false
}

// Reset restores k to its default.
func (s *Settings) Reset(k SettingKey) {
	d := DefaultSettings()
	s.Set(k, d.Get(k))
}

// AppendJSON appends the nested document GET /settings answers:
// {"devices":{"force_scale":1},"system":{"serial_enable":true},
// "features":{"grip_hook":{"enabled":false},"screensaver":{"enabled":false}}}.
func (s Settings) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"devices":{"force_scale":`...)
	dst = AppendFloat(dst, s.ForceScale)
	dst = append(dst, `},"system":{"serial_enable":`...)
	dst = appendBool(dst, s.SerialEnable)
	dst = append(dst, `},"features":{"grip_hook":{"enabled":`...)
	dst = appendBool(dst, s.GripHook)
	dst = append(dst, `},"screensaver":{"enabled":`...)
	dst = appendBool(dst, s.Screensaver)
	return append(dst, `}}}`...)
}

// MarshalJSON is AppendJSON.
func (s Settings) MarshalJSON() ([]byte, error) { return s.AppendJSON(nil), nil }

// UnmarshalJSON decodes the nested document, validating every value.
// Missing settings take their defaults; unknown ones are ignored.
func (s *Settings) UnmarshalJSON(data []byte) error {
	out := DefaultSettings()
	var doc Doc
	root, e := parseObject(&doc, data, `{"devices": {"force_scale": 1}, ...}`)
	if e != nil {
		return e
	}
	for k := SettingForceScale; k.valid(); k++ {
		v := root
		for _, part := range strings.Split(k.Path(), "/") {
			v = v.Member(part)
		}
		if !v.Exists() {
			continue
		}
		c := rootPath(strings.ReplaceAll(k.Path(), "/", "."))
		val, err := decodeSettingValue(k, v, &c, warnings{})
		if err != nil {
			return err
		}
		out.Set(k, val)
	}
	*s = out
	return nil
}

// StoredSettings decodes settings.json as Settings does, and lists in
// Unknown the members this build does not know (a newer build's setting
// after a downgrade, a misspelt name), in the groups it knows too
// (features/haptic_boost is haptic_boost In features), as the file has
// them, for the store to write back.
type StoredSettings struct {
	Settings Settings
	Unknown  []UnknownMember
}

// UnmarshalJSON decodes the stored settings, validating every value as
// Settings does.
func (s *StoredSettings) UnmarshalJSON(data []byte) error {
	var set Settings
	if err := set.UnmarshalJSON(data); err != nil {
		return err
	}
	unknown, err := UnknownMembersIn(data, settingsKnown())
	if err != nil {
		return err
	}
	*s = StoredSettings{Settings: set, Unknown: unknown}
	return nil
}

// settingsKnown is the members settings.json has that this build reads,
// by the settings' paths: every group a path goes through, and each
// setting's own member, read whole.
func settingsKnown() KnownMembers {
	root := KnownMembers{}
	for k := SettingForceScale; k.valid(); k++ {
		at := root
		parts := strings.Split(k.Path(), "/")
		for i, part := range parts {
			if i == len(parts)-1 {
				at[part] = nil
				break
			}
			if at[part] == nil {
				at[part] = KnownMembers{}
			}
			at = at[part]
		}
	}
	return root
}
