package actors

import "github.com/hapticd/hapticd/protocol"

// maxKeptScratch bounds the entries a session's reused message and frame
// keep between messages. A hostile message (25,000 device entries, say)
// grows them once; keeping that would pin it for the session's lifetime.
const maxKeptScratch = 4 * protocol.MaxWarnings

// trimScratch drops scratch slices a message grew past maxKeptScratch.
// Frames of a large fleet keep their device slices: those are the
// service's own size, needed again next tick.
func (a *sessionActor) trimScratch() {
	if a.sessionScratch == nil {
		return
	}
	if cap(a.frame.Warnings) > maxKeptScratch {
		a.frame.Warnings = nil
	}
	if cap(a.frame.Errors) > maxKeptScratch {
		a.frame.Errors = nil
	}
	if cap(a.msg.Devices) > maxKeptScratch {
		a.msg.Devices = nil
	}
	if cap(a.msg.Errors) > maxKeptScratch {
		a.msg.Errors = nil
	}
}
