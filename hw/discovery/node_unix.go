//go:build linux || darwin || freebsd || openbsd

package discovery

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// nodeIdentity tells one device node from another at the same path: the
// kernel makes a new node each time a device is plugged in, even under the
// same name.
type nodeIdentity struct {
	present        bool
	dev, ino, rdev uint64
	ctimeNs        int64
}

// ctimeTellsNodes: Linux moves a tty node's change time only when the node
// is made or its owner or mode change (a write moves its modification
// time), so it tells a node made anew on a reused inode (a
// pseudo-terminal's number) from the old one. BSD devfs moves it on every
// write, where it would reset a failing port's backoff at each probe.
const ctimeTellsNodes = runtime.GOOS == "linux"

// nodeReplacementSeen: a node replaced between two scans, present at
// both, is seen as a replug (its device and inode numbers differ).
const nodeReplacementSeen = true

// identify returns the identity of the node path names, following links
// (a by-id link goes when its device does); the zero identity when there
// is none.
func identify(path string) nodeIdentity {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return nodeIdentity{}
	}
	id := nodeIdentity{present: true, dev: uint64(st.Dev), ino: uint64(st.Ino), rdev: uint64(st.Rdev)}
	if ctimeTellsNodes {
		id.ctimeNs = st.Ctim.Nano()
	}
	return id
}
