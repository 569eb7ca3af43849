//go:build linux || darwin || freebsd || openbsd

package discovery

import "golang.org/x/sys/unix"

// nodeIdentity tells one device node from another at the same path: the
// kernel makes a new node (a new inode, a new change time) each time a
// device is plugged in, even under the same name.
type nodeIdentity struct {
	present        bool
	dev, ino, rdev uint64
	ctimeNs        int64
}

// identify returns the identity of the node path names, following links
// (a by-id link goes when its device does); the zero identity when there
// is none.
func identify(path string) nodeIdentity {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return nodeIdentity{}
	}
	return nodeIdentity{present: true, dev: uint64(st.Dev), ino: uint64(st.Ino), rdev: uint64(st.Rdev), ctimeNs: st.Ctim.Nano()}
}
