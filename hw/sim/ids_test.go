package sim

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw"
)

func TestIDsAreStableAndDistinct(t *testing.T) {
	armRe := regexp.MustCompile(`^[0-9A-F]{4}$`)
	uuidRe := regexp.MustCompile(`^[0-9A-F]{12}5[0-9A-F]{3}[89AB][0-9A-F]{15}$`)
	arms := make(map[string]int, idSpan)
	grips := make(map[string]int, idSpan)
	for i := 0; i < idSpan; i++ {
		a, g := ArmID(i), GripID(i)
		if !armRe.MatchString(a) || a == "0000" {
			t.Fatalf("ArmID(%d) = %q, want 4 uppercase hex digits, not 0000", i, a)
		}
		if n, err := strconv.Atoi(g); err != nil || n <= 0 || n > 65535 {
			t.Fatalf("GripID(%d) = %q, want a decimal in 1..65535", i, g)
		}
		if j, dup := arms[a]; dup {
			t.Fatalf("ArmID(%d) = ArmID(%d) = %s", i, j, a)
		}
		if j, dup := grips[g]; dup {
			t.Fatalf("GripID(%d) = GripID(%d) = %s", i, j, g)
		}
		arms[a], grips[g] = i, i
	}
	for _, i := range []int{0, 1, 999, -1} {
		if ArmID(i) != ArmID(i) || GripID(i) != GripID(i) || ArmUUID(i) != ArmUUID(i) {
			t.Errorf("index %d: ids differ between calls", i)
		}
		for _, u := range []string{ArmUUID(i), GripUUID(i)} {
			if !uuidRe.MatchString(u) {
				t.Errorf("index %d: uuid %q is not 32 upper-case hex digits of a version 5 UUID", i, u)
			}
		}
		if ArmUUID(i) == GripUUID(i) || ArmUUID(i) == ArmUUID(i+1) {
			t.Errorf("index %d: uuids collide", i)
		}
	}
	// A restart builds the devices again from the same flags.
	if NewArm(ArmOptions{Index: 7}).Info() != NewArm(ArmOptions{Index: 7, Seed: 9, Motion: MotionCircle}).Info() {
		t.Error("arm identity depends on more than the index")
	}
	if NewGrip(GripOptions{Index: 7}).Info() != NewGrip(GripOptions{Index: 7, Seed: 9}).Info() {
		t.Error("grip identity depends on more than the index")
	}
}

// Every family's simulated devices, and emulated ones, have identities in
// real forms (CLIENTS.md 2.6: uuid 2D35F80DD9005F599B68F49944CB04BA,
// device_id 04BA, major_version 7): the uuid is 32 upper-case hex digits
// whose low 16 bits are the device id, and the versions are the vendor's.
// A simulated uuid was a dashed lower-case UUID (986f62c1-…-f15b3fb73480
// for device CBBD), and its versions 0.0.
func TestIdentitiesTakeRealForms(t *testing.T) {
	uuidRe := regexp.MustCompile(`^[0-9A-F]{32}$`)
	for _, spec := range Families() {
		t.Run(spec.Name, func(t *testing.T) {
			check := func(what, id, uuid string) {
				t.Helper()
				if !uuidRe.MatchString(uuid) {
					t.Fatalf("%s: uuid %q is not 32 upper-case hex digits", what, uuid)
				}
				low := uuid[28:]
				if spec.Kind == hw.KindGrip {
					n, _ := strconv.ParseUint(id, 10, 16)
					id = fmt.Sprintf("%04X", n)
				}
				if low != id {
					t.Fatalf("%s: uuid %s ends in %s, not its id %s", what, uuid, low, id)
				}
			}
			for _, i := range []int{0, 1, 7, FamilyIndexSpan - 1} {
				info := NewDevice(spec.Family, i, ArmOptions{}).Info()
				check(fmt.Sprintf("simulated %d", i), info.ID, info.UUID)
				if info.FirmwareVersion != 7 || info.HardwareVersion != 4 {
					t.Fatalf("simulated %d: version %d.%d, want the vendor's 7.4", i, info.FirmwareVersion, info.HardwareVersion)
				}
				id, u := EmulatedIdentity(spec.Family, min(i, EmulatedIndexSpan-1))
				emuID := fmt.Sprintf("%04X", id)
				if spec.Kind == hw.KindGrip {
					emuID = strconv.Itoa(int(id))
				}
				check(fmt.Sprintf("emulated %d", i), emuID, hw.FormatUUID(u))
			}
		})
	}
}

// A state directory written before the current form names devices by
// their old UUIDs (device-ids.json, a gateway's ids, config owners): each
// reads as its device reports it now, so the device keeps its id and
// config. The old values are what hapticd reported then.
func TestUUIDUpgraderReadsOldForms(t *testing.T) {
	for _, tc := range []struct {
		name     string
		kind     hw.Kind
		old, now string
	}{
		{"simulated inverse3 0 (CBBD)", hw.KindArm, "986f62c1-1e80-5bd4-a1f5-f15b3fb73480", NewDevice(FamilyInverse3, 0, ArmOptions{}).Info().UUID},
		{"simulated minverse 7 (AAB4)", hw.KindArm, "0202cf40-bf79-5e07-b44e-baa5acb76ae0", NewDevice(FamilyMinverse, 7, ArmOptions{}).Info().UUID},
		{"simulated inverse3x 0 (4387)", hw.KindArm, "288fcf51-fba7-5da6-93f9-83f01e7aa8ad", NewDevice(FamilyInverse3x, 0, ArmOptions{}).Info().UUID},
		{"simulated verse_grip 7 (13303)", hw.KindGrip, "ec816682-4435-5464-9522-a787abb502f8", NewDevice(FamilyVerseGrip, 7, ArmOptions{}).Info().UUID},
		{"simulated wireless grip 0 (32585)", hw.KindGrip, "1607bcf2-687f-543c-9185-f0c879d36d17", NewDevice(FamilyWirelessVerseGrip, 0, ArmOptions{}).Info().UUID},
		{"emulated arm 3 (1D85)", hw.KindArm, "09a46992-ea5e-5f69-b6a1-3bb7286759ca", emulatedUUID(FamilyInverse3, 3)},
		{"emulated grip 3 (25624)", hw.KindGrip, "206d72fc-906d-5876-a022-b742146840ce", emulatedUUID(FamilyWirelessVerseGrip, 3)},
		{"a real arm: the same bytes", hw.KindArm, "2d35f80d-d900-5f59-9b68-f49944cb04ba", "2D35F80DD9005F599B68F49944CB04BA"},
		{"the current form: as it is", hw.KindArm, "2D35F80DD9005F599B68F49944CB04BA", "2D35F80DD9005F599B68F49944CB04BA"},
		{"no UUID form: as it is", hw.KindGrip, "grip-7-1152", "grip-7-1152"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var u UUIDUpgrader
			if got := u.UUID(tc.kind, tc.old); got != tc.now {
				t.Fatalf("%s reads as %s, want %s", tc.old, got, tc.now)
			}
			seen := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			m := hw.IDMemory{}
			m.Set(tc.kind, tc.old, hw.RememberedID{ID: "1234", Seen: seen})
			u.Memory(m)
			if r, ok := m[tc.kind][tc.now]; !ok || r.ID != "1234" || !r.Seen.Equal(seen) || len(m[tc.kind]) != 1 {
				t.Fatalf("remembered ids %v, want %s's record under %s alone", m, tc.old, tc.now)
			}
		})
	}
}

func emulatedUUID(f Family, index int) string {
	_, u := EmulatedIdentity(f, index)
	return hw.FormatUUID(u)
}

func TestMotionParse(t *testing.T) {
	tests := []struct {
		in      string
		want    Motion
		wantErr bool
	}{
		{"none", MotionNone, false},
		{"", MotionNone, false},
		{"circle", MotionCircle, false},
		{"random", MotionRandom, false},
		{"Circle", MotionNone, true},
		{"spiral", MotionNone, true},
	}
	for _, tt := range tests {
		var m Motion
		err := m.Set(tt.in)
		if (err != nil) != tt.wantErr || m != tt.want {
			t.Errorf("Set(%q) = %v, %v; want %v, error %v", tt.in, m, err, tt.want, tt.wantErr)
		}
		if err == nil && tt.in != "" && m.String() != tt.in {
			t.Errorf("%v.String() = %q, want %q", m, m.String(), tt.in)
		}
	}
	if s := Motion(9).String(); s != "motion(9)" {
		t.Errorf("unknown motion prints %q", s)
	}
}
