#!/usr/bin/env bash
# run-figures.sh measures the standard hapticd figures on this machine and
# writes them to a new bench/results/figures-<UTC time>.md (plus the JSON
# reports and the sweep plots under bench/results/), for docs/performance.md.
# bench/results.md, the dated history the docs link to, is not touched: copy
# what a run shows there under a dated heading of its own.
#
#   bench/run-figures.sh            # the full set, about 30 minutes on 2 cores
#   QUICK=1 bench/run-figures.sh    # shorter runs, to check the pipeline (still minutes)
#
# Ctrl-C (or SIGTERM) stops it, the figure under way included.
#   HAPTICD=/path/to/hapticd bench/run-figures.sh   # measure another build
#
# The figures are issue 12's "what it must show" (see the comments below),
# the issue-6 commands, client and arm sweeps with their plots, and
# `go test -bench` of every package that has benchmarks. Run it on a quiet
# machine: every figure is a ratio to a baseline from the same run, but a
# busy neighbour still widens the noise a flag must exceed. Each
# command is printed beside its output. A command that fails is recorded and
# the script goes on; the exit status is then 1.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="bench/results"
mkdir -p "$out"
md="$out/figures-$(date -u '+%Y%m%dT%H%M%SZ').md"

bin="$(mktemp -d)"
trap 'rm -rf "$bin"' EXIT
# An interrupt ends the run, not just the figure under way (hapticbench
# exits on it, and the loop went on to the next figure).
trap 'note "run-figures: interrupted; $md holds the figures so far"; exit 130' INT TERM

failed=0
note() { printf '%s\n' "$*" >&2; }

note "building hapticbench and hapticd into $bin"
if ! go build -o "$bin/hapticbench" ./cmd/hapticbench; then
	note "run-figures: hapticbench does not build; fix that first"
	exit 1
fi
if [[ -n "${HAPTICD:-}" ]]; then
	cp "$HAPTICD" "$bin/hapticd"
elif ! go build -o "$bin/hapticd" ./cmd/hapticd; then
	note "run-figures: hapticd does not build; fix that first (or pass HAPTICD=path)"
	exit 1
fi

# Durations: the issue's, or a tenth of them with QUICK=1.
if [[ -n "${QUICK:-}" ]]; then
	d_single=1s; d_hundred=2s; d_sweep=1s; warm=500ms; arms_window=1s; arms_max=256; benchtime=200ms; stalls=10
else
	d_single=10s; d_hundred=20s; d_sweep=5s; warm=2s; arms_window=3s; arms_max=32768; benchtime=1s; stalls=100
fi

{
	echo "# hapticd performance figures"
	echo
	echo "Measured by \`bench/run-figures.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC')${QUICK:+ (QUICK: shortened runs, not for docs/performance.md)}."
	echo
	echo "| | |"
	echo "|---|---|"
	echo "| machine | $(uname -srm) |"
	echo "| CPU | $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//') |"
	echo "| cores | $(nproc) |"
	echo "| Go | $(go version | cut -d' ' -f3-) |"
	echo "| commit | $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- 2>/dev/null || echo ' (with uncommitted changes)') |"
	echo
	echo "Every hapticd figure stands beside a baseline measured in the same run:"
	echo "the echo baseline is a bare server in its own process (same GOMAXPROCS,"
	echo "the service's own socket layer, transport/rawsock) answering the same"
	echo "clients with a copy of hapticd's frame, padded to the same size; service"
	echo "and echo runs alternate, and a ratio is the median of the pairs' ratios,"
	echo "with their spread and every pair printed; the bare loop is \`hapticd baseline-arms\`, the same simulated-arm physics"
	echo "stepped on as many paced threads as hapticd has shards, with no service"
	echo "around it; the bare host loop of \`hapticbench device\` is"
	echo "\`hapticd baseline-device\`. Ratios are hapticd / baseline; a baseline"
	echo "that lost to hapticd beyond noise is flagged, not given a ratio."
} > "$md"

# figure TITLE COMMAND... runs one command and appends it with its output.
figure() {
	local title="$1"
	shift
	note "== $title: $*"
	local log
	log="$(mktemp)"
	"$@" > "$log"
	local rc=$?
	{
		echo
		echo "## $title"
		echo
		echo '```'
		echo "$ ${*/#$bin\//}"
		cat "$log"
		if [[ $rc -ne 0 ]]; then
			echo "(exit status $rc)"
		fi
		echo '```'
	} >> "$md"
	rm -f "$log"
	if [[ $rc -ne 0 ]]; then
		failed=1
	fi
}

hb="$bin/hapticbench"
# Issue 12's "what it must show", one figure each, every one beside its
# baseline from the same run. A baseline that loses to hapticd beyond noise
# is flagged (BASELINE LOST / FLAG lines) instead of given a ratio.
figure "One session as fast as it goes, placement left to the kernel (5 alternated pairs, median of the pair ratios)" \
	"$hb" run --quiet --arms 1 --clients 1 --rate 0 --duration "$d_single" --warmup "$warm" --pairs 5 --json "$out/run-1x1.json"
figure "One session as fast as it goes, client and servers on one CPU" \
	"$hb" run --quiet --arms 1 --clients 1 --rate 0 --duration "$d_single" --warmup "$warm" --pairs 5 --cpus shared --json "$out/run-1x1-shared.json"
figure "One session as fast as it goes, client on one CPU, servers on the other" \
	"$hb" run --quiet --arms 1 --clients 1 --rate 0 --duration "$d_single" --warmup "$warm" --pairs 5 --cpus split --json "$out/run-1x1-split.json"
figure "100 sessions at 1 kHz, each subscribed to its own arm of 100, placement left to the kernel" \
	"$hb" run --quiet --arms 100 --clients 100 --rate 1000 --subscribe --duration "$d_hundred" --warmup "$warm" --pairs 5 --json "$out/run-100x100-subscribed.json"
figure "100 sessions at 1 kHz, each subscribed to its own arm of 100, clients on one CPU, servers on the other" \
	"$hb" run --quiet --arms 100 --clients 100 --rate 1000 --subscribe --duration "$d_hundred" --warmup "$warm" --pairs 5 --cpus split --json "$out/run-100x100-subscribed-split.json"
figure "100 sessions at 1 kHz, each subscribed to its own arm of 100 and to the two state fields an engine reads" \
	"$hb" run --quiet --arms 100 --clients 100 --rate 1000 --subscribe --state cursor_position,cursor_velocity --duration "$d_hundred" --warmup "$warm" --pairs 5 --json "$out/run-100x100-state.json"
figure "100 sessions at 1 kHz on 100 arms, every frame with all 100 arms (the old default)" \
	"$hb" run --quiet --arms 100 --clients 100 --rate 1000 --duration "$d_hundred" --warmup "$warm" --json "$out/run-100x100.json"
figure "Command to motor (a client's force command to the arm's force frame) and the device loop timed at the arm, no other load" \
	"$hb" device --quiet --duration "$d_hundred" --warmup "$warm" --json "$out/device-alone.json"
figure "Device loop timed at the arm under the 100-client load, beside a bare host loop under the same load" \
	"$hb" device --quiet --arms 100 --clients 100 --rate 1000 --duration "$d_hundred" --warmup "$warm" --json "$out/device-100.json"
figure "Simulated-arm capacity at 1 kHz, idle arms at rest (with heap and RSS per arm)" \
	"$hb" arms --quiet --loop-hz 1000 --sim-motion none --max "$arms_max" --window "$arms_window" --json "$out/arms-rest.json"
figure "Simulated-arm capacity at 1 kHz, every arm moved by a scripted hand" \
	"$hb" arms --quiet --loop-hz 1000 --sim-motion circle --max "$arms_max" --window "$arms_window" --json "$out/arms-circle.json"
figure "Force release after a client stalls, 100 stalls" \
	"$hb" lease --quiet --stalls "$stalls" --json "$out/lease.json"
figure "Memory per idle simulated arm, 10,000 arms (test: at most 4 KiB)" \
	go test -count=1 -run 'TestIdleSimulatedArmMemory' -v ./actors/loop
figure "An arm that acknowledges no configuration code loses no force tick (test)" \
	go test -count=1 -run 'TestArmIgnoredConfigurationCostsNoTick|TestArmExchangeDoesNotAllocate' -v ./hw/driver
figure "The per-tick chain allocates nothing (test)" \
	go test -count=1 -run 'TestPerTickChainDoesNotAllocate' -v ./actors
figure "Client sweep at 1 kHz on 100 arms, each session subscribed to its own arm" \
	"$hb" run --quiet --arms 100 --rate 1000 --subscribe --duration "$d_sweep" --warmup "$warm" --pairs 3 --sweep clients=1,10,50,100 \
	--json "$out/sweep.json" --plot "$out/sweep.svg"
figure "Arm sweep at 1 kHz, one session per 10 arms" \
	"$hb" run --quiet --clients 10 --rate 1000 --subscribe --duration "$d_sweep" --warmup "$warm" --pairs 3 --sweep arms=10,100,1000 \
	--json "$out/sweep-arms.json" --plot "$out/sweep-arms.svg"

if [[ -f "$out/sweep.svg" ]]; then
	printf '\n![RTT percentiles, achieved rate and loop period against clients](results/sweep.svg)\n' >> "$md"
fi
if [[ -f "$out/sweep-arms.svg" ]]; then
	printf '\n![RTT percentiles, achieved rate and loop period against arms](results/sweep-arms.svg)\n' >> "$md"
fi

# Go benchmarks: every package with a Benchmark function. They report
# their own ratios against baselines where they have one.
mapfile -t pkgs < <(grep -rl --include='*_test.go' '^func Benchmark' . | xargs -r -n1 dirname | sort -u)
if [[ ${#pkgs[@]} -gt 0 ]]; then
	note "== go test -bench: ${pkgs[*]}"
	log="$(mktemp)"
	go test -run '^$' -bench . -benchmem -benchtime "$benchtime" "${pkgs[@]}" > "$log" 2>&1
	rc=$?
	{
		echo
		echo "## Go benchmarks"
		echo
		echo '```'
		echo "$ go test -run '^\$' -bench . -benchmem -benchtime $benchtime ${pkgs[*]}"
		cat "$log"
		[[ $rc -ne 0 ]] && echo "(exit status $rc)"
		echo '```'
	} >> "$md"
	rm -f "$log"
	[[ $rc -ne 0 ]] && failed=1
fi

note "wrote $md"
exit "$failed"
