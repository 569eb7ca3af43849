package cluster

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// peerServer serves protoactor's stream on a loopback port with answer as
// its handler; nil answer: nothing listens there (a process that died).
func peerServer(t *testing.T, answer grpc.StreamHandler) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if answer == nil {
		l.Close()
		return addr
	}
	srv := grpc.NewServer(grpc.UnknownServiceHandler(answer))
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return addr
}

// connectResponse is protoactor's answer to a connect request.
func connectResponse() *remote.RemoteMessage {
	return &remote.RemoteMessage{MessageType: &remote.RemoteMessage_ConnectResponse{ConnectResponse: &remote.ConnectResponse{}}}
}

// TestFailedHandshakeClosesItsConnection runs protoactor's endpoint
// writer's handshake (open the Receive stream, send a connect request,
// read the answer) against peers that fail it in each way, on a real
// gRPC connection with the dial options the link gives protoactor: a
// connection whose handshake failed is shut down (protoactor dials a new
// one per attempt and closes only the last; the others redialled a dead
// peer forever), and one whose handshake succeeded is left to its owner.
func TestFailedHandshakeClosesItsConnection(t *testing.T) {
	cases := []struct {
		name     string
		answer   grpc.StreamHandler
		shutdown bool
	}{
		{"nothing listens", nil, true},
		{"the stream is refused", func(any, grpc.ServerStream) error {
			return status.Error(codes.Unavailable, "going away")
		}, true},
		{"the peer answers something else", func(_ any, s grpc.ServerStream) error {
			if err := s.RecvMsg(&remote.RemoteMessage{}); err != nil {
				return err
			}
			if err := s.SendMsg(&remote.RemoteMessage{MessageType: &remote.RemoteMessage_DisconnectRequest{DisconnectRequest: &remote.DisconnectRequest{}}}); err != nil {
				return err
			}
			<-s.Context().Done()
			return nil
		}, true},
		{"the peer answers, then the stream ends", func(_ any, s grpc.ServerStream) error {
			if err := s.RecvMsg(&remote.RemoteMessage{}); err != nil {
				return err
			}
			if err := s.SendMsg(connectResponse()); err != nil {
				return err
			}
			return status.Error(codes.Unavailable, "going away")
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			addr := peerServer(t, tc.answer)
			cc, err := grpc.Dial(addr, grpc.WithTransportCredentials(insecure.NewCredentials()), closeFailedHandshakes)
			if err != nil {
				t.Fatal(err)
			}
			defer cc.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			// What protoactor's endpoint writer does on each attempt.
			handshake := func() error {
				stream, err := remote.NewRemotingClient(cc).Receive(ctx)
				if err != nil {
					return err
				}
				if err := stream.Send(&remote.RemoteMessage{}); err != nil {
					return err
				}
				m, err := stream.Recv()
				if err != nil {
					return err
				}
				if m.GetConnectResponse() == nil {
					return status.Error(codes.Internal, "invalid connect response")
				}
				_, err = stream.Recv() // the answering peer then ends the stream
				return err
			}
			if err := handshake(); err == nil {
				t.Fatal("the handshake succeeded against a peer that fails it")
			}
			if !tc.shutdown {
				// Left to its owner: give gRPC a moment to act on the
				// ended stream, then the connection must still be its own.
				time.Sleep(100 * time.Millisecond) // nothing to wait for: the check is that nothing happens
				if st := cc.GetState(); st == connectivity.Shutdown {
					t.Fatalf("the connection of a handshake that succeeded was shut down")
				}
				return
			}
			for st := cc.GetState(); st != connectivity.Shutdown; st = cc.GetState() {
				if !cc.WaitForStateChange(ctx, st) {
					t.Fatalf("the connection of a failed handshake is still %v after 20 s: it redials the peer for good", st)
				}
			}
		})
	}
}
