package actors

import (
	"os"
	"testing"
	"time"

	"github.com/hapticd/hapticd/protocol"
)

// hidesInPlace is the state directory's store without InPlace: a POST of
// the value in force is answered at once, as before confirmThen.
type hidesInPlace struct{ Store }

// The cost of confirming a POST of the value in force on disk (a stat, off
// the actor): the time of such POSTs (device-global and the settings'),
// with and without the check, in one run, alternating rounds. Measured
// only when HAPTICD_MEASURE is set: it is a figure for the docs, not a
// check.
func TestUnchangedPostCost(t *testing.T) {
	if os.Getenv("HAPTICD_MEASURE") == "" {
		t.Skip("set HAPTICD_MEASURE=1 to measure")
	}
	const n, rounds = 2000, 5
	measure := func(hide bool) (device, settings time.Duration) {
		o := Options{StateDir: t.TempDir()}
		if hide {
			o.WrapStore = func(s Store) Store { return hidesInPlace{s} }
		}
		svc := startWith(t, o)
		defer shutdown(t, svc)
		d := addArm(t, svc, simArm(0))
		e := protocol.ForceClamp{MaxForceN: 7}
		if _, err := svc.SetEntry(d, 0, e); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.SetSetting(protocol.SettingForceScale, 0.5); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		for i := 0; i < n; i++ {
			if _, err := svc.SetEntry(d, 0, e); err != nil {
				t.Fatal(err)
			}
		}
		device = time.Since(start) / n
		start = time.Now()
		for i := 0; i < n; i++ {
			if _, err := svc.SetSetting(protocol.SettingForceScale, 0.5); err != nil {
				t.Fatal(err)
			}
		}
		return device, time.Since(start) / n
	}
	var with, without [2]time.Duration
	for r := 0; r < rounds; r++ {
		d0, s0 := measure(true)
		d1, s1 := measure(false)
		without[0], without[1] = without[0]+d0, without[1]+s0
		with[0], with[1] = with[0]+d1, with[1]+s1
	}
	for i, what := range []string{"device-global POST", "settings POST"} {
		t.Logf("%s of the value in force: %v without the check, %v with it (x%.2f)", what, without[i]/rounds, with[i]/rounds, float64(with[i])/float64(without[i]))
	}
}
