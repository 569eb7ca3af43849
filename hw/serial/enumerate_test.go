package serial

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The fallback used where USB ids cannot be read (macOS without cgo) lists
// only the USB modem nodes, each marked unidentified so that discovery
// sends them no byte unless named with --hw-port.
func TestGlobPortsListsUnidentifiedModems(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"cu.usbmodem1101", "cu.usbmodem2201", "cu.Bluetooth-Incoming-Port", "tty.usbmodem1101"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, err := globPorts(filepath.Join(dir, "cu.usbmodem*"))
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, p := range got {
		if !p.Unidentified || p.IsUSB || p.VID != 0 {
			t.Errorf("%+v: want an unidentified port with no USB details", p)
		}
		paths = append(paths, filepath.Base(p.Path))
	}
	if want := []string{"cu.usbmodem1101", "cu.usbmodem2201"}; !slices.Equal(paths, want) {
		t.Errorf("ports %v, want %v", paths, want)
	}
}
