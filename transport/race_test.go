//go:build race

package transport

// raceEnabled: the tests run under the race detector.
const raceEnabled = true
