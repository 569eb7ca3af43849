package protocol

import (
	"strconv"
	"strings"
)

// VersionSatisfies checks version ("3.5") against a constraint such as
// ">=3.5", "3.x", "^3.1", "~3.5", "3" or ">=3.1,<4" (comma- or
// space-separated terms, all of which must hold). valid is false when the
// constraint cannot be read.
func VersionSatisfies(version, constraint string) (match, valid bool) {
	have, ok := parseVersion(version)
	if !ok {
		return false, false
	}
	terms := strings.FieldsFunc(constraint, func(r rune) bool { return r == ',' || r == ' ' })
	if len(terms) == 0 {
		return false, false
	}
	match = true
	for _, term := range terms {
		op := ""
		for _, o := range []string{">=", "<=", "==", "!=", ">", "<", "=", "^", "~"} {
			if strings.HasPrefix(term, o) {
				op = o
				break
			}
		}
		rest := strings.TrimPrefix(strings.TrimSpace(term[len(op):]), "v")
		want, parts, _, ok := parseVersionPattern(rest)
		if !ok {
			return false, false
		}
		c := compareVersions(have, want)
		var t bool
		switch op {
		case ">=":
			t = c >= 0
		case "<=":
			t = c <= 0
		case ">":
			t = c > 0
		case "<":
			t = c < 0
		case "!=":
			t = !prefixMatch(have, want, parts)
		case "^": // same major, at least want
			t = have[0] == want[0] && c >= 0
		case "~": // same major.minor, at least want
			t = have[0] == want[0] && (parts < 2 || have[1] == want[1]) && c >= 0
		default: // "", "=", "==": exact on the parts given; "3.x" and "3" match any 3.y
			t = prefixMatch(have, want, parts)
		}
		match = match && t
	}
	return match, true
}

func parseVersion(s string) ([3]int, bool) {
	v, _, wild, ok := parseVersionPattern(s)
	return v, ok && !wild
}

// parseVersionPattern reads "3", "3.5", "3.5.1", "3.x" or "3.*"; parts is
// the number of numeric parts given.
func parseVersionPattern(s string) (v [3]int, parts int, wild, ok bool) {
	if s == "" {
		return v, 0, false, false
	}
	fields := strings.Split(s, ".")
	if len(fields) > 3 {
		return v, 0, false, false
	}
	for i, f := range fields {
		if f == "x" || f == "X" || f == "*" {
			if i == 0 || i != len(fields)-1 {
				return v, 0, false, false
			}
			return v, parts, true, true
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 || f[0] == '+' {
			return v, 0, false, false
		}
		v[i] = n
		parts++
	}
	return v, parts, false, true
}

func compareVersions(a, b [3]int) int {
	for i := range a {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

func prefixMatch(have, want [3]int, parts int) bool {
	for i := 0; i < parts; i++ {
		if have[i] != want[i] {
			return false
		}
	}
	return true
}
