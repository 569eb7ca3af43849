package actors

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hapticd/hapticd/protocol"
)

// A configure that reaches its device after the shutdown closed the
// write-behind (it was on its way when the sockets closed) must be refused
// (the frame carries an error, the value is not in force) or written: it
// was written through, and when that write failed (here a file where the
// profile's folder belongs, as a full disk would) the frame acknowledged a
// value the disk never got, lost with the process. The write through also
// ran on the device actor, which a hung disk would have held.
func TestConfigureAfterTheWriteBehindClosedIsRefusedOrWritten(t *testing.T) {
	dir := t.TempDir()
	svc := startWith(t, Options{StateDir: dir})
	arm := addArm(t, svc, simArm(0))
	const profile = "co.example:late"
	sess, sink := open(t, svc, nil)
	if f := exchange(t, sess, sink, `{"session":{"configure":{"profile":{"name":"`+profile+`"}}}}`); len(f.errorCodes()) != 0 {
		t.Fatalf("pick: %v", f.errorCodes())
	}
	if err := svc.writeBehind.Close(); err != nil { // as the shutdown does
		t.Fatal(err)
	}
	doc := arm.profileStoreName(profile)
	folder := filepath.Join(dir, filepath.Dir(filepath.FromSlash(doc)))
	if err := os.RemoveAll(folder); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(folder, []byte("a file where the profile's folder belongs"), 0o600); err != nil {
		t.Fatal(err)
	}

	f := exchange(t, sess, sink, fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":{"damping":{"scalar":4}}}]}`, arm.ID))
	got, err := svc.Entry(arm, sess.ID, protocol.KeyDamping)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.errorCodes()) == 0 {
		t.Fatalf("the configure after the write-behind closed was acknowledged, but its document %s could not be written: an acknowledged value lost (in force: %v)", doc, got)
	}
	if d, ok := got.(protocol.Damping); !ok || d.Scalar != nil && *d.Scalar == 4 {
		t.Errorf("the refused configure is in force: damping %+v", got)
	}
}
