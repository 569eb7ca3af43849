package sim

import "math"

// splitMix is a tiny seeded generator (SplitMix64). It lives inside each
// device, so devices never share state and stepping never allocates.
type splitMix struct{ state uint64 }

func newSplitMix(seed int64, stream uint64) splitMix {
	s := splitMix{state: uint64(seed) ^ stream*0x9E3779B97F4A7C15}
	s.next() // decorrelate neighbouring seeds
	return s
}

func (s *splitMix) next() uint64 {
	s.state += 0x9E3779B97F4A7C15
	z := s.state
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}

// float returns a uniform value in [0, 1).
func (s *splitMix) float() float64 { return float64(s.next()>>11) / (1 << 53) }

// between returns a uniform value in [lo, hi).
func (s *splitMix) between(lo, hi float64) float64 { return lo + (hi-lo)*s.float() }

// inBall returns a uniform point in the ball of radius r around the origin
// (rejection sampling: about two draws on average, bounded here).
func (s *splitMix) inBall(r float64) [3]float64 {
	for i := 0; i < 64; i++ {
		p := [3]float64{s.between(-1, 1), s.between(-1, 1), s.between(-1, 1)}
		if p[0]*p[0]+p[1]*p[1]+p[2]*p[2] <= 1 {
			return [3]float64{p[0] * r, p[1] * r, p[2] * r}
		}
	}
	return [3]float64{}
}

// smoothWalk glides from one waypoint to the next with a smoothstep, so the
// path and its velocity are continuous: a hand does not teleport.
type smoothWalk struct {
	from, to     [3]float64
	startS, durS float64
}

// due reports whether the current segment has ended at time tS, so the
// caller must push the next waypoint.
func (w *smoothWalk) due(tS float64) bool { return tS >= w.startS+w.durS }

// push starts the next segment toward next, lasting durS, right where the
// previous one ended.
func (w *smoothWalk) push(next [3]float64, durS float64) {
	w.startS += w.durS
	w.from, w.to = w.to, next
	w.durS = durS
}

// at returns the point and its rate of change (per second) at time tS.
func (w *smoothWalk) at(tS float64) (p, v [3]float64) {
	u := (tS - w.startS) / w.durS
	u = math.Min(math.Max(u, 0), 1)
	s := u * u * (3 - 2*u)
	ds := 6 * u * (1 - u) / w.durS
	for i := range p {
		d := w.to[i] - w.from[i]
		p[i] = w.from[i] + d*s
		v[i] = d * ds
	}
	return p, v
}
