// Package store is hapticd's state directory (--state-dir): device-global
// config, settings and per-profile session config, one JSON document per
// file.
//
// # Names
//
// A document is named by a relative slash path without extension:
// "settings", "devices/arm3-049D", "profiles.v2/<HashName(profile)>/arm3-049D".
// Segments are [A-Za-z0-9._%-] and never start with '.', so no name
// escapes the directory. HashName makes any user-supplied string one safe
// segment of fixed length (the caller keeps the string inside the
// document); EscapeName makes it a reversible one, but as long as 3 bytes
// per input byte, which a file name may not hold.
// Document "a/b" is the file <dir>/a/b.json.
//
// # Durability
//
// Save returns only once the document is durable: it writes a temp file in
// the same directory, fsyncs it, renames it over the target and fsyncs the
// directory. A reader, or the service after a crash at any instant, sees
// the old document or the new one, never a torn file. Open removes temp
// files that a crash left behind; an empty or missing directory means
// defaults.
//
// SaveGated adds a commit point between the temp file's fsync and the
// rename: a caller that gave up on a write hung on the disk refuses it
// there, and the document is left as it was (ErrNotCommitted).
//
// # Bad files
//
// A document that is empty, torn, not JSON or of the wrong shape makes Load
// return a *CorruptError naming the file and the fault, after moving the
// file aside to name.json.corrupt-<unix seconds> so that the next Save does
// not destroy the evidence. A document that exists but cannot be read at
// all (no read permission, an I/O error, a directory in its place), or a
// corrupt one that could not be moved aside, makes Load return the error
// and is left where it is; as it may hold acknowledged values, Save, Put
// and Delete of that name are refused (saying so) until a Load reads or
// moves it or the file is gone, never written over. The caller logs it and uses defaults; nothing in this package
// stops the service over a bad file.
//
// A document read into a Tolerant value that accepted some of its entries
// and not others (a value a newer build wrote, a typo) is not corrupt:
// Load answers found, the value holding the entries it accepted, with a
// *RejectedError naming the file and a copy of it as read
// (name.json.rejected-<unix seconds>, made without the document's lock and
// reused when a copy with the same bytes is there), and leaves the file in
// place. The caller tells the user which entries took their defaults.
//
// A document read into a KeepsUnknown value with members that value does
// not know (a newer build's entry after a downgrade, a misspelt name) is
// read as usual; Load keeps those members, as the file has them, and every
// later write of the name (Save, SaveGated, a write-behind flush) writes
// them back first in its object (or in the object in it a member is In,
// a group of settings), so that a build that does not know an entry never
// takes it from the file. A member kept inside an object of the
// document (a newer build's field of an entry) goes with that object's
// value: a write Replacing the object (the entry set anew, whole) drops
// it, and so does the flush of such a value overtaken by a later write.
// They go with the document: a Delete
// (DeleteFolder too), a Load that moves the file aside as corrupt or finds
// it gone, or a write that finds it gone (removed by hand) drops them.
// OnUnknown's function hears of them once per document, with their size:
// above MaxKept (4 MiB) every write of the document is refused, changing
// nothing (ErrKeptTooLarge), rather than copying them at each write or
// dropping them.
//
// A caller that does not write a value it holds as stored (unchanged)
// asks InPlace whether the document's file is still there: a folder made
// in its place is an error, as for a write. Only a document this process
// found on disk or wrote is looked for: one never stored is the defaults
// a restart gives, and is not written for a value that did not change. A
// Load that finds the file gone makes it one never stored again (its
// caller runs on the defaults from then on).
//
// # Write-behind
//
// WebSocket clients may re-send configure at 1 kHz; PROTOCOL 4 asks for
// those changes to be coalesced and flushed within one second, on session
// end and on shutdown, never a disk write per message. WriteBehind keeps
// the latest encoded value per name and writes each at most once per
// interval. Put encodes its value at call time (the snapshot rule: callers
// may change the value afterwards) and never waits for the disk. Flush and
// Close wait for it at most the write timeout (SetWriteTimeout): a write
// hung on the disk is then reported (ErrWriteTimeout, OnError, Failing)
// and stays queued, so a session's end or a shutdown is not held by it.
// After Close, Put is refused (ErrClosed): nothing would write the value,
// and its caller, an actor, must not wait on the disk to write it through.
//
// Save, Delete and Put on one name take effect in call order: a
// write-behind flush never puts back a value that a later Save (an HTTP
// POST) or Delete replaced. Until its flush is done, a value Put is only in
// memory: Pending returns it, so that a reader that must see what was
// acknowledged (the next session of a profile) does not take the older
// document on disk for the latest.
//
// # Concurrency
//
// Store and WriteBehind are safe for concurrent use. The writes of one
// name (Save, Delete, a write-behind flush) are serialised; operations on
// different names never wait for each other. A Load never waits for a
// write in progress, even one hung on the disk (an fsync that does not
// return): a rename replaces the file whole, so it reads the last
// document written. Only a Load that finds a bad file while a write of it
// is in progress answers an error at once rather than wait for the write
// that replaces it. One process per state directory: the service's main
// holds Lock, so a second process on it is refused.
//
// # Locks
//
// The package's lock order is written here and only here:
//
//  1. WriteBehind.passTurn, held by a pass's own goroutine across the
//     pass (disk I/O included), so that a pass done means every Put made
//     before it started is on disk; no caller waits for it (Flush and
//     Close wait for their pass with the write timeout as deadline);
//  2. then either WriteBehind.mu, never held across I/O, or one
//     document's lock (nameLock), held across that document's I/O and
//     never two at once;
//  3. then one stripe's mu, a leaf that guards the stripe's maps and is
//     never held across I/O.
//
// WriteBehind.mu and a stripe are never held together, which is why Put
// and Pending never wait for a flush.
package store
