package transport

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/gorilla/websocket"

	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/sim"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/event"
)

// findChromium returns the browser the dashboard test drives, or "".
func findChromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// chromiumOrSkip is the browser a dashboard test drives; it skips the test
// in -short mode or without one.
func chromiumOrSkip(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("drives a browser")
	}
	exe := findChromium()
	if exe == "" {
		t.Skip("chromium not found (Debian package chromium; .ci/run installs it): the dashboard is not tested in a browser")
	}
	return exe
}

// browser starts a headless Chromium with a fresh profile. foreign.test
// resolves to 127.0.0.1 inside it, so a page can come from a foreign
// origin that still reaches the service.
func browser(t *testing.T, exe string) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1100),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("host-resolver-rules", "MAP foreign.test 127.0.0.1"),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start %s: %v", exe, err)
	}
	return ctx
}

// screenshotDir is where the dashboard test leaves its screenshots:
// $HAPTICD_SCREENSHOTS, or a new directory under the system's temp dir. It
// outlives the test on purpose, so a person can look at them.
func screenshotDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("HAPTICD_SCREENSHOTS")
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "hapticd-dashboard-"); err != nil {
			t.Fatal(err)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("dashboard screenshots in %s", dir)
	return dir
}

func shoot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// pageWithin is how long a test waits for the page to show something: a
// browser on a loaded machine is slow to start and to render.
const pageWithin = 20 * time.Second

// pageHolds is a check for hwtest.EventuallyNil: it evaluates a JavaScript
// condition in the page, and says what the page shows while it is false.
func pageHolds(ctx context.Context, js string) func() error {
	return func() error {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
		if err != nil {
			return err
		}
		if !ok {
			text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText.slice(0, 2000)`))
			return fmt.Errorf("the page shows:\n%s", text)
		}
		return nil
	}
}

// TestDashboardInChromium opens /ui/ in a real browser against a real
// service whose simulated arms move, and uses it as a person would.
func TestDashboardInChromium(t *testing.T) {
	exe := chromiumOrSkip(t)
	ts := startService(t, serviceConfig{arms: 2, grips: 1, motion: sim.MotionCircle})
	shots := screenshotDir(t)
	ctx := browser(t, exe)
	arm := "arm3/" + ts.armIDs[0]

	// The page lists every device.
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.base+"/ui/")); err != nil {
		t.Fatal(err)
	}
	for _, id := range append([]string{"arm3/" + ts.armIDs[0], "arm3/" + ts.armIDs[1]}, "grip/"+ts.gripIDs[0]) {
		hwtest.EventuallyNil(t, pageWithin, "device "+id+" listed", pageHolds(ctx, fmt.Sprintf(`!!document.querySelector('[data-device=%q]')`, id)))
	}
	// Under the reference's names too, a card names the product.
	cardTitled(t, ctx, arm, "Inverse3 "+ts.armIDs[0])
	cardTitled(t, ctx, "grip/"+ts.gripIDs[0], "Wireless VerseGrip "+ts.gripIDs[0])

	// The position trace moves: the readout changes and the trace spans
	// more than a tenth of a millimetre.
	first, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(fmt.Sprintf(`[data-device=%q] .v-position`, arm))))
	if err != nil {
		t.Fatal(err)
	}
	hwtest.EventuallyNil(t, pageWithin, "position readout changes", pageHolds(ctx, fmt.Sprintf(`document.querySelector('[data-device=%q] .v-position').textContent !== %q`, arm, first)))
	hwtest.EventuallyNil(t, pageWithin, "position trace moves", pageHolds(ctx, fmt.Sprintf(`(() => { const d = dashboard.devices.get(%q); return d.x.length > 20 && Math.max(...d.x) - Math.min(...d.x) > 1e-4 })()`, arm)))
	hwtest.EventuallyNil(t, pageWithin, "loop period p99 shown", pageHolds(ctx, fmt.Sprintf(`/ms/.test(document.querySelector('[data-device=%q] .v-loop').textContent)`, arm)))

	// A session appears with its API format and the arm it controls, and
	// its session-started event in the stream.
	c := ts.dial(t, ts.wsURL())
	sid := num(c.expect()["session_id"])
	// The client keeps commanding, as a plugin does, while the page polls.
	force := fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":0.5,"y":0,"z":0.5}}}}]}`, ts.armIDs[0])
	c.roundTrip(force)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if c.conn.WriteMessage(websocket.TextMessage, []byte(force)) != nil {
				return
			}
			if _, _, err := c.conn.ReadMessage(); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	hwtest.EventuallyNil(t, pageWithin, "session listed with its format and device", pageHolds(ctx, fmt.Sprintf(
		`(() => { const r = document.querySelector('#sessions tr[data-session="%d"]'); return !!r && r.textContent.includes("3.x") && r.textContent.includes(%q) })()`, int(sid), ts.armIDs[0])))
	hwtest.EventuallyNil(t, pageWithin, "session-started event shown", pageHolds(ctx, `!!document.querySelector('#events li[data-name="session-started"]')`))
	shoot(t, ctx, shots, "1-devices-sessions-events.png")

	// A config value edited in the page reads back over HTTP.
	setForm := func(session, entry, value string) {
		t.Helper()
		js := fmt.Sprintf(`(() => {
			document.getElementById("cfg-session").value = %q;
			const dev = document.getElementById("cfg-device"); dev.value = %q; dev.dispatchEvent(new Event("change"));
			const e = document.getElementById("cfg-entry"); e.value = %q; e.dispatchEvent(new Event("change"));
			return dev.value === %q && e.value === %q })()`, session, arm, entry, arm, entry)
		hwtest.EventuallyNil(t, pageWithin, "config form set to "+entry, pageHolds(ctx, js))
		// The change handlers read the value in force; wait for that, then
		// type over it.
		hwtest.EventuallyNil(t, pageWithin, "current value read", pageHolds(ctx, `document.getElementById("cfg-result").textContent === "read"`))
		if err := chromedp.Do(ctx,
			chromedp.SetValue(chromedp.ID("cfg-value"), value),
			chromedp.Evaluate[chromedp.Void](`document.getElementById("cfg-result").textContent = ""`),
			chromedp.Click(chromedp.ID("cfg-save")),
		); err != nil {
			t.Fatal(err)
		}
	}
	setForm("", "handedness", `"left"`)
	hwtest.EventuallyNil(t, pageWithin, "save confirmed", pageHolds(ctx, `document.getElementById("cfg-result").textContent.startsWith("saved")`))
	if r := ts.do(http.MethodGet, ts.base+"/"+arm+"/config/handedness", ""); r.status != http.StatusOK || r.data() != "left" {
		t.Fatalf("handedness saved in the page reads back as %v", r)
	}

	// A bad value shows the service's own validation message and changes
	// nothing.
	want := ts.do(http.MethodPost, ts.base+"/"+arm+"/config/handedness", `"sideways"`)
	msg, _ := want.env["error"].(string)
	if want.status != http.StatusBadRequest || msg == "" {
		t.Fatalf("POST sideways over HTTP: %v", want)
	}
	setForm("", "handedness", `"sideways"`)
	hwtest.EventuallyNil(t, pageWithin, "validation message shown", pageHolds(ctx, fmt.Sprintf(`document.getElementById("cfg-result").textContent.includes(%q)`, msg)))
	shoot(t, ctx, shots, "2-config-validation.png")
	if r := ts.do(http.MethodGet, ts.base+"/"+arm+"/config/handedness", ""); r.data() != "left" {
		t.Fatalf("a refused value changed handedness: %v", r)
	}

	// A session-scoped entry edited for the session reads back for it.
	setForm(fmt.Sprintf("#%d", int(sid)), "filters/force_gate", `{"gain": 0.55}`)
	hwtest.EventuallyNil(t, pageWithin, "session entry saved", pageHolds(ctx, `document.getElementById("cfg-result").textContent.startsWith("saved")`))
	r := ts.do(http.MethodGet, fmt.Sprintf("%s/%s/config/filters/force_gate?session=%%23%d", ts.base, arm, int(sid)), "")
	if !jsonEqual(t, r.data(), `{"gain": 0.55}`) {
		t.Fatalf("force gate saved in the page for session %d reads back as %v", int(sid), r)
	}

	// A grip offers only a grip's entries (an arm's answers 404 for it),
	// and an arm all of them again.
	entriesFor := func(dev string) string {
		return fmt.Sprintf(`(() => { const d = document.getElementById("cfg-device"); d.value = %q; d.dispatchEvent(new Event("change"));
			return [...document.getElementById("cfg-entry").options].map((o) => o.value).join(",") })()`, dev)
	}
	hwtest.EventuallyNil(t, pageWithin, "a grip's entries offered", pageHolds(ctx, entriesFor("grip/"+ts.gripIDs[0])+` === "preset,mount,basis"`))
	hwtest.EventuallyNil(t, pageWithin, "an arm's entries offered", pageHolds(ctx, entriesFor(arm)+`.includes("filters/damping")`))

	// Nothing in the page failed on the way.
	errs, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`dashboard.errors`))
	if err != nil || len(errs) > 0 {
		t.Fatalf("the dashboard's script failed: %q %v", errs, err)
	}

	// A page from a foreign origin can neither read the data nor change a
	// setting with a request the browser sends without asking (a "simple"
	// POST needs no CORS preflight: only the guard stops it).
	foreign := foreignPage(t, ts.base)
	if err := chromedp.Do(ctx, chromedp.Navigate(foreign)); err != nil {
		t.Fatal(err)
	}
	hwtest.EventuallyNil(t, pageWithin, "foreign page done", pageHolds(ctx, `window.result !== undefined`))
	result, err := chromedp.Run(ctx, chromedp.Evaluate[string](`window.result`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(result, "blocked") {
		t.Errorf("a foreign page read the devices: %s", result)
	}
	shoot(t, ctx, shots, "3-foreign-origin.png")
	if r := ts.do(http.MethodGet, ts.base+"/"+arm+"/config/handedness", ""); r.data() != "left" {
		t.Fatalf("a foreign page changed handedness: %v", r)
	}

	// DNS rebinding: the dashboard under a foreign host name is refused.
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(ts.base, "http://"))
	if err := chromedp.Do(ctx, chromedp.Navigate("http://foreign.test:"+port+"/ui/")); err != nil {
		t.Fatal(err)
	}
	hwtest.EventuallyNil(t, pageWithin, "rebound dashboard refused", pageHolds(ctx, `document.body.innerText.includes("forbidden_host") && !document.querySelector("#devices")`))
	shoot(t, ctx, shots, "4-rebound-host.png")
}

// cardTitled waits for the card of device key (type/id) to be titled title.
func cardTitled(t *testing.T, ctx context.Context, key, title string) {
	t.Helper()
	hwtest.EventuallyNil(t, pageWithin, key+" titled "+title, pageHolds(ctx, fmt.Sprintf(
		`document.querySelector('[data-device=%q] h3')?.textContent === %q`, key, title)))
}

// foreignPage serves, on another origin (foreign.test), a page that tries
// to read /devices and to post a setting to the service at base.
func foreignPage(t *testing.T, base string) string {
	t.Helper()
	page := fmt.Sprintf(`<!doctype html><title>foreign</title><pre id="out">working…</pre><script>
(async () => {
  await fetch(%[1]q + "/arm3/0/config/handedness", { method: "POST", mode: "no-cors", body: '"right"' }).catch(() => {});
  let result;
  try {
    const r = await fetch(%[1]q + "/devices");
    result = "loaded: " + (await r.text()).slice(0, 80);
  } catch (e) {
    result = "blocked: " + e.message;
  }
  document.getElementById("out").textContent = result;
  window.result = result;
})();
</script>`, base)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(page))
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return "http://foreign.test:" + port + "/"
}

// TestDashboardGripCardInChromium opens /ui/ against a service that writes
// the product names, with a wired and a wireless grip in a hand: each grip's
// card shows what a grip has, every reading with its unit, and traces its
// orientation angles and hall level; the arm's card keeps position and
// force.
func TestDashboardGripCardInChromium(t *testing.T) {
	exe := chromiumOrSkip(t)
	ts := startService(t, serviceConfig{arms: 1, grips: 1, wiredGrips: 1, haplyNames: true, motion: sim.MotionCircle,
		armFamilies: sim.Fleet{{Family: sim.FamilyMinverse, Count: 1}, {Family: sim.FamilyInverse3x, Count: 1}}})
	shots := screenshotDir(t)
	ctx := browser(t, exe)
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.base+"/ui/")); err != nil {
		t.Fatal(err)
	}
	arm := "inverse3/" + ts.armIDs[0]
	// Each card is titled with the product a person knows, though every
	// arm is in the inverse3 array.
	cardTitled(t, ctx, arm, "Inverse3 "+ts.armIDs[0])
	cardTitled(t, ctx, "inverse3/"+ts.otherArms[sim.FamilyMinverse][0], "Minverse "+ts.otherArms[sim.FamilyMinverse][0])
	cardTitled(t, ctx, "inverse3/"+ts.otherArms[sim.FamilyInverse3x][0], "Inverse3x "+ts.otherArms[sim.FamilyInverse3x][0])
	cardTitled(t, ctx, "wireless_verse_grip/"+ts.gripIDs[0], "Wireless VerseGrip "+ts.gripIDs[0])
	cardTitled(t, ctx, "verse_grip/"+ts.wiredIDs[0], "VerseGrip "+ts.wiredIDs[0])
	// The config form offers each device by the same name.
	minverse := "inverse3/" + ts.otherArms[sim.FamilyMinverse][0]
	hwtest.EventuallyNil(t, pageWithin, "the config form names the Minverse", pageHolds(ctx, fmt.Sprintf(
		`document.querySelector('#cfg-device option[value=%q]')?.textContent === %q`, minverse, "Minverse "+ts.otherArms[sim.FamilyMinverse][0])))
	hwtest.EventuallyNil(t, pageWithin, "arm card labelled as an arm", pageHolds(ctx, fmt.Sprintf(
		`(() => { const c = document.querySelector('[data-device=%q]'); return !!c && c.textContent.includes("position (m)") && c.textContent.includes("force (N)") })()`, arm)))
	for _, grip := range []string{"wireless_verse_grip/" + ts.gripIDs[0], "verse_grip/" + ts.wiredIDs[0]} {
		card := fmt.Sprintf(`document.querySelector('[data-device=%q]')`, grip)
		hwtest.EventuallyNil(t, pageWithin, grip+" listed", pageHolds(ctx, "!!"+card))
		labels, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](fmt.Sprintf(`[...%s.querySelectorAll("dt")].map((e) => e.textContent)`, card)))
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"status", "orientation (quaternion w, x, y, z)", "yaw, pitch, roll (°)", "buttons (pressed)", "hall level (0–1)", "battery (%)", "loop p99", "overruns"}
		if strings.Join(labels, "|") != strings.Join(want, "|") {
			t.Fatalf("%s card labels %q, want %q", grip, labels, want)
		}
		hwtest.EventuallyNil(t, pageWithin, grip+" battery in percent", pageHolds(ctx, fmt.Sprintf(`/^\d+ %%$/.test(%s.querySelector(".v-battery").textContent)`, card)))
		hwtest.EventuallyNil(t, pageWithin, grip+" hall level shown", pageHolds(ctx, fmt.Sprintf(`(() => { const v = parseFloat(%s.querySelector(".v-hall").textContent); return v >= 0 && v <= 1 })()`, card)))
		hwtest.EventuallyNil(t, pageWithin, grip+" quaternion shown", pageHolds(ctx, fmt.Sprintf(`%s.querySelector(".v-orientation").textContent.split(", ").length === 4`, card)))
		// The grip rocks and clicks: the trace spans angles and squeeze,
		// and a button shows pressed, then released.
		hwtest.EventuallyNil(t, pageWithin, grip+" trace moves", pageHolds(ctx, fmt.Sprintf(`(() => { const d = dashboard.devices.get(%q);
			const span = (a) => Math.max(...a) - Math.min(...a);
			return d.t.length > 20 && span(d.x) > 1 && span(d.hall) > 0.01 && d.chart && d.chart.series.slice(1).map((s) => s.label).join() === "yaw (°),pitch (°),roll (°),hall level" })()`, grip)))
		hwtest.EventuallyNil(t, pageWithin, grip+" button pressed", pageHolds(ctx, fmt.Sprintf(`%s.querySelector(".v-buttons").textContent !== "none"`, card)))
		hwtest.EventuallyNil(t, pageWithin, grip+" buttons released", pageHolds(ctx, fmt.Sprintf(`%s.querySelector(".v-buttons").textContent === "none"`, card)))
	}
	shoot(t, ctx, shots, "5-grip-cards.png")
	errs, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`dashboard.errors`))
	if err != nil || len(errs) > 0 {
		t.Fatalf("the dashboard's script failed: %q %v", errs, err)
	}
}

// TestDashboardEffectsInChromium: the arm's card lists the effects a
// session declared on it (id, type, force) while they are in force, and
// says none once they are cleared.
func TestDashboardEffectsInChromium(t *testing.T) {
	exe := chromiumOrSkip(t)
	ts := startService(t, serviceConfig{arms: 1})
	shots := screenshotDir(t)
	ctx := browser(t, exe)
	id := ts.armIDs[0]
	arm := "arm3/" + id
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.base+"/ui/")); err != nil {
		t.Fatal(err)
	}
	row := fmt.Sprintf(`document.querySelector('[data-device=%q] .v-effects')`, arm)
	hwtest.EventuallyNil(t, pageWithin, "no effects at first", pageHolds(ctx, row+`.textContent === "none"`))
	c := ts.dial(t, ts.wsURL())
	c.expect()
	c.roundTrip(`{"session":{"configure":{"lease":{"ms":1000}}}}`)
	// The client keeps its effects alive, as an engine does, while the page polls.
	keep := effectsMsg(id, `{"set":[`+springAt("pull", 0.03)+`,{"id":"floor","type":"wall","position":{"x":0,"y":0,"z":-0.05},"normal":{"x":0,"y":0,"z":1},"stiffness":2000}]}`)
	sid := num(c.roundTrip(keep)["session_id"])
	stopKeeping := keepEffectsAlive(c, id)
	hwtest.EventuallyNil(t, pageWithin, "effects listed with type and force, and whose they are", pageHolds(ctx, fmt.Sprintf(`(() => {
		const items = [...%[1]s.querySelectorAll("li")].map((e) => e.textContent);
		const pull = items.find((s) => s.startsWith("pull spring "));
		return items.length === 2 && !!pull && items.some((s) => s.startsWith("floor wall ")) &&
			%[1]s.querySelector(".effects-owner")?.textContent === "by session %[2]d" &&
			pull.split(" ").slice(2).join(" ").split(", ").some((v) => Math.abs(parseFloat(v)) > 0.01) })()`, row, int64(sid))))
	shoot(t, ctx, shots, "6-effects.png")
	stopKeeping()
	c.roundTrip(effectsMsg(id, `{"clear":true}`))
	hwtest.EventuallyNil(t, pageWithin, "none after clear", pageHolds(ctx, row+`.textContent === "none"`))
	errs, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`dashboard.errors`))
	if err != nil || len(errs) > 0 {
		t.Fatalf("the dashboard's script failed: %q %v", errs, err)
	}
}

// TestDashboardAcrossARestartInChromium: the dashboard stays open while
// hapticd restarts on its port (an upgrade, a lab node rebooted). The page
// resumes with the last seq it showed, an earlier run's; whether that run
// got ahead of the new one or the new one caught up, it must show the new
// run's events, the restart's device-connected first, and say that the
// service restarted.
func TestDashboardAcrossARestartInChromium(t *testing.T) {
	exe := chromiumOrSkip(t)
	for _, tt := range []struct {
		name     string
		sessions int // that come and go in the first run
	}{
		{"the first run got ahead", 3},
		// The first run's only event is its device-connected; the new
		// run's, published before it listens, has got as far.
		{"the new run caught up", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			port := l.Addr().(*net.TCPAddr).Port
			_ = l.Close()
			before := startService(t, serviceConfig{arms: 1, port: port})
			ctx := browser(t, exe)
			if err := chromedp.Do(ctx, chromedp.Navigate(before.base+"/ui/")); err != nil {
				t.Fatal(err)
			}
			count := func(name string) string {
				return fmt.Sprintf(`document.querySelectorAll('#events li[data-name=%q]').length`, name)
			}
			for range tt.sessions {
				c := before.dial(t, before.wsURL())
				c.expect()
				_ = c.conn.Close()
			}
			hwtest.EventuallyNil(t, pageWithin, "the first run's events shown", pageHolds(ctx, fmt.Sprintf(`%s === %d && %s === 1`, count("session-ended"), tt.sessions, count("device-connected"))))

			// While nothing answers, the card does not go on showing the last
			// state as if it were live.
			card := fmt.Sprintf(`document.querySelector('[data-device="arm3/%s"]')`, before.armIDs[0])
			hwtest.EventuallyNil(t, pageWithin, "card live", pageHolds(ctx, card+`.querySelector(".v-status").textContent === "ready" && !`+card+`.classList.contains("stale")`))
			before.stop()
			hwtest.EventuallyNil(t, pageWithin, "card marked stale", pageHolds(ctx, card+`.querySelector(".v-status").textContent.startsWith("no answer") && `+card+`.classList.contains("stale")`))
			after := startService(t, serviceConfig{arms: 1, port: port})
			hwtest.EventuallyNil(t, pageWithin, "card live again", pageHolds(ctx, card+`.querySelector(".v-status").textContent === "ready" && !`+card+`.classList.contains("stale")`))
			c := after.dial(t, after.wsURL())
			c.expect()
			hwtest.EventuallyNil(t, pageWithin, "the new run's events shown", pageHolds(ctx, fmt.Sprintf(`%s === 2 && %s === %d && %s === 1`, count("device-connected"), count("session-started"), tt.sessions+1, count("service-restarted"))))
			errs, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`dashboard.errors`))
			if err != nil || len(errs) > 0 {
				t.Fatalf("the dashboard's script failed: %q %v", errs, err)
			}
		})
	}
}

// TestDashboardShowsAHungServiceInChromium: a service that accepts the
// connection and never answers (stopped with SIGSTOP, or wedged) is shown
// as not answering, as a refused one is, and live again once it answers:
// the page's polls had no bound and it showed the last state as live for as
// long as the service hung (tourweb). The service is reached through a
// proxy that hangs on demand.
func TestDashboardShowsAHungServiceInChromium(t *testing.T) {
	exe := chromiumOrSkip(t)
	ts := startService(t, serviceConfig{arms: 1})
	target, err := url.Parse(ts.base)
	if err != nil {
		t.Fatal(err)
	}
	var hung atomic.Bool
	release := make(chan struct{})
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hung.Load() {
			select { // accepted, never answered
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	defer close(release) // first: Close waits for the hung handlers
	ctx := browser(t, exe)
	if err := chromedp.Do(ctx, chromedp.Navigate(front.URL+"/ui/")); err != nil {
		t.Fatal(err)
	}
	card := fmt.Sprintf(`document.querySelector('[data-device="arm3/%s"]')`, ts.armIDs[0])
	live := card + `.querySelector(".v-status").textContent === "ready" && !` + card + `.classList.contains("stale")`
	hwtest.EventuallyNil(t, pageWithin, "card live", pageHolds(ctx, live))
	hung.Store(true)
	hwtest.EventuallyNil(t, pageWithin, "card marked stale while the service hangs", pageHolds(ctx, card+`.querySelector(".v-status").textContent.startsWith("no answer") && `+card+`.classList.contains("stale")`))
	hung.Store(false)
	hwtest.EventuallyNil(t, pageWithin, "card live again", pageHolds(ctx, live))
}

// TestDashboardShowsEventsItMissedInChromium: a burst of events, more than
// the service's ring holds between two polls of the page, cannot all be
// listed; the page says how many it missed and lists the rest, newest
// included, rather than skipping them without a word.
func TestDashboardShowsEventsItMissedInChromium(t *testing.T) {
	exe := chromiumOrSkip(t)
	const ring, burst = 16, 300
	ts := startService(t, serviceConfig{arms: 1, eventRing: ring})
	ctx := browser(t, exe)
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.base+"/ui/")); err != nil {
		t.Fatal(err)
	}
	hwtest.EventuallyNil(t, pageWithin, "device-connected shown", pageHolds(ctx, `!!document.querySelector('#events li[data-name="device-connected"]')`))
	for i := range burst {
		ts.svc.Activity().Publish(event.DeviceBusy("arm3", ts.armIDs[0], uint64(i+1), 0))
	}
	var newest float64
	hwtest.EventuallyNil(t, pageWithin, "the burst published", func() error {
		r := ts.do(http.MethodGet, ts.base+"/events?since=0&limit=10000", "")
		newest = num(path(r.data(), "next_seq")) - 1
		if newest < burst+1 {
			return fmt.Errorf("newest event %v", newest)
		}
		return nil
	})
	// Every event of the burst is either listed or counted as missed.
	hwtest.EventuallyNil(t, pageWithin, "the burst listed or counted", pageHolds(ctx, fmt.Sprintf(`(() => {
		const listed = document.querySelectorAll('#events li[data-name="device-busy"]').length;
		const missed = [...document.querySelectorAll('#events li[data-name="events-missed"]')].reduce((n, e) => n + parseInt(e.dataset.missed), 0);
		return !!document.querySelector('#events li[data-seq="%d"]') && missed > 0 && listed + missed === %d })()`, int(newest), burst)))
	errs, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`dashboard.errors`))
	if err != nil || len(errs) > 0 {
		t.Fatalf("the dashboard's script failed: %q %v", errs, err)
	}
}

// TestDashboardShowsFailedPortsInChromium: an arm whose port failed to open
// has no card; the dashboard's Hardware ports table says why, with the fix
// hint.
func TestDashboardShowsFailedPortsInChromium(t *testing.T) {
	exe := chromiumOrSkip(t)
	retry := time.Now().Add(time.Minute)
	ports := func() HardwarePorts {
		return HardwarePorts{ScannedAt: time.Now(), Ports: []HardwarePort{
			{Path: "/dev/ttyACM0", Kind: "arm", Outcome: "failed", Reason: "hw/serial: open /dev/ttyACM0: port is busy",
				Hint: "stop the other hapticd", Failures: 3, RetryAt: &retry},
		}}
	}
	ts := startService(t, serviceConfig{arms: 1, ports: ports})
	ctx := browser(t, exe)
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.base+"/ui/")); err != nil {
		t.Fatal(err)
	}
	hwtest.EventuallyNil(t, pageWithin, "the failed port listed with its reason and hint", pageHolds(ctx, `(() => {
		const row = document.querySelector('#ports tr[data-port="/dev/ttyACM0"]');
		return !!row && row.innerText.includes("failed") && row.innerText.includes("port is busy") && row.innerText.includes("stop the other hapticd") })()`))
	errs, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`dashboard.errors`))
	if err != nil || len(errs) > 0 {
		t.Fatalf("the dashboard's script failed: %q %v", errs, err)
	}
}

// TestDashboardKeepsCardsInOrderInChromium: the cards stay in one order,
// arms before grips, then by id, however devices arrive, leave and come
// back: an arm that returned went to the end of the page, after the grip,
// so an operator's cards moved under their eyes.
func TestDashboardKeepsCardsInOrderInChromium(t *testing.T) {
	exe := chromiumOrSkip(t)
	ts := startService(t, serviceConfig{arms: 2, grips: 1})
	ctx := browser(t, exe)
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.base+"/ui/")); err != nil {
		t.Fatal(err)
	}
	// inOrder is the cards of arms at indices and the grip, as the page
	// must show them: arms by id (the shorter first, so decimal ids count
	// up), then the grip.
	inOrder := func(indices ...int) string {
		var ids []string
		for _, i := range indices {
			ids = append(ids, sim.ArmID(i))
		}
		slices.SortFunc(ids, func(a, b string) int { return cmp.Or(cmp.Compare(len(a), len(b)), cmp.Compare(a, b)) })
		var keys []string
		for _, id := range ids {
			keys = append(keys, "arm3/"+id)
		}
		keys = append(keys, "grip/"+ts.gripIDs[0])
		return strings.Join(keys, ",")
	}
	cards := `[...document.querySelectorAll('#devices [data-device]')].map((e) => e.dataset.device).join()`
	hwtest.EventuallyNil(t, pageWithin, "every card shown in order", pageHolds(ctx, fmt.Sprintf(`%s === %q`, cards, inOrder(0, 1))))

	// The first arm leaves and comes back.
	first := ts.svc.Devices().Find(protocol.TypeArm, ts.armIDs[0])
	ts.svc.RemoveDevice(first, errors.New("test: the arm is unplugged"))
	hwtest.EventuallyNil(t, pageWithin, "the card of the arm that left gone", pageHolds(ctx, fmt.Sprintf(`%s === %q`, cards, inOrder(1))))
	hwtest.EventuallyNil(t, 30*time.Second, "the arm gone from the service", func() error {
		if ts.svc.Devices().Find(protocol.TypeArm, ts.armIDs[0]) != nil {
			return errors.New("still listed")
		}
		return nil
	})
	for _, i := range []int{0, 2} { // back, and a new one
		if _, err := ts.svc.AddDevice(sim.NewArm(sim.ArmOptions{Index: i, PeriodS: 0.001}), false); err != nil {
			t.Fatal(err)
		}
	}
	hwtest.EventuallyNil(t, pageWithin, "the cards in order once the arms arrived", pageHolds(ctx, fmt.Sprintf(`%s === %q`, cards, inOrder(0, 1, 2))))
	errs, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`dashboard.errors`))
	if err != nil || len(errs) > 0 {
		t.Fatalf("the dashboard's script failed: %q %v", errs, err)
	}
}
