package actors

import "github.com/hapticd/hapticd/protocol"

// maxKeptScratch bounds the entries a session's reused message and frame
// keep between messages. A hostile message (25,000 device entries, say)
// grows them once; keeping that would pin it for the session's lifetime.
const maxKeptScratch = 4 * protocol.MaxWarnings

// trimScratch drops scratch slices a message grew past maxKeptScratch.
// Frames of a large fleet keep their device slices: those are the
// service's own size, needed again next tick. So does a message's list of
// entries, up to one per device: a load test that commands every arm of a
// thousand from one session decodes into the same entries each tick,
// where growing them anew cost 1.1 MB and two strings per entry a message.
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
	keep := max(maxKeptScratch, p.svc.Devices().count())
	if len(p.msg.Devices) > keep || cap(p.msg.Devices) > 2*keep {
		p.msg.Devices = nil
	}
	if cap(p.hints) > 2*keep {
		p.hints = nil
	}
	if cap(p.msg.Errors) > maxKeptScratch {
		p.msg.Errors = nil
	}
}
