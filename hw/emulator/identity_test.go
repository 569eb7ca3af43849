package emulator_test

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"testing"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/emulator"
	"github.com/hapticd/hapticd/hw/sim"
)

// Emulated devices' ids differ from every simulated device's, of every
// family, and from every other emulated family's, so `--emulate` runs
// beside any --sim fleet with its own ids: the 10th emulated arm had the id
// of the 167th simulated Inverse3. Each UUID's low 16 bits are its id, as
// a real Inverse3's are.
func TestEmulatedIDsNeverSimulatedOnes(t *testing.T) {
	const emulated = 256
	for _, kind := range []hw.Kind{hw.KindArm, hw.KindGrip} {
		simulated := map[string]string{}
		for _, spec := range sim.Families() {
			if spec.Kind != kind {
				continue
			}
			for i := range sim.FamilyIndexSpan {
				info := sim.NewDevice(spec.Family, i, sim.ArmOptions{}).Info()
				simulated[info.ID] = fmt.Sprintf("%s %d", spec.Name, i)
			}
		}
		seen := map[uint16]string{}
		for _, spec := range sim.Families() {
			if spec.Kind != kind {
				continue
			}
			indices := []int{emulator.EmulatedIndexSpan - 1}
			for i := range emulated {
				indices = append(indices, i)
			}
			for _, i := range indices {
				id, uuid := emulator.Identity(spec.Family, i)
				s := strconv.Itoa(int(id))
				if kind == hw.KindArm {
					s = fmt.Sprintf("%04X", id)
				}
				me := fmt.Sprintf("emulated %s %d", spec.Name, i)
				if who, ok := simulated[s]; ok {
					t.Fatalf("%s has id %s, as simulated %s does", me, s, who)
				}
				if who, dup := seen[id]; dup || id == 0 {
					t.Fatalf("%s has id %s, as %s does (or zero)", me, s, who)
				}
				seen[id] = me
				if low := binary.BigEndian.Uint16(uuid[14:]); low != id {
					t.Errorf("%s: UUID %X ends in %04X, not its id %04X", me, uuid, low, id)
				}
			}
		}
	}
}
