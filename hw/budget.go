package hw

import (
	"math"
	"time"
)

// DefaultPeriodS is the loop period, in seconds, that drivers assume when
// they are not told one: 1 ms, a 1 kHz loop.
const DefaultPeriodS = 0.001

// maxSilenceS is how long a device may miss every reply before its driver
// gives up: 20 ms. A scheduling hiccup on a busy host, or a USB bus that
// is briefly slow, costs a few ticks and must not unplug the device; a
// device that stays silent for 20 ms has been unplugged or has crashed,
// and the force it last took must not be left standing for longer.
const maxSilenceS = 0.020

// ReplyBudget returns how long one lock-step exchange may wait for its
// reply at a loop period of periodS seconds (80% of the period, so a late
// reply never costs the next tick) and how many replies in a row may be
// missed before the driver fails (enough to cover 20 ms of silence, and at
// least 3). A period that is not positive and finite is taken as
// DefaultPeriodS. It is pure, so every driver derives the same budget
// from the same period.
func ReplyBudget(periodS float64) (timeout time.Duration, maxMisses int) {
	if !(periodS > 0) || math.IsInf(periodS, 1) {
		periodS = DefaultPeriodS
	}
	timeout = time.Duration(0.8 * periodS * float64(time.Second))
	// The clamp keeps the conversion defined for absurdly short periods.
	n := math.Ceil(maxSilenceS / periodS)
	return timeout, int(min(max(n, 3), math.MaxInt32))
}
