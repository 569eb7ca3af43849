package main

import "runtime/debug"

// serviceGCPercent is the service's GOGC when the environment sets none.
//
// Chosen by measurement (2-core loaded VM, GODEBUG=gctrace=1 under
// `hapticbench run --target`; bench/results.md has the commands): the
// service allocated 150-350 B per lock-step message (gorilla's reader and
// writer, the actor mailbox), 3 MB/s for one client at full speed and
// 10-15 MB/s for 100 clients at 1 kHz, on a live heap of 3-16 MB; the
// device loops allocate nothing. At GOGC=100 that was under one collection
// a second; at 50 about two, and the collector's share of the CPU stayed
// at 1 % either way, while the RSS under the 100-client load fell from
// 48-50 to 42-44 MiB and 2,000 idle sessions took 37 MiB over the idle RSS
// instead of 48 (25 gave 33; more collections also mean more
// stop-the-world pauses on the loops). Since then a message allocates only
// gorilla's 8-byte message reader (1 MB/s at 100 clients at 1 kHz, one
// collection in 4 s at 50: the allocs profile of a pprof build, 2026-11-24),
// so the setting now buys memory at almost no CPU. No
// default memory limit: a limit under the live heap (10,000 arms hold about
// 40 MB) makes the collector run back to back, up to half the CPU. An
// operator's GOGC or GOMEMLIMIT is honoured as the runtime reads it.
const serviceGCPercent = 50

// tuneGC applies serviceGCPercent unless lookup (os.LookupEnv) finds GOGC.
func tuneGC(lookup func(string) (string, bool)) {
	if _, set := lookup("GOGC"); set {
		return
	}
	debug.SetGCPercent(serviceGCPercent)
}

// releaseStartGarbage collects what starting the service left behind, once,
// before it says it is ready. Adding N simulated arms one by one publishes
// N copy-on-write device lists (a quarter of a gigabyte of garbage for
// 8,192 arms); left to the collector, it was collected while the loops ran,
// and its marking stole their ticks: 1 % overruns at 2,048 moving arms,
// where with the collector off 8,192 held under 1 % (hapticbench arms).
func releaseStartGarbage() { debug.FreeOSMemory() }
