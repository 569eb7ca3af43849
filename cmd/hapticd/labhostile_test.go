//go:build linux

package main

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// TestLabHostilePeer sends what a broken or hostile peer could put on a
// lab process's cluster port - batches that name a type this build does
// not know (a newer build's message), indexes past their tables, garbage
// for a known message, and the two RPCs protoactor leaves unimplemented -
// to a node and to the gateway. protoactor panics on each of them in its
// gRPC handler; neither process may go down, and the lab must go on
// working: the gateway still serves the node's arm and drives it.
func TestLabHostilePeer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs three processes")
	}
	lab := newTestLab(t, buildBinary(t), labHostA, labHostB, labHostGW)
	a, _, gw, armA, _ := lab.twoNodes(t)

	target := func(m *labMember, name string) []*actor.PID {
		return []*actor.PID{{Address: m.addr["cluster"], Id: name}}
	}
	batches := []struct {
		name  string
		batch func(m *labMember, actorName string) *remote.MessageBatch
	}{
		{"type this build does not know", func(m *labMember, name string) *remote.MessageBatch {
			return &remote.MessageBatch{TypeNames: []string{"hapticd.wire.FromANewerBuild"}, Targets: target(m, name),
				Envelopes: []*remote.MessageEnvelope{{TypeId: 0, Target: 0}}}
		}},
		{"type id past the type names", func(m *labMember, name string) *remote.MessageBatch {
			return &remote.MessageBatch{TypeNames: []string{"actor.PID"}, Targets: target(m, name),
				Envelopes: []*remote.MessageEnvelope{{TypeId: 7, Target: 0}}}
		}},
		{"target past the targets", func(m *labMember, name string) *remote.MessageBatch {
			return &remote.MessageBatch{TypeNames: []string{"actor.PID"}, Targets: target(m, name),
				Envelopes: []*remote.MessageEnvelope{{TypeId: 0, Target: 3}}}
		}},
		{"sender past the senders", func(m *labMember, name string) *remote.MessageBatch {
			return &remote.MessageBatch{TypeNames: []string{"actor.PID"}, Targets: target(m, name),
				Envelopes: []*remote.MessageEnvelope{{TypeId: 0, Target: 0, Sender: 5}}}
		}},
		{"unknown serializer", func(m *labMember, name string) *remote.MessageBatch {
			return &remote.MessageBatch{TypeNames: []string{"actor.PID"}, Targets: target(m, name),
				Envelopes: []*remote.MessageEnvelope{{TypeId: 0, Target: 0, SerializerId: 9}}}
		}},
		{"garbage for a known message", func(m *labMember, name string) *remote.MessageBatch {
			return &remote.MessageBatch{TypeNames: []string{"hapticd.wire.Command"}, Targets: target(m, name),
				Envelopes: []*remote.MessageEnvelope{{TypeId: 0, Target: 0, MessageData: []byte{0xff, 0xff, 0xff, 0xff}}}}
		}},
	}
	for _, victim := range []struct {
		m     *labMember
		actor string
	}{{a, "hapticd-node"}, {gw, "hapticd-gateway"}} {
		conn, err := grpc.Dial(victim.m.addr["cluster"], grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		client := remote.NewRemotingClient(conn)
		for _, tt := range batches {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			stream, err := client.Receive(ctx)
			if err != nil {
				cancel()
				t.Fatalf("%s: open a stream to %s: %v", tt.name, victim.m.host, err)
			}
			if err := stream.Send(&remote.RemoteMessage{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: tt.batch(victim.m, victim.actor)}}); err != nil && !errors.Is(err, io.EOF) {
				t.Logf("%s: send to %s: %v", tt.name, victim.m.host, err)
			}
			// The process ends the stream (an error), or dies; either way
			// Recv returns.
			_, err = stream.Recv()
			cancel()
			t.Logf("%s to %s: the stream ended with %v", tt.name, victim.m.host, err)
			if _, err := armIDs(victim.m); err != nil {
				t.Fatalf("%s to %s: the process no longer answers GET /devices: %v", tt.name, victim.m.host, err)
			}
		}
		for name, call := range map[string]func(context.Context) error{
			"ListProcesses": func(ctx context.Context) error {
				_, err := client.ListProcesses(ctx, &remote.ListProcessesRequest{})
				return err
			},
			"GetProcessDiagnostics": func(ctx context.Context) error {
				_, err := client.GetProcessDiagnostics(ctx, &remote.GetProcessDiagnosticsRequest{})
				return err
			},
		} {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := call(ctx)
			cancel()
			if err == nil {
				t.Errorf("%s on %s answered without error; protoactor does not implement it", name, victim.m.host)
			}
			if _, err := armIDs(victim.m); err != nil {
				t.Fatalf("%s on %s: the process no longer answers GET /devices: %v", name, victim.m.host, err)
			}
		}
	}

	// The lab still works: node a's arm is on the gateway and a force
	// through the gateway reaches it.
	waitLab(t, 10*time.Second, "node a's arm on the gateway after the hostile peer", func() bool {
		ids, err := armIDs(gw)
		return err == nil && ids[armA]
	})
	stop := forceThrough(t, gw, armA, 1.5)
	defer stop()
	waitLab(t, 10*time.Second, "the gateway's force on node a's arm after the hostile peer", func() bool {
		return underGatewayForce(labArms(t, a)[armA], 1.5)
	})
}
