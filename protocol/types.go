package protocol

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/hapticd/hapticd/protocol/space"
)

// Wire value types, shared with protocol/space so that both packages speak
// the same vectors.
type (
	Vec3      = space.Vec3
	Quat      = space.Quat
	Angles3   = space.Angles3
	Transform = space.Transform
)

// DeviceType is a device family as the wire names it (PROTOCOL 1.3).
type DeviceType uint8

const (
	TypeArm  DeviceType = iota + 1 // "arm3": a 3-DOF force-feedback arm
	TypeGrip                       // "grip": a handheld grip
)

// typeKeys is indexed by DeviceType; never written.
var typeKeys = [...]string{TypeArm: "arm3", TypeGrip: "grip"}

// Key is the type's own wire name, used in messages, frames and HTTP paths.
func (t DeviceType) Key() string {
	if int(t) < len(typeKeys) {
		return typeKeys[t]
	}
	return ""
}

func (t DeviceType) String() string {
	if k := t.Key(); k != "" {
		return k
	}
	return fmt.Sprintf("DeviceType(%d)", uint8(t))
}

// deviceTypes lists the types in wire order; never written.
var deviceTypes = [...]DeviceType{TypeArm, TypeGrip}

// TypeTable resolves device-type keys, including the aliases given with
// --type-alias. It is immutable after NewTypeTable and safe for concurrent
// use. A nil *TypeTable behaves as a table without aliases.
type TypeTable struct {
	resolve map[string]typeKey             // every key and alias
	keys    [len(deviceTypes) + 1][]string // indexed by DeviceType
}

// typeKey is a resolved key: its type and the interned key string.
type typeKey struct {
	dt  DeviceType
	key string
}

// noAliases is the table a nil *TypeTable stands for; never written.
// NewTypeTable cannot fail without aliases.
var noAliases, _ = NewTypeTable(nil)

// orDefault is t, or noAliases when t is nil.
func (t *TypeTable) orDefault() *TypeTable {
	if t == nil {
		return noAliases
	}
	return t
}

// ParseTypeAliases parses the --type-alias flag: comma-separated
// alias=type pairs ("inverse3=arm3,verse_grip=grip"). An empty flag gives an
// empty map. Targets are checked by NewTypeTable.
func ParseTypeAliases(flag string) (map[string]string, error) {
	out := map[string]string{}
	flag = strings.TrimSpace(flag)
	if flag == "" {
		return out, nil
	}
	for _, pair := range strings.Split(flag, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		alias, target, ok := strings.Cut(pair, "=")
		alias, target = strings.TrimSpace(alias), strings.TrimSpace(target)
		if !ok || alias == "" || target == "" {
			return nil, fmt.Errorf("protocol: type alias %q is not alias=type: write e.g. inverse3=arm3", pair)
		}
		if prev, dup := out[alias]; dup && prev != target {
			return nil, fmt.Errorf("protocol: type alias %q is given twice (%s and %s): keep one", alias, prev, target)
		}
		out[alias] = target
	}
	return out, nil
}

// NewTypeTable builds a table from alias → type key. An alias must name
// arm3 or grip, must not shadow a type's own key or "session", and must be a
// plain key (letters, digits, '_', '-', '.').
func NewTypeTable(aliases map[string]string) (*TypeTable, error) {
	t := &TypeTable{resolve: map[string]typeKey{}}
	for _, dt := range deviceTypes {
		t.resolve[dt.Key()] = typeKey{dt, dt.Key()}
		t.keys[dt] = []string{dt.Key()}
	}
	names := make([]string, 0, len(aliases))
	for a := range aliases {
		names = append(names, a)
	}
	sort.Strings(names)
	var errs []error
	for _, alias := range names {
		target := aliases[alias]
		dt, ok := baseType(target)
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("protocol: type alias %s=%s: target must be arm3 or grip", alias, target))
		case alias == "session":
			errs = append(errs, fmt.Errorf("protocol: type alias %q would shadow the session part of messages: pick another name", alias))
		case !validAliasName(alias):
			errs = append(errs, fmt.Errorf("protocol: type alias %q: use letters, digits, '_', '-' or '.'", alias))
		default:
			if _, shadow := t.resolve[alias]; shadow {
				errs = append(errs, fmt.Errorf("protocol: type alias %q would shadow a device type: pick another name", alias))
				continue
			}
			t.resolve[alias] = typeKey{dt, alias}
			t.keys[dt] = append(t.keys[dt], alias)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return t, nil
}

func baseType(key string) (DeviceType, bool) {
	for _, dt := range deviceTypes {
		if dt.Key() == key {
			return dt, true
		}
	}
	return 0, false
}

func validAliasName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// Resolve maps a type key or alias to its device type.
func (t *TypeTable) Resolve(key string) (DeviceType, bool) {
	r, ok := t.orDefault().resolve[key]
	return r.dt, ok
}

// Lookup is Resolve for a key held in bytes (as a decoder sees it); it also
// returns the interned key string, so that decoders do not allocate one per
// message.
func (t *TypeTable) Lookup(key []byte) (DeviceType, string, bool) {
	r, ok := t.orDefault().resolve[string(key)] // no allocation: map index by converted bytes
	return r.dt, r.key, ok
}

// Keys lists the keys of dt: its own name first, then its aliases sorted.
// The slice is shared: do not modify it.
func (t *TypeTable) Keys(dt DeviceType) []string {
	if int(dt) >= len(typeKeys) {
		return nil
	}
	return t.orDefault().keys[dt]
}

// Types lists the device types in wire order (a copy).
func (t *TypeTable) Types() []DeviceType {
	out := make([]DeviceType, len(deviceTypes))
	copy(out, deviceTypes[:])
	return out
}
