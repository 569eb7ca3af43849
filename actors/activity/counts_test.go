package activity_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hapticd/hapticd/actors/activity"
	"github.com/hapticd/hapticd/protocol/event"
)

func TestCountsByName(t *testing.T) {
	a := start(t, activity.Options{})
	a.Publish(event.DeviceConnected("inverse", "arm3", "049D"))
	a.Publish(event.DeviceConnected("verse_grip", "grip", "1"))
	a.Publish(event.ControlLeaseExpired("arm3", "049D", 3, 0))
	c := a.Counts()
	if c[event.NameDeviceConnected] != 2 || c[event.NameControlLeaseExpired] != 1 {
		t.Errorf("counts %v: want 2 device-connected and 1 control-lease-expired", c)
	}
	if n, ok := c[event.NameDeviceBusy]; !ok || n != 0 {
		t.Errorf("device-busy: %d, listed %v; every name of the table is listed, unused at 0", n, ok)
	}
}

// An unused entry of the migration report has no first or last use, so it
// must not claim one at year 1.
func TestUsageOmitsTimesOfUnusedEntries(t *testing.T) {
	a := start(t, activity.Options{})
	u, err := a.Usage()
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(u)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); strings.Contains(s, "0001-01-01") || strings.Contains(s, "first_seen") {
		t.Errorf("report of an unused service: %s", s)
	}
}
