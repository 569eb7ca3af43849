package protocol

// DeviceTiming is what `hapticd device-standin` prints: a host loop's
// period as the arm saw it, from the arrival time of every force frame. Load
// generators set the service's figures beside a bare host loop's.
type DeviceTiming struct {
	Frames      uint64  `json:"frames"`
	TargetUs    float64 `json:"target_us"`
	PeriodUsP50 float64 `json:"period_us_p50"`
	PeriodUsP99 float64 `json:"period_us_p99"`
	PeriodUsMax float64 `json:"period_us_max"`
	// Late counts periods over 1.5 × target: ticks on which the arm got no
	// fresh command when it should have.
	Late uint64 `json:"late"`
}

// A coded force carries a sequence number from a client to an arm stand-in,
// so that `hapticbench device` can time each command from the client's
// send to the force frame the arm receives. The number is in the ratios of
// the components to z, which survive the uniform scalings the service's
// loop may apply on the way (force scale, force gate, clamp, ramp): x/z and
// y/z carry 12 bits each, (n+1)/4096 of z. The sign alternates with the
// sequence number, so that a stream of coded forces pushes the arm back and
// forth instead of away.
const (
	forceCodeRefN = 0.125 // |z|, N: a light push, well inside any clamp
	forceCodeBits = 12
	forceCodeSpan = 1 << forceCodeBits
	// ForceCodeMax is one more than the largest sequence number a force
	// can carry (2^24: 4.6 hours of commands at 1 kHz).
	ForceCodeMax = 1 << (2 * forceCodeBits)
)

// ForceCode returns the force, in N, that carries seq (seq < ForceCodeMax;
// higher bits are dropped).
func ForceCode(seq uint32) [3]float64 {
	lo, hi := seq%forceCodeSpan, (seq/forceCodeSpan)%forceCodeSpan
	z := forceCodeRefN
	if seq%2 == 1 {
		z = -z
	}
	return [3]float64{z * float64(lo+1) / forceCodeSpan, z * float64(hi+1) / forceCodeSpan, z}
}

// ReadForceCode returns the sequence number a force carries, and false for
// a force that is no code (zero, or components off the code's grid by more
// than a quarter step).
func ReadForceCode(x, y, z float64) (uint32, bool) {
	if !(z > 1e-6 || z < -1e-6) {
		return 0, false
	}
	step := func(v float64) (uint32, bool) {
		r := v / z * forceCodeSpan
		n := uint32(r + 0.5)
		if r < 0.5 || r > forceCodeSpan+0.5 {
			return 0, false
		}
		if d := r - float64(n); d > 0.25 || d < -0.25 {
			return 0, false
		}
		return n - 1, true
	}
	lo, ok1 := step(x)
	hi, ok2 := step(y)
	return hi*forceCodeSpan + lo, ok1 && ok2
}

// ForceArrival is the first force frame at an arm stand-in that carried a
// coded force (ForceCode): its sequence number, and when it arrived on
// CLOCK_MONOTONIC in ns, the clock every process on the machine shares.
type ForceArrival struct {
	Seq    uint32 `json:"seq"`
	MonoNs int64  `json:"mono_ns"`
}

// ForceArrivals is what `hapticd device-standin` prints for "arrivals":
// every coded force that reached the arm, in arrival order, each once and
// each with a higher sequence number than the one before (a code arriving
// after a higher one, as a ramp winding the last one down, is no new
// command).
type ForceArrivals struct {
	Arrivals []ForceArrival `json:"arrivals"`
}
