package transport

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/hapticd/hapticd/hw/sim"
)

// Every family the simulator makes is named alike everywhere a user looks:
// frames and GET /devices (array, config.type, device_type), events,
// selectors, /stats and /metrics. A Minverse and an Inverse3x sit in the
// inverse3 array, told apart by config.type; a wired grip is verse_grip and
// a wireless one wireless_verse_grip.
func TestEveryFamilyNamedAlikeEverywhere(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1, grips: 1, wiredGrips: 1, haplyNames: true,
		armFamilies: sim.Fleet{{Family: sim.FamilyMinverse, Count: 1}, {Family: sim.FamilyInverse3x, Count: 1}}})
	minverse, inverse3x := ts.otherArms[sim.FamilyMinverse][0], ts.otherArms[sim.FamilyInverse3x][0]
	type device struct {
		array, configType string
		deviceType        float64
	}
	want := map[string]device{
		ts.armIDs[0]:   {"inverse3", "inverse3", sim.ModelInverse3},
		minverse:       {"inverse3", "minverse", sim.ModelMinverse},
		inverse3x:      {"inverse3", "inverse3x", sim.ModelInverse3x},
		ts.wiredIDs[0]: {"verse_grip", "verse_grip", sim.ModelVerseGrip},
		ts.gripIDs[0]:  {"wireless_verse_grip", "wireless_verse_grip", sim.ModelWirelessVerseGrip},
	}
	ev := ts.dial(t, ts.eventsWS+"?since=0")
	connected := map[string]bool{}
	waitEvent(t, ev, "device-connected", func(e map[string]any) bool {
		id, _ := path(e, "data", "device_id").(string)
		if d, ok := want[id]; ok && path(e, "data", "device_type") == d.array {
			connected[id] = true
		}
		return len(connected) == len(want)
	})
	digest := regexp.MustCompile(`^[0-9A-F]{32}$`)
	c := ts.dial(t, ts.wsURL())
	for what, f := range map[string]map[string]any{"inventory frame": c.expect(), "GET /devices": ts.do(http.MethodGet, ts.base+"/devices", "").env} {
		seen := 0
		for _, array := range []string{"inverse3", "verse_grip", "wireless_verse_grip"} {
			list, _ := f[array].([]any)
			for i := range list {
				id, _ := path(list[i], "device_id").(string)
				d, ok := want[id]
				if !ok || d.array != array {
					t.Fatalf("%s: %s under %s, want %+v", what, id, array, d)
				}
				seen++
				if path(list[i], "config", "type") != d.configType || path(list[i], "config", "device_info", "device_type") != d.deviceType {
					t.Fatalf("%s: %s's config %v, want type %s and device_type %v", what, id, path(list[i], "config"), d.configType, d.deviceType)
				}
				_, hasError := path(list[i], "status").(map[string]any)["error"]
				if hasError != (array == "verse_grip") {
					t.Fatalf("%s: %s's status %v: only a wired grip reports error", what, id, path(list[i], "status"))
				}
				if array != "inverse3" {
					continue
				}
				fw, _ := path(list[i], "config", "extended_firmware_version").(string)
				if path(list[i], "config", "streaming_mode") != "USB" || !digest.MatchString(fw) || path(list[i], "state", "calibration_state") != 2.0 {
					t.Fatalf("%s: %s lacks the 3.5 fields: %v", what, id, list[i])
				}
			}
		}
		if seen != len(want) {
			t.Fatalf("%s lists %d devices, want %d", what, seen, len(want))
		}
	}
	// Selectors by array name and index: verse_grip counts wired grips
	// only, wireless_verse_grip wireless ones, inverse3 every arm.
	for _, s := range []struct{ url, body, id, name string }{
		{"/verse_grip/0/config/preset?session=:-1", `{"preset":"defaults"}`, ts.wiredIDs[0], "verse_grip"},
		{"/wireless_verse_grip/0/config/preset?session=:-1", `{"preset":"defaults"}`, ts.gripIDs[0], "wireless_verse_grip"},
		{"/inverse3/" + minverse + "/config/handedness", `"left"`, minverse, "inverse3"},
	} {
		r := ts.do(http.MethodPost, ts.base+s.url, s.body)
		if r.status != http.StatusOK || path(r.env, "applied_to", 0, "device_id") != s.id || path(r.env, "applied_to", 0, "device_type") != s.name {
			t.Fatalf("POST %s: %v, want it applied to %s %s", s.url, r, s.name, s.id)
		}
	}
	stats := ts.do(http.MethodGet, ts.base+"/stats", "")
	metrics := string(ts.do(http.MethodGet, ts.base+"/metrics", "").body)
	for id, d := range want {
		named := false
		for i := 0; path(stats.env, "data", "devices", i) != nil; i++ {
			named = named || path(stats.env, "data", "devices", i, "device_id") == id && path(stats.env, "data", "devices", i, "device_type") == d.array
		}
		if !named {
			t.Fatalf("/stats does not name %s %s", d.array, id)
		}
		if !strings.Contains(metrics, fmt.Sprintf(`device_type=%q`, d.array)) || !strings.Contains(metrics, fmt.Sprintf(`device_id=%q`, id)) {
			t.Fatalf("/metrics does not label %s %s", d.array, id)
		}
	}
}
