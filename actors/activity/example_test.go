package activity_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hapticd/hapticd/actors/activity"
	"github.com/hapticd/hapticd/protocol/event"
)

func Example() {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	defer system.Shutdown()
	// A run numbers its events from one past its start time in
	// microseconds, so that a client's resume point from an earlier run is
	// never taken for this run's; this clock stands still at 2026-01-02.
	started := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a, err := activity.Start(system, activity.Options{RingSize: 1024, Clock: func() time.Time { return started }})
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
	// 1767323045000001 device-connected
	// 1767323045000002 http-route-deprecated
	// 1767323045000003 device-disconnected
	// POST /force_scale used 1 time(s) from map[127.0.0.1:1] ; use POST /settings/devices/force_scale
}
