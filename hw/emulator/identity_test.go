package emulator_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/emulator"
	"github.com/hapticd/hapticd/hw/sim"
)

// Emulated devices' ids differ from every simulated device's, of every
// family, so `--emulate-arms N` runs beside any --sim fleet with its own
// ids: the 10th emulated arm had the id of the 167th simulated Inverse3.
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
		seen := map[uint16]int{}
		for i := range emulated {
			id, _ := emulator.Identity(kind, i)
			s := strconv.Itoa(int(id))
			if kind == hw.KindArm {
				s = fmt.Sprintf("%04X", id)
			}
			if who, ok := simulated[s]; ok {
				t.Fatalf("emulated %s %d has id %s, as simulated %s does", kind, i, s, who)
			}
			if j, dup := seen[id]; dup || id == 0 {
				t.Fatalf("emulated %s %d has id %s, as emulated %s %d does (or zero)", kind, i, s, kind, j)
			}
			seen[id] = i
		}
	}
}
