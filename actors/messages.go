package actors

import (
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
}

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

// setSetting and resetSetting change one service-wide setting; the registry
// owns settings. The reply is settingReply.
type setSetting struct {
	key   protocol.SettingKey
	value any
}
type resetSetting struct{ key protocol.SettingKey }
type settingReply struct {
	value any
	err   error
}

// --- device ---

// getEntry reads one config entry of a device, as session sees it (0 for a
// device-global entry).
type getEntry struct {
	session uint64
	key     protocol.Key
}

// setEntries applies config entries of one device, all or none. session is 0
// for device-global entries. durable asks for the profile to be written to
// disk before the reply (HTTP); otherwise profile storage is write-behind
// (WebSocket, possibly every tick).
type setEntries struct {
	session uint64
	entries []protocol.Entry
	durable bool
}

// resetEntry restores an entry's default: for the listed sessions, or for
// every session of the device when all is set (HTTP DELETE without a
// selector), or the device-global entry when sessions is empty and all is
// false.
type resetEntry struct {
	sessions []uint64
	all      bool
	key      protocol.Key
}

// entryReply answers getEntry, setEntries and resetEntry with the value now
// in force (the last one for setEntries).
type entryReply struct {
	entry protocol.Entry
	err   error
}

// attachSession tells a device that a session exists: its profile's stored
// entries (if any) are loaded for it and its session-level basis applies.
// The device answers with ack once the session's view is published.
type attachSession struct {
	session uint64
	profile string
	basis   protocol.Basis
}

// detachSession drops a session's view; pending profile writes are flushed.
type detachSession struct{ session uint64 }

// sessionBasis changes the session-level basis, which applies to every
// device where the session set no per-device basis.
type sessionBasis struct {
	session uint64
	basis   protocol.Basis
}

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

// supervisionDrill makes the receiving actor panic. It exists so that tests
// (and operators, through nothing exposed yet) can check that supervision
// restarts a device actor with its config intact.
type supervisionDrill struct{ reason string }

// ack answers messages that carry no value.
type ack struct{ err error }

// --- session ---

// beginSession makes a new session visible: it attaches to the devices, is
// listed, and sends the inventory frame. It is the session actor's first
// message.
type beginSession struct{}

// inbound is one client message, read by the connection's reader goroutine.
// The session actor owns buf until it answers with the frame.
type inbound struct{ buf []byte }

func (*addDevice) actorMessage()        {}
func (*addDeviceReply) actorMessage()   {}
func (*deviceFailed) actorMessage()     {}
func (*setSetting) actorMessage()       {}
func (*resetSetting) actorMessage()     {}
func (*settingReply) actorMessage()     {}
func (*getEntry) actorMessage()         {}
func (*setEntries) actorMessage()       {}
func (*resetEntry) actorMessage()       {}
func (*entryReply) actorMessage()       {}
func (*attachSession) actorMessage()    {}
func (*detachSession) actorMessage()    {}
func (*sessionBasis) actorMessage()     {}
func (*setWorkspace) actorMessage()     {}
func (*applyGlobals) actorMessage()     {}
func (*loopEvent) actorMessage()        {}
func (*supervisionDrill) actorMessage() {}
func (*ack) actorMessage()              {}
func (*beginSession) actorMessage()     {}
func (*inbound) actorMessage()          {}
