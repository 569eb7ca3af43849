package activity_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hapticd/hapticd/actors/activity"
	"github.com/hapticd/hapticd/protocol/event"
)

func Example() {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	defer system.Shutdown()
	a, err := activity.Start(system, activity.Options{RingSize: 1024})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Stop()

	a.Publish(event.DeviceConnected("inverse", "arm3", "049D"))
	a.Publish(event.HTTPRouteDeprecated("POST /force_scale", "POST /settings/devices/force_scale", "127.0.0.1:5000"))

	// Replay what the ring holds after seq 0, then live.
	sub, err := a.Subscribe(0, true)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sub.Close()
	a.Publish(event.DeviceDisconnected("inverse", "arm3", "049D"))
	for range 3 {
		e, err := sub.Next(context.Background())
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(e.Seq, e.Name)
	}

	u, err := a.Usage()
	if err != nil {
		fmt.Println(err)
		return
	}
	r := u.Routes[0]
	fmt.Println(r.Name, "used", r.Count, "time(s) from", r.ByRemote, "; use", r.Replacement)
	// Output:
	// 1 device-connected
	// 2 http-route-deprecated
	// 3 device-disconnected
	// POST /force_scale used 1 time(s) from map[127.0.0.1:1] ; use POST /settings/devices/force_scale
}
