// Package bench is hapticd's load generator: it drives the simulation
// WebSocket (PROTOCOL.md section 2) from many lock-step clients, reads the
// service's /stats route, runs baselines in the same process and run, and
// reports the figures as a table, JSON and an SVG plot.
//
// # Clients
//
// Each client is one WebSocket session in lock step: it sends one message
// and waits for its one frame before sending the next, as an engine plugin
// does once per physics tick. A controlling client commands its own arm with
// set_cursor_force; an observer only sends probe_position. Paced clients
// (a rate above 0) send on absolute deadlines start+k·period: a missed
// deadline skips ahead instead of sending a catch-up burst, and the
// sessions' deadlines are spread evenly over one period, as independent
// engines would be, rather than all falling at once. Pacing uses a
// time.Timer, which holds up to about 1 kHz per client on Linux; above that
// the achieved rate falls short of the target, and the report shows it.
//
// # Checks
//
// The contract is one frame per message, in order. Every frame must carry
// the client's session_id and no "errors" array. A frame that does not come
// within the frame timeout is lost (the socket is then unusable and the
// client stops). At the end of the run each client checks that the stream is
// still aligned: it asks for a full-state frame, which alone carries
// "config", and then a plain one; a surplus or missing frame anywhere in the
// run shifts that answer and counts as out of order.
//
// # Measurements
//
// Round trips go into a histogram per client (protocol/histogram, the one
// the service's loops use: log-linear buckets, fixed memory, no allocation
// per sample) that merge into the overall figures.
// Warm-up ticks are not recorded. Service figures come from GET /stats before
// and after the measured window.
//
// # Baselines
//
// The echo baseline is a bare gorilla/websocket server in this process that
// answers each message with a pre-encoded copy of a real hapticd frame
// captured during the warm-up, so the same client code sees the same frame
// size with no service behind it. The bare-loop baseline is `hapticd
// baseline-arms`, which steps the same simulated arms in one paced loop with
// no service around it. Each hapticd figure is reported beside its baseline
// and the ratio.
//
// # Concurrency
//
// Run and Capacity block until done or until their context ends. Histograms
// are owned by one goroutine each and merged after the clients stop.
package bench
