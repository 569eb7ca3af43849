// Package wire holds the protobuf messages that hapticd processes of a lab
// exchange over protoactor's remote. The generated code is committed, so
// building needs no protoc. After editing hapticd.proto, regenerate with
// protoc 3.21.12 (Debian protobuf-compiler) and protoc-gen-go v1.36.12
// (go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12) on
// PATH: cd actors/cluster/wire && go generate.
package wire

//go:generate protoc --go_out=. --go_opt=paths=source_relative hapticd.proto
