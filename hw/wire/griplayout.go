package wire

import "github.com/hapticd/hapticd/hw"

// GripLayout is the layout a grip on link sends: a wired grip's status is
// shorter than a wireless one's through its dongle, under the same header.
// An unknown link is the dongle's, the transport discovery finds first.
func GripLayout(link hw.Link) Layout {
	if link == hw.LinkWired {
		return LayoutWired
	}
	return LayoutWireless
}

// GripLink is the link a grip whose status is in layout l is on.
func GripLink(l Layout) hw.Link {
	if l == LayoutWired {
		return hw.LinkWired
	}
	return hw.LinkWireless
}

// detectRun is how many status frames of the grip must follow each other
// back to back in one layout, and not in the other, for DetectGripLayout
// to decide: a status read in the wrong layout ends 6 bytes plus its
// extension early or late, where the next frame does not start.
const detectRun = 3

// DetectGripLayout tells which layout the grip with the given id streams
// its status in, from bytes b it sent (ToHost): the layout in which, from
// some status frame of that grip on, frames decode back to back with
// detectRun status frames of the grip among them, and not in the other
// layout. ok is false while b does not yet decide (too few frames, or a
// run both layouts decode alike); read more and ask again.
func DetectGripLayout(b []byte, id uint16) (l Layout, ok bool) {
	for i := 0; i+3 <= len(b); i++ {
		if b[i] != HeaderGripStatus || uint16(b[i+1])|uint16(b[i+2])<<8 != id {
			continue
		}
		wireless := statusRun(LayoutWireless, b[i:], id)
		wired := statusRun(LayoutWired, b[i:], id)
		switch {
		case wireless >= detectRun && wired < detectRun:
			return LayoutWireless, true
		case wired >= detectRun && wireless < detectRun:
			return LayoutWired, true
		}
	}
	return LayoutWireless, false
}

// GripHeard tells whether b, bytes a dongle or wired grip sent (ToHost),
// holds a whole status frame of the grip with the given id in either
// layout: a grip that DetectGripLayout cannot place yet was heard (too few
// frames, interleaved with another grip's), one that sent none is silent
// (asleep, switched off, out of range), and its stream says nothing of its
// layout.
func GripHeard(b []byte, id uint16) bool {
	for i := 0; i+3 <= len(b); i++ {
		if b[i] != HeaderGripStatus || uint16(b[i+1])|uint16(b[i+2])<<8 != id {
			continue
		}
		if statusRun(LayoutWireless, b[i:], id) > 0 || statusRun(LayoutWired, b[i:], id) > 0 {
			return true
		}
	}
	return false
}

// statusRun counts the status frames of grip id among the frames that
// decode back to back in layout l from the start of b, up to detectRun.
func statusRun(l Layout, b []byte, id uint16) int {
	var m Message
	run := 0
	for run < detectRun {
		n, err := DecodeIn(l, ToHost, b, &m)
		if err != nil {
			return run
		}
		if m.Header == HeaderGripStatus {
			if m.GripStatus.ID != id {
				return run
			}
			run++
		}
		b = b[n:]
	}
	return run
}
