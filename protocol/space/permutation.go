package space

import (
	"fmt"
	"strings"
)

// Permutation is a basis: a signed permutation of the device axes. Its
// i-th letter names the device axis that becomes application axis i, with
// its sign: "XZY" makes application Y the device Z; "-XZY" also mirrors X.
// It is a comparable value and its zero value is the identity "XYZ".
type Permutation struct {
	order uint8 // index into axisOrders
	neg   uint8 // bit i set: application axis i is the negated device axis
}

// axisOrders lists the six orders of the three axes; index 0 is the
// identity so that the zero Permutation is "XYZ". Never written.
var axisOrders = [6][3]uint8{
	{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0},
}

const axisLetters = "XYZ"

// permutationGrammar is quoted by every parse error so a client learns the
// whole rule from one mistake.
const permutationGrammar = `each of X, Y and Z exactly once, each optionally prefixed by + or - (e.g. "XZY", "-XZY", "+X-Z+Y")`

// IdentityPermutation returns the basis "XYZ", which changes nothing.
func IdentityPermutation() Permutation { return Permutation{} }

// ParsePermutation parses a basis such as "XZY", "-XZY" or "+X-Z+Y".
// Letters are upper case; no spaces.
func ParsePermutation(s string) (Permutation, error) {
	var axes [3]uint8
	var neg uint8
	var seen [3]bool
	i := 0
	for term := range 3 {
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			if s[i] == '-' {
				neg |= 1 << term
			}
			i++
		}
		if i >= len(s) {
			return Permutation{}, fmt.Errorf("space: basis %q is too short: want %s", s, permutationGrammar)
		}
		a := strings.IndexByte(axisLetters, s[i])
		if a < 0 {
			return Permutation{}, fmt.Errorf("space: basis %q has %q at position %d where an axis letter belongs: want %s", s, s[i], i, permutationGrammar)
		}
		if seen[a] {
			return Permutation{}, fmt.Errorf("space: basis %q names %c twice: want %s", s, s[i], permutationGrammar)
		}
		seen[a] = true
		axes[term] = uint8(a)
		i++
	}
	if i != len(s) {
		return Permutation{}, fmt.Errorf("space: basis %q has %q after the third axis: want %s", s, s[i:], permutationGrammar)
	}
	for o, order := range axisOrders {
		if order == axes {
			return Permutation{order: uint8(o), neg: neg}, nil
		}
	}
	// Unreachable: three distinct letters are always one of the six orders.
	return Permutation{}, fmt.Errorf("space: basis %q: want %s", s, permutationGrammar)
}

// AllPermutations returns the 48 bases (6 orders × 8 sign patterns) in a
// fixed order, starting with the identity. The slice is the caller's.
func AllPermutations() []Permutation {
	all := make([]Permutation, 0, len(axisOrders)*8)
	for o := range axisOrders {
		for neg := range 8 {
			all = append(all, Permutation{order: uint8(o), neg: uint8(neg)})
		}
	}
	return all
}

// String returns the canonical spelling: no "+" signs, e.g. "-XZY".
func (p Permutation) String() string {
	var b [6]byte
	n := 0
	for i := range 3 {
		if p.neg&(1<<i) != 0 {
			b[n] = '-'
			n++
		}
		b[n] = axisLetters[p.axes()[i]]
		n++
	}
	return string(b[:n])
}

// Apply maps a device-frame vector into the basis frame.
func (p Permutation) Apply(dev Vec3) Vec3 {
	m := p.matrix()
	return mulVec(&m, dev)
}

func (p Permutation) axes() [3]uint8 {
	return axisOrders[int(p.order)%len(axisOrders)]
}

// matrix returns P with basis = P·device.
func (p Permutation) matrix() mat3 {
	var m mat3
	for i, a := range p.axes() {
		m[i][a] = 1
		if p.neg&(1<<i) != 0 {
			m[i][a] = -1
		}
	}
	return m
}
