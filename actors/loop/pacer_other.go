//go:build !linux && !windows

package loop

// osTimer is empty here: the runtime's timers are all there is.
type osTimer struct{}

// stop has no timer to stop.
func (*osTimer) stop() {}

// sleepUntil sleeps until the monotonic time deadlineNs with time.Sleep,
// which is coarser than Linux's clock_nanosleep or a Windows
// high-resolution timer; the spin after it keeps ticks on their deadlines
// at a higher CPU cost.
func (p *Pacer) sleepUntil(deadlineNs int64) { sleepRuntime(deadlineNs) }

// tuneThread has nothing to tune here (macOS, the BSDs).
func tuneThread(int) (realtime bool, restore func()) { return false, func() {} }

// pacerKeepsP: this pacer sleeps through the runtime, which frees the P.
const pacerKeepsP = false
