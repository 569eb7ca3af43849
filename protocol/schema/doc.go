// Package schema generates the machine-readable schema of hapticd's 3.x
// wire protocol: JSON Schema 2020-12 documents for every client message,
// frame, event and HTTP body, built from protocol's own tables (entries,
// settings, commands, events, deprecations, errors, type keys) rather than
// written a second time. The reference says the machine-readable schema
// covers 3.1 payloads and later, so it describes the 3.x shapes; the legacy
// 3.0 format is not covered.
//
// # Two flavours
//
// What the service writes (frames, events, answers) is described with
// closed objects ("additionalProperties": false): a member added to an
// encoder without its schema fails validation, and the transport tests
// validate every frame, event and answer they see. What the service accepts
// (client messages, request bodies) is described as it is accepted: known
// members are checked, unknown members are allowed, because the service
// ignores them with a warning instead of refusing the message. Names ending
// in ".input" are accepted shapes.
//
// # Use
//
// New builds a Set from the type table the service runs with; a transport
// publishes its own documents into it (Set.Publish), then serves each
// published name as a self-contained document (Set.Document) and puts
// Set.Definitions into its OpenAPI document. A Set is immutable once
// served and safe for concurrent readers. The package does no I/O.
package schema
