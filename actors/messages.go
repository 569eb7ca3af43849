package actors

import (
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/space"
)

// Every message the actors of this package exchange is a pointer to one of
// these structs, sealed by actorMessage so that a stray type is caught by the
// default case of a Receive. Keeping them in one file keeps a later move to
// protoactor's remote layer (protobuf messages) small.
type actorMessage interface{ actorMessage() }

// --- registry ---

// addDevice asks the registry to adopt an open driver. hardware selects a
// loop on its own locked thread instead of the shared simulation scheduler.
type addDevice struct {
	driver   hw.Driver
	hardware bool
	// defaults are the device-global entries the device starts with when
	// none are stored (nil: protocol.DefaultDeviceConfig).
	defaults *protocol.DeviceConfig
	// ticket is cancelled when the caller gives up waiting; the registry
	// admits the addition when it takes it up, and drops one cancelled
	// (Service.askAddition).
	ticket *ticket
	// listing settles the same race after the ticket was admitted, while
	// the device's stored config is read off the actor: the registry
	// admits it as it lists the device, a caller that gives up first
	// cancels it and the registry drops the addition (additionGivenUp).
	listing *ticket
	// answers has the registry's answer, the only one it gives (it sends
	// none to the caller's future: protoactor's future takes a reply that
	// comes after its timeout without its lock, racing the reader that
	// timed out, and a caller may give up just as its addition is listed).
	answers chan *addDeviceReply
	// info is the driver's, read once as the registry takes the addition
	// up, and listed the device once the registry has listed it (only the
	// registry reads and writes them).
	info   hw.Info
	listed *Device
}

// answer gives the caller the registry's answer. An addition is answered
// once, into a channel of one: it never waits.
func (m *addDevice) answer(a *addDeviceReply) {
	select {
	case m.answers <- a:
	default:
	}
}

// additionGivenUp tells the registry that the caller of an addition it
// took up gave up before it was listed (add.listing cancelled): its id is
// freed at once, so the caller's retry is not refused as the same device,
// and its stored config, when read, is ignored.
type additionGivenUp struct{ add *addDevice }

// addDeviceReply answers addDevice.
type addDeviceReply struct {
	device *Device
	err    error
}

// deviceFailed tells the registry that a device's loop gave up on its
// driver (unplugged, or too many errors in a row).
type deviceFailed struct {
	device *Device
	err    error
}

// openSession asks the registry to list a session whose actor is spawned:
// the registry attaches it to every device, then lists it, and answers ack.
type openSession struct{ sess *Session }

// updateSession tells the registry the session's profile or session-level
// basis changed; the registry re-attaches it to every device with them and
// answers ack. Only the registry sends attachSession, so every device sees
// one ordered stream of a session's attachments, whoever added what first.
type updateSession struct {
	sess    *Session
	profile string
	basis   protocol.Basis
	// waits is the device set the session will ask for published: a
	// device outside it (one that connected since) is attached as late.
	waits *DeviceSet
}

// sessionClosed tells the registry a session actor is stopping: it is
// unlisted and detached from every device.
type sessionClosed struct{ sess *Session }

// setSetting and resetSetting change one service-wide setting; the registry
// owns settings. The reply is settingReply.
type setSetting struct {
	key    protocol.SettingKey
	value  any
	ticket *ticket
}
type resetSetting struct {
	key    protocol.SettingKey
	ticket *ticket
}
type settingReply struct {
	value any
	err   error
}

// --- device ---

// ticket settles a race between a request's work taking effect and the
// request being called off: a control-plane request and its deadline (the
// requester cancels it at Options.RequestTimeout, the actor admits it
// before applying it), or a durable write and its Options.WriteTimeout or
// its device leaving (the store admits it at its commit point,
// store.SaveGated). Whichever comes first wins: a cancelled request is
// answered unavailable at once and never takes effect, an admitted one is
// waited for and answered with its outcome. Once admitted, later admits
// pass too (the writes of one request after its first). A nil ticket is
// always admitted and never cancelled. (Across hosts a deadline carried in
// the message would do the same job, less exactly.)
type ticket struct{ state atomic.Int32 }

const (
	ticketPending int32 = iota
	ticketAdmitted
	ticketCancelled
)

// admit reports whether the work may take effect: true unless the ticket
// was cancelled first.
func (t *ticket) admit() bool {
	return t == nil || t.state.CompareAndSwap(ticketPending, ticketAdmitted) || t.state.Load() == ticketAdmitted
}

// cancelled reports whether the work was called off.
func (t *ticket) cancelled() bool {
	return t != nil && t.state.Load() == ticketCancelled
}

// cancel calls the work off; false if it was admitted already.
func (t *ticket) cancel() bool {
	return t != nil && t.state.CompareAndSwap(ticketPending, ticketCancelled)
}

// failed answers a request whose handler panicked (see answering): the
// requester learns at once instead of waiting out its deadline.
type failed struct{ reason any }

// cancelled is what a requester's future receives when it cancelled the
// request at its deadline.
type cancelled struct{}

// getEntry reads one config entry of a device, as session sees it (0 for a
// device-global entry).
type getEntry struct {
	session uint64
	key     protocol.Key
	ticket  *ticket
}

// setEntries applies config entries of one device, all or none. session is 0
// for device-global entries. durable asks for the profile to be written to
// disk before the reply (HTTP); otherwise profile storage is write-behind
// (WebSocket, possibly every tick).
type setEntries struct {
	session uint64
	entries []protocol.Entry
	durable bool
	ticket  *ticket
}

// resetEntry restores an entry's default: for the listed sessions, or for
// every session of the device when all is set (HTTP DELETE without a
// selector), or the device-global entry when sessions is empty and all is
// false.
type resetEntry struct {
	sessions []uint64
	all      bool
	key      protocol.Key
	ticket   *ticket
}

// entryReply answers getEntry, setEntries and resetEntry with the value now
// in force (the last one for setEntries). A resetEntry of every session
// (all) also lists the sessions it reset, in id order.
type entryReply struct {
	entry    protocol.Entry
	err      error
	sessions []uint64
	// warnings: a getEntry's answer about the entry's stored value
	// (rejectedEntries).
	warnings []protocol.Error
}

// attachSession tells a device that a session exists, or that its profile
// or session-level basis changed: the profile's stored entries (if any) are
// loaded for it and the basis applies. Only the registry sends it.
type attachSession struct {
	session uint64
	profile string
	basis   protocol.Basis
	// late is the session when the device connected after it opened, or
	// after the profile change under way took the devices it waits for:
	// nothing waits for the device's views then (published), so the
	// device tells the session itself that the profile's entries on it
	// could not be read. Nil otherwise.
	late *Session
}

// published asks a device actor to answer ack once it has handled every
// message queued before it: a session that changed its profile or basis
// sends it after the registry queued the attachments, so that its frame
// shows the views they publish, and hears in the ack's warning that the
// profile's stored entries on the device could not be read.
type published struct{ session uint64 }

// detachSession drops a session's view; pending profile writes are flushed.
type detachSession struct{ session uint64 }

// setWorkspace sets a session's workspace transform on one device
// (set_transform); the device answers with ack once the view is published.
type setWorkspace struct {
	session   uint64
	transform space.Transform
}

// applyGlobals republishes device-wide loop values (after a settings change).
type applyGlobals struct{ settings protocol.Settings }

// loopEvent carries an event from the device's real-time loop.
type loopEvent struct{ event loop.Event }

// ack answers messages that carry no value.
type ack struct {
	err     error
	warning *protocol.Error // for the frame's warnings; the request succeeded
}

func (*addDevice) actorMessage()      {}
func (*addDeviceReply) actorMessage() {}
func (*deviceFailed) actorMessage()   {}
func (*openSession) actorMessage()    {}
func (*updateSession) actorMessage()  {}
func (*sessionClosed) actorMessage()  {}
func (*setSetting) actorMessage()     {}
func (*resetSetting) actorMessage()   {}
func (*settingReply) actorMessage()   {}
func (*getEntry) actorMessage()       {}
func (*setEntries) actorMessage()     {}
func (*resetEntry) actorMessage()     {}
func (*entryReply) actorMessage()     {}
func (*attachSession) actorMessage()  {}
func (*detachSession) actorMessage()  {}
func (*published) actorMessage()      {}
func (*applyGlobals) actorMessage()   {}
func (*loopEvent) actorMessage()      {}
func (*ack) actorMessage()            {}
func (*cancelled) actorMessage()      {}
func (*failed) actorMessage()         {}
func (*setWorkspace) actorMessage()   {}

// --- session ---

// controlRequest is a client message that changes the session or a device,
// handed by the per-tick path (Deliver) to the session actor. The actor
// reads msg and devs, fills asked and warnings, and signals done once every
// answer is in; Deliver waits for that before it writes the frame. One
// request per session is reused: Deliver hands over one at a time.
type controlRequest struct {
	msg      *protocol.ClientMessage
	devs     *DeviceSet // the device set when the message was decoded
	asked    []askSlot
	warnings []protocol.Error
	done     chan struct{} // buffered (1)
	// stored is the stored session level of the profile msg picks, read
	// by Deliver (a disk read has no place in Receive).
	stored storedProfile
}

func (*controlRequest) actorMessage() {}

// --- blocking work done off the actors ---

// deviceLoaded carries an added device's stored config, read off the
// registry (registryActor.add), back to it.
type deviceLoaded struct {
	add     *addDevice
	typ     protocol.DeviceType
	info    hw.Info
	global  protocol.DeviceConfig
	loadErr error // unreadable: global holds the defaults
	// rejected: entries of the document this build did not accept (loadErr
	// is a *store.RejectedError); global holds the others.
	rejected rejectedEntries
}

// deviceLeft tells the registry that a device it unlisted has its output
// halted, its loop stopped and its driver closed.
type deviceLeft struct {
	device *Device
	cause  error // nil: removed, not failed
}

// deviceStopped tells the registry that the actor of a device that left
// has stopped (key: its deviceKey).
type deviceStopped struct{ key string }

// writeLanding tells the registry that a device actor stopped while a
// config write of its device was past its commit point: done closes once
// that write has returned, even if its requester was answered before, at
// the write timeout (answerLanding). The device is re-added only then, so
// that it reads its document as it stays: with the value its leaving
// actor answers 200, and never without one that lands after a 503.
type writeLanding struct {
	key  string
	done <-chan struct{}
}

// settingSaved carries the outcome of a setting change's durable write
// back to the registry, which applies and answers it only then.
type settingSaved struct {
	key      protocol.SettingKey
	settings protocol.Settings
	sender   *actor.PID
	err      error
	// gate is the write's commit point, timer the registry's call to
	// call it off past Options.WriteTimeout (settingOverdue).
	gate  ticket
	timer *time.Timer
	// outcome receives err once the write returns (buffered): a registry
	// that stops while the write is past its commit point waits on it to
	// answer what is true (registryActor.abandon).
	outcome chan error
}

// settingOverdue tells the registry that a setting change's write has had
// its Options.WriteTimeout.
type settingOverdue struct{ saved *settingSaved }

// ioDone carries the outcome of a device actor's durable write or load
// back to it (deviceCore.startIO); the actor holds its later config
// requests until then.
type ioDone struct {
	op  *pendingIO
	err error
}

// ioOverdue tells a device actor that a write it started has had its
// Options.WriteTimeout.
type ioOverdue struct{ op *pendingIO }

func (*deviceLoaded) actorMessage()   {}
func (*ioOverdue) actorMessage()      {}
func (*deviceLeft) actorMessage()     {}
func (*deviceStopped) actorMessage()  {}
func (*writeLanding) actorMessage()   {}
func (*settingSaved) actorMessage()   {}
func (*settingOverdue) actorMessage() {}
func (*ioDone) actorMessage()         {}
