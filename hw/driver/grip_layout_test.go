package driver_test

import (
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/driver"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/wire"
)

// A grip is read by its own status layout (spec HARDWARE.md): a wired grip
// sends a shorter status than a wireless one under the same header. Read
// with the wireless layout, a wired grip's frames ran into each other: its
// orientation and error were lost (or taken from the wrong bytes) and the
// grip went stale as if switched off.
func TestGripIsReadByItsLinksLayout(t *testing.T) {
	const id = 0x2345
	tests := []struct {
		name   string
		link   hw.Link
		layout wire.Layout
		status wire.GripStatus
		want   hw.State
	}{
		{"wireless", hw.LinkWireless, wire.LayoutWireless,
			wire.GripStatus{ID: id, Orientation: hw.Quat{Z: 1}, Hall: 255, Buttons: 3, Battery: 0.75},
			hw.State{Orientation: hw.Quat{Z: 1}, Hall: 1, Buttons: hw.ButtonA | hw.ButtonB, Battery: 0.75,
				Status: hw.StatusConnected | hw.StatusAwake | hw.StatusReady}},
		{"wired", hw.LinkWired, wire.LayoutWired,
			wire.GripStatus{ID: id, Orientation: hw.Quat{Z: 1}, Attached: 1, ExtLen: 3, Ext: [12]byte{0xFF, 0xFF, 0xFF}},
			hw.State{Orientation: hw.Quat{Z: 1}, Status: hw.StatusConnected | hw.StatusAwake | hw.StatusReady}},
		{"wired with an error", hw.LinkWired, wire.LayoutWired,
			wire.GripStatus{ID: id, Orientation: hw.Quat{Z: 1}, Error: 4},
			hw.State{Orientation: hw.Quat{Z: 1}, GripError: 4, Status: hw.StatusConnected | hw.StatusAwake}},
	}
	for _, tc := range tests {
		// Named with its link (a port named grip: or wired-grip:), and
		// found by the scan (no link given: told from the status stream).
		for _, named := range []bool{true, false} {
			name := tc.name + map[bool]string{true: ", named", false: ", found"}[named]
			t.Run(name, func(t *testing.T) {
				out := wire.AppendGripInfo(nil, wire.GripInfo{ID: id, Model: 3})
				for range 20 {
					out = wire.AppendIn(tc.layout, out, wire.ToHost, &wire.Message{Header: wire.HeaderGripStatus, GripStatus: tc.status})
				}
				pty := playDongle(t, out)
				o := driver.GripOptions{InfoTimeout: testReplyTimeout, StaleAfter: 10 * time.Second}
				if named {
					o.Link = tc.link
				}
				g := openGrip(t, pty.Path, o)
				if got := g.Info().Link; got != tc.link {
					t.Errorf("Info().Link = %v, want %v", got, tc.link)
				}
				readsAs(t, g, tc.want)
			})
		}
	}
}

// readsAs waits for g's first status and checks the state it gives.
func readsAs(t *testing.T, g *driver.Grip, want hw.State) {
	t.Helper()
	var st hw.State
	hwtest.Eventually(t, 10*time.Second, "the grip's status", func() bool {
		if err := g.Exchange(nil, &st); err != nil {
			t.Fatalf("Exchange: %v", err)
		}
		return st.Status&hw.StatusConnected != 0
	})
	if st != want {
		t.Errorf("state %+v\nwant  %+v", st, want)
	}
}
