package bench

import (
	"github.com/hapticd/hapticd/bench/echoserver"
)

// padTo appends spaces to the state frame until it is n bytes long, so the
// echo baseline moves as many bytes per frame as hapticd did on average.
func (f *capturedFrames) padTo(n int) {
	for len(f.state) < n {
		f.state = append(f.state, ' ')
	}
}

// echoServer is the echo baseline run inside this process.
type echoServer struct {
	url string
	srv *echoserver.Server
}

// startEcho serves frames on a free 127.0.0.1 port (echoserver.Start).
func startEcho(frames capturedFrames) (*echoServer, error) {
	s, err := echoserver.Start(frames.inventory, frames.state)
	if err != nil {
		return nil, err
	}
	return &echoServer{url: s.URL, srv: s}, nil
}

func (e *echoServer) close() { e.srv.Close() }
