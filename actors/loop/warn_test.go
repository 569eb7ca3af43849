package loop

import (
	"context"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors/loop/looptest"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/hwtest"
)

// slowArm takes at least 3 ms per exchange, so a 1 ms loop cannot keep its
// rate on any machine: the rate warning must come.
type slowArm struct{ *looptest.Driver }

func (a slowArm) Exchange(cmd *hw.Command, st *hw.State) error {
	end := time.Now().Add(3 * time.Millisecond)
	for time.Now().Before(end) {
	}
	return a.Driver.Exchange(cmd, st)
}

func TestRateWarningReachesTheOwner(t *testing.T) {
	t.Run("RunLocked", func(t *testing.T) {
		var log eventLog
		d := NewDevice(slowArm{looptest.NewArm()}, DeviceOptions{PeriodNs: ms, OnEvent: log.add})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- RunLocked(ctx, d) }()
		hwtest.Eventually(t, 20*time.Second, "a rate warning", func() bool { return log.count(EventRateWarning) > 0 })
		cancel()
		<-done
		log.mu.Lock()
		defer log.mu.Unlock()
		for _, e := range log.events {
			if e.Kind == EventRateWarning && (e.TargetNs != ms || e.PeriodP99Ns < 3*ms) {
				t.Fatalf("warning %+v, want target 1 ms and p99 of at least 3 ms", e)
			}
		}
		if st := d.Stats(); st.Overruns == 0 {
			t.Fatalf("an overloaded loop counted no overruns: %+v", st)
		}
	})
	t.Run("Scheduler", func(t *testing.T) {
		var log eventLog
		s := NewScheduler(SchedulerOptions{PeriodNs: ms, Shards: 1, OnRateWarning: log.add})
		s.Add(NewDevice(slowArm{looptest.NewArm()}, DeviceOptions{}))
		s.Start()
		defer s.Stop()
		hwtest.Eventually(t, 20*time.Second, "a rate warning", func() bool { return log.count(EventRateWarning) > 0 })
	})
}
