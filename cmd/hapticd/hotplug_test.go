package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/actors/store"
	"github.com/hapticd/hapticd/actors/store/storetest"
	"github.com/hapticd/hapticd/hw/discovery"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/sim"
	"github.com/hapticd/hapticd/protocol"
)

// An arm replugged while the config write it left with is held on the
// disk comes back only once the disk answers; an arm plugged in meanwhile
// is picked up at once (review36: the watcher's handler waited on its one
// goroutine for the first arm's addition, so the second was not picked up
// for as long as the disk held the write).
func TestHotplugPicksAnArmUpWhileAnotherWaitsForItsLeavingWrite(t *testing.T) {
	held := storetest.New()
	release := held.Release
	svc, err := actors.Start(actors.Options{StateDir: t.TempDir(), WriteTimeout: 300 * time.Millisecond, Log: zerolog.Nop(), SimShards: 1,
		WrapStore: func(s actors.Store) actors.Store { return held.Over(s.(*store.Store)) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		release()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := svc.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	arm := func(index int) *sim.Arm { return sim.NewArm(sim.ArmOptions{Index: index, PeriodS: 0.001}) }
	listed := func(id string) *actors.Device { return svc.Devices().Find(protocol.TypeArm, id) }
	h := &hardware{log: zerolog.Nop(), watcher: discovery.NewWatcher(discovery.WatcherOptions{})}
	found := &foundHandler{h: h, svc: svc}

	a, b := arm(0).Info().ID, arm(1).Info().ID
	found.DeviceFound(arm(0))
	hwtest.Eventually(t, 10*time.Second, "the first arm listed", func() bool { return listed(a) != nil })
	held.HoldEvery()
	go func() { _, _ = svc.SetEntry(listed(a), 0, protocol.Handedness("left")) }()
	select {
	case <-held.Entered():
	case <-time.After(10 * time.Second):
		t.Fatal("the write never reached its commit point")
	}
	svc.RemoveDevice(listed(a), errors.New("unplugged"))
	hwtest.Eventually(t, 10*time.Second, "the first arm gone", func() bool { return listed(a) == nil })

	// As the watcher's Run goroutine calls them: one at a time.
	go func() {
		found.DeviceFound(arm(0))
		found.DeviceFound(arm(1))
	}()
	hwtest.Eventually(t, 10*time.Second, "the arm plugged in while the first waits for its write", func() bool { return listed(b) != nil })
	if listed(a) != nil {
		t.Error("the first arm is back while the write it left with is held on the disk")
	}
	release()
	hwtest.Eventually(t, 10*time.Second, "the first arm back once the disk answered", func() bool { return listed(a) != nil })
}
