package protocol

import (
	"reflect"
	"strings"
	"testing"
)

// TestSessionConfigEqualComparesEveryField changes one leaf of a
// SessionConfig at a time, following pointers and nested structs by
// reflection, and expects Equal to notice each change. A field added to
// SessionConfig (or to a type inside it) that Equal does not compare makes
// it fail.
func TestSessionConfigEqualComparesEveryField(t *testing.T) {
	base := DefaultSessionConfig()
	base.Basis = &Basis{Permutation: "XZY"}
	base.Damping = Damping{Scalar: ptr(1.0), Vector: &Vec3{X: 1, Y: 2, Z: 3}}

	var leaves []string
	var walk func(path string, get func(*SessionConfig) reflect.Value)
	walk = func(path string, get func(*SessionConfig) reflect.Value) {
		v := get(&base)
		switch v.Kind() {
		case reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				i := i
				walk(path+"."+v.Type().Field(i).Name, func(c *SessionConfig) reflect.Value { return get(c).Field(i) })
			}
			return
		case reflect.Pointer:
			// Nil on one side only.
			other := cloneSessionConfig(base)
			get(&other).Set(reflect.Zero(v.Type()))
			if base.Equal(&other) || other.Equal(&base) {
				t.Errorf("Equal ignores %s being nil", path)
			}
			walk(path+".*", func(c *SessionConfig) reflect.Value { return get(c).Elem() })
			return
		}
		leaves = append(leaves, path)
		other := cloneSessionConfig(base)
		f := get(&other)
		switch f.Kind() {
		case reflect.String:
			f.SetString(f.String() + "x")
		case reflect.Float32, reflect.Float64:
			f.SetFloat(f.Float() + 0.5)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			f.SetInt(f.Int() + 1)
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			f.SetUint(f.Uint() + 1)
		case reflect.Bool:
			f.SetBool(!f.Bool())
		case reflect.Array:
			// A fixed array of numbers (an SDF parameter pair): change its
			// first element.
			e := f.Index(0)
			e.SetFloat(e.Float() + 0.5)
		default:
			t.Fatalf("%s: kind %v; teach this test to change it", path, f.Kind())
		}
		if base.Equal(&other) || other.Equal(&base) {
			t.Errorf("Equal ignores a change of %s", path)
		}
		checkTakeChanged(t, path, &base, &other)
	}
	walk("SessionConfig", func(c *SessionConfig) reflect.Value { return reflect.ValueOf(c).Elem() })
	if len(leaves) < 10 {
		t.Fatalf("walked only %v", leaves)
	}

	// Values, not pointers.
	same := cloneSessionConfig(base)
	if same.Basis == base.Basis || same.Damping.Scalar == base.Damping.Scalar {
		t.Fatal("cloneSessionConfig shares pointers")
	}
	if !base.Equal(&same) || !same.Equal(&base) {
		t.Fatal("equal values behind different pointers compare unequal")
	}
}

// cloneSessionConfig copies c, pointees included, so that changing the copy
// leaves c alone.
func cloneSessionConfig(c SessionConfig) SessionConfig {
	out := c
	if c.Basis != nil {
		b := *c.Basis
		out.Basis = &b
	}
	out.Damping = c.Damping.Clone()
	return out
}

// Unchanged must agree with applying the entries with Set and comparing,
// and must not allocate: sessions call it per device per tick.
func TestSessionConfigUnchangedAgreesWithSet(t *testing.T) {
	left := Basis{Permutation: "XZY"}
	base := DefaultSessionConfig()
	base.Set(left)
	base.Set(DampingScalar(2))
	mount := Mount{Transform: Transform{Position: Vec3{X: 1}, Rotation: Quat{W: 1}, Scale: Vec3{X: 1, Y: 1, Z: 1}}}
	tests := []struct {
		name    string
		entries []Entry
	}{
		{"nothing", nil},
		{"same damping", []Entry{DampingScalar(2)}},
		{"other damping", []Entry{DampingScalar(3)}},
		{"vector damping", []Entry{Damping{Vector: &Vec3{X: 2}}}},
		{"same basis", []Entry{Basis{Permutation: "XZY"}}},
		{"other basis", []Entry{Basis{Permutation: "YXZ"}}},
		{"same preset", []Entry{Preset{Preset: base.Preset}}},
		{"other preset", []Entry{Preset{Preset: "arm_front"}}},
		{"a mount", []Entry{mount}},
		{"default force gate", []Entry{base.ForceGate}},
		{"other force gate", []Entry{ForceGate{Gain: 0.5}}},
		{"change then change back", []Entry{DampingScalar(3), DampingScalar(2)}},
		{"device-global", []Entry{Handedness("left")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := base
			set := true
			for _, e := range tt.entries {
				set = next.Set(e) && set
			}
			want := set && next.Equal(&base)
			if got := base.Unchanged(tt.entries); got != want {
				t.Errorf("Unchanged = %v, Set and Equal say %v", got, want)
			}
			if n := testing.AllocsPerRun(50, func() { base.Unchanged(tt.entries) }); n != 0 {
				t.Errorf("Unchanged allocates %v times", n)
			}
		})
	}
}

// checkTakeChanged merges the change from before to after (one leaf of
// path) onto a document another writer changed in every entry: the
// document then has after's whole entry where the leaf is (the placement,
// preset and mount, is one entry) and its own value of every other entry.
func checkTakeChanged(t *testing.T, path string, before, after *SessionConfig) {
	t.Helper()
	doc := DefaultSessionConfig()
	doc.Set(Preset{Preset: "led_front"})
	doc.Set(Basis{Permutation: "ZYX"})
	doc.Set(DampingScalar(9))
	doc.Set(ForceGate{Gain: 0.9})
	doc.Navigation.Bubble.MaxSpeedMps += 7
	got := doc
	got.TakeChanged(before, after)
	field := strings.SplitN(path, ".", 3)[1]
	entry := map[string]bool{field: true}
	if field == "Preset" || field == "Mount" {
		entry = map[string]bool{"Preset": true, "Mount": true}
	}
	g, a, d := reflect.ValueOf(got), reflect.ValueOf(*after), reflect.ValueOf(doc)
	for i := 0; i < g.NumField(); i++ {
		name := g.Type().Field(i).Name
		want := d.Field(i)
		if entry[name] {
			want = a.Field(i)
		}
		if !reflect.DeepEqual(g.Field(i).Interface(), want.Interface()) {
			t.Errorf("a change of %s merged onto another document: %s is %+v, want %+v", path, name, g.Field(i).Interface(), want.Interface())
		}
	}
}
