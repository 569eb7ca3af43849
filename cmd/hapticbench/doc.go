// Command hapticbench load-tests hapticd and measures it beside baselines
// run in the same invocation.
//
//	hapticbench run  [--arms N] [--clients M] [--observers K] [--rate HZ] [--duration D]
//	                 [--warmup D] [--loop-hz H] [--target URL | --hapticd PATH]
//	                 [--pairs N] [--cpus any|shared|split]
//	                 [--json FILE] [--sweep clients=1,10,50,100 [--plot FILE.svg]]
//	hapticbench arms [--loop-hz H] [--max N] [--hapticd PATH] [--window D] [--pairs N]
//	                 [--repeats R] [--near F] [--sim-motion M] [--effects E] [--json FILE]
//	hapticbench lab  [--arms N] [--clients M] [--rate HZ] [--duration D] [--pairs N] [--hapticd PATH]
//	hapticbench zwidth [--paths ABC] [--hand off|on|both] [--client-hz 60,90,200]
//	                 [--effect-hz 1000,4000] [--delay-frames N] [--push N]
//	                 [--realtime | --target URL] [--plot FILE.svg] [--json FILE]
//
// run starts hapticd (the binary next to hapticbench, else on $PATH, else
// built with `go build`), drives M lock-step controlling sessions and K
// observers, then the same clients against an echo server in its own
// process that answers with a captured hapticd frame, hapticd's and the
// echo's runs alternating in --pairs pairs (default 5), then `hapticd
// baseline-arms`, and prints each hapticd figure beside its baseline: the
// median of the per-pair ratios with their min–max range, and every pair. --cpus shared or split fixes where the
// clients and the servers run, the same for hapticd and its baselines
// (bench/README.md, "Placement").
//
// lab starts a hapticd node and a gateway in front of it and drives the same
// lock-step clients against the node directly, then through the gateway,
// printing round trip and rate side by side with gateway/direct ratios, and
// the gateway's state age (how old the node's state was when the gateway's
// loop took it, from the gateway's GET /stats).
//
// zwidth finds the stiffest stable wall for a client streaming a penalty
// wall's force (A), the wall declared as an effect and rendered by the
// loop (B), and A with the passivity controller (C), and prints each
// beside its theoretical bound (docs/effects.md, "Measuring stiffness").
// By default it runs `hapticd zwidth`, a deterministic simulation; with
// --realtime or --target it drives rows A and B through a service's
// WebSocket.
//
// arms finds the largest number of simulated arms the service steps at the
// loop rate with under 1 % overrun ticks, beside the bare loop's: --pairs
// pairs of searches (default 5), each pair's two in lockstep, a probe
// decided by the median of up to --repeats windows unless its first passes
// far under the line, and the median of the pairs' ratios with their range
// (docs/performance.md, "How the capacity is searched").
//
// --json FILE writes the report as JSON beside the table on stdout. With
// --json - the JSON is written to stdout and the table to stderr, so stdout
// is one JSON document (hapticbench run --quiet --json - | jq .hapticd.overall).
//
// The exit status is 1 when a run saw lost, out-of-order or error frames,
// so a CI job fails on a broken contract and not on a slow machine.
package main
