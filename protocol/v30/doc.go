// Package v30 is the legacy 3.0 codec (PROTOCOL 7): the same messages and
// frames as 3.x, spelled differently. Device collections are objects keyed
// by device id instead of arrays, device_info reports firmware_version and
// hardware_version, and an arm's state.mode stands for control_mode.
//
// Only the layout lives here. Validation, entry decoding, command
// precedence, warnings and every value's encoding are protocol's, called
// through protocol.ClientMessage's decoding steps and protocol's Append*
// functions, so the two formats cannot drift apart. Configuration is shared:
// a value set through one format is seen through the other.
//
// Like protocol, the package does no I/O, starts no goroutines, and decodes
// and encodes without allocating in steady state.
package v30
