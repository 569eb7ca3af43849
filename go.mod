module github.com/hapticd/hapticd

go 1.26.8

require (
	github.com/asynkron/protoactor-go v0.0.0-20240822202345-3c0e61ca19c9 // indirect
	github.com/gorilla/websocket v1.5.3 // indirect
	github.com/julienschmidt/httprouter v1.3.0 // indirect
	github.com/karalabe/hid v1.0.1-0.20240306101548-573246063e52 // indirect
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/rs/zerolog v1.35.1 // indirect
	go.bug.st/serial v1.8.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
