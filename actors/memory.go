package actors

import "github.com/hapticd/hapticd/protocol"

// maxKeptScratch bounds the entries a session's reused message and frame
// keep between messages. A hostile message (25,000 device entries, say)
// grows them once; keeping that would pin it for the session's lifetime.
const maxKeptScratch = 4 * protocol.MaxWarnings

// trimScratch drops scratch slices a message grew past maxKeptScratch.
// Frames of a large fleet keep their device slices: those are the
// service's own size, needed again next tick.
func (p *tickPath) trimScratch() {
	if p.sessionScratch == nil {
		return
	}
	if cap(p.frame.Warnings) > maxKeptScratch {
		p.frame.Warnings = nil
	}
	if cap(p.frame.Errors) > maxKeptScratch {
		p.frame.Errors = nil
	}
	if cap(p.msg.Devices) > maxKeptScratch {
		p.msg.Devices = nil
	}
	if cap(p.msg.Errors) > maxKeptScratch {
		p.msg.Errors = nil
	}
}
