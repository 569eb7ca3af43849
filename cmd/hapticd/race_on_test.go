//go:build race

package main

// raceEnabled says the test binary is built with -race: TestLabUnderRace
// then builds hapticd with -race too and runs a lab of it.
const raceEnabled = true
