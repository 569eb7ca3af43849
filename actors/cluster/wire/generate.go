// Package wire holds the protobuf messages that hapticd processes of a lab
// exchange over protoactor's remote. The generated code is committed, so
// building needs no protoc; regenerate after editing hapticd.proto with
// protoc (Debian protobuf-compiler) and protoc-gen-go v1.36.12.
package wire

//go:generate protoc --go_out=. --go_opt=paths=source_relative hapticd.proto
