package events_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors/activity"
	"github.com/hapticd/hapticd/protocol/event"
	"github.com/hapticd/hapticd/transport/events"
)

func ExampleServer() {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	defer system.Shutdown()
	// A run numbers its events from one past its start time in
	// microseconds; this clock stands still at 2026-01-02.
	started := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a, err := activity.Start(system, activity.Options{Clock: func() time.Time { return started }})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Stop()
	a.Publish(event.DeviceConnected("inverse", "arm3", "049D"))

	// In hapticd the browser-safety guard wraps the server.
	srv := events.NewServer(a, zerolog.Nop())
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer srv.Close()

	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(hs.URL, "http")+"/?since=0", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	_, frame, err := c.ReadMessage()
	if err != nil {
		fmt.Println(err)
		return
	}
	// Everything but the time, which changes.
	s := string(frame)
	fmt.Println(s[:strings.Index(s, `"time"`)] + s[strings.Index(s, `"name"`):])
	// Output:
	// {"seq":1767323045000001,"name":"device-connected","category":"device","level":"notice","data":{"device_family":"inverse","device_type":"arm3","device_id":"049D"},"message":"arm3 049D (inverse) connected"}
}
