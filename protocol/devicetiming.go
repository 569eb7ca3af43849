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
// loop may apply on the way (force scale, force gate, clamp, ramp), and in
// the sign of z, which they keep too: x/z is (i+1)/forceCodeCols of a
// column i, y/z is (r+1)/forceCodeRows of a row r.
//
// # Blends
//
// The loop can also put a blend of two commands on the wire: the slew
// limit, on a tick that comes a few microseconds after a late one, moves
// the output only part of the way from one code to the next. A blend of
// two forces with z of one sign lies, in ratios, on the segment between
// their two points; with opposite signs, on the rest of the line through
// them. So the codes are laid out for blends of nearby commands to read as
// one of the two, a command between them or before them, or no code:
// command after command either keeps z's sign and moves to a neighbouring
// point of the grid, or stays on its point and flips the sign. Row r runs
// through its columns with z's sign (−1)^r (forward on even rows, back on
// odd ones), then repeats its last point with the other sign (the flip),
// and row r+1 starts on the column where that flip stands. A blend of two
// commands at most 5 apart never reads as a later command within
// forceCodeCols of the later one (TestForceCodeBlendsReadAsNoLaterCommand);
// the old layout, whose sign flipped every command, read blends of two
// consecutive commands as commands not sent yet. The sign flip once a row
// (every 257 commands, a quarter second at 1 kHz) pushes the arm back and
// forth instead of away.
const (
	forceCodeRefN  = 0.125 // |z|, N: a light push, well inside any clamp
	forceCodeCols  = 256
	forceCodeRows  = 1 << 16
	forceCodeRowLn = forceCodeCols + 1 // the columns, then the flip
	// ForceCodeMax is one more than the largest sequence number a force
	// can carry (16,842,752: 4.6 hours of commands at 1 kHz); the probe
	// stops there rather than wrap.
	ForceCodeMax = forceCodeRowLn * forceCodeRows
)

// ForceCode returns the force, in N, that carries seq (seq < ForceCodeMax;
// a higher one is taken modulo ForceCodeMax).
func ForceCode(seq uint32) [3]float64 {
	seq %= ForceCodeMax
	r, c := seq/forceCodeRowLn, seq%forceCodeRowLn
	z := forceCodeRefN
	if r%2 == 1 {
		z = -z
	}
	col := forceCodeRowEnd(r)
	if c < forceCodeCols {
		col = c
		if r%2 == 1 {
			col = forceCodeCols - 1 - c
		}
	} else {
		z = -z // the flip: the row's last point, the other sign
	}
	return [3]float64{z * float64(col+1) / forceCodeCols, z * float64(r+1) / forceCodeRows, z}
}

// forceCodeRowEnd is the column where row r ends and flips.
func forceCodeRowEnd(r uint32) uint32 {
	if r%2 == 1 {
		return 0
	}
	return forceCodeCols - 1
}

// ReadForceCode returns the sequence number a force carries, and false for
// a force that is no code: zero, components off the code's grid by more
// than a quarter step, or a point whose sign of z is not its row's (but
// for the row's flip).
func ReadForceCode(x, y, z float64) (uint32, bool) {
	if !(z > 1e-6 || z < -1e-6) {
		return 0, false
	}
	step := func(v float64, span uint32) (uint32, bool) {
		r := v / z * float64(span)
		if !(r >= 0.5 && r <= float64(span)+0.5) {
			return 0, false
		}
		n := uint32(r + 0.5)
		if d := r - float64(n); d > 0.25 || d < -0.25 {
			return 0, false
		}
		return n - 1, true
	}
	col, ok1 := step(x, forceCodeCols)
	r, ok2 := step(y, forceCodeRows)
	if !ok1 || !ok2 {
		return 0, false
	}
	if (z > 0) == (r%2 == 0) { // the row's own sign
		c := col
		if r%2 == 1 {
			c = forceCodeCols - 1 - col
		}
		return r*forceCodeRowLn + c, true
	}
	if col != forceCodeRowEnd(r) {
		return 0, false
	}
	return r*forceCodeRowLn + forceCodeCols, true
}

// ForceArrival is the first force frame at an arm stand-in that carried a
// coded force (ForceCode): its sequence number, and when it arrived on
// CLOCK_MONOTONIC in ns, the clock every process on the machine shares.
type ForceArrival struct {
	Seq    uint32 `json:"seq"`
	MonoNs int64  `json:"mono_ns"`
}

// ForceArrivals is what `hapticd device-standin` prints for "arrivals":
// every change of coded force at the arm, in arrival order
// (ForceArrivalLog). A reader keeps only codes sent before they arrived,
// and of those only the ones higher than every code before them: a lower
// code (a ramp winding the last one down, a blend that reads as an earlier
// command) is no new command, and a code not sent yet is no command at
// all.
type ForceArrivals struct {
	Arrivals []ForceArrival `json:"arrivals"`
}

// ForceArrivalLog lists the changes of coded force at an arm: a frame is
// an arrival when it carries a code (ReadForceCode) other than the last
// one listed. Frames that carry no code change nothing. It does no
// filtering beyond that, so that one frame misread as a high code hides no
// arrival after it: the reader, who knows the sends, filters.
type ForceArrivalLog struct {
	Arrivals []ForceArrival
	last     uint32
	any      bool
}

// Frame notes a force frame that arrived at monoNs (CLOCK_MONOTONIC).
func (l *ForceArrivalLog) Frame(monoNs int64, x, y, z float64) {
	seq, ok := ReadForceCode(x, y, z)
	if !ok || (l.any && seq == l.last) {
		return
	}
	l.last, l.any = seq, true
	l.Arrivals = append(l.Arrivals, ForceArrival{Seq: seq, MonoNs: monoNs})
}
