#!/usr/bin/env bash
# run-figures.sh measures the standard hapticd figures on this machine and
# writes bench/results.md (plus the JSON reports and the sweep plot under
# bench/results/), for the README's performance section.
#
#   bench/run-figures.sh            # the full set, about 10 minutes on 2 cores
#   QUICK=1 bench/run-figures.sh    # short runs, to check the pipeline
#   HAPTICD=/path/to/hapticd bench/run-figures.sh   # measure another build
#
# The figures are the issue-6 acceptance commands, a client sweep with its
# plot, and `go test -bench` of every package that has benchmarks. Each
# command is printed beside its output. A command that fails is recorded and
# the script goes on; the exit status is then 1.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="bench/results"
md="bench/results.md"
mkdir -p "$out"

bin="$(mktemp -d)"
trap 'rm -rf "$bin"' EXIT

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
	d_single=1s; d_hundred=2s; d_sweep=1s; warm=500ms; arms_window=1s; arms_max=256; benchtime=200ms
else
	d_single=10s; d_hundred=20s; d_sweep=5s; warm=2s; arms_window=3s; arms_max=16384; benchtime=1s
fi

{
	echo "# hapticd performance figures"
	echo
	echo "Measured by \`bench/run-figures.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC')${QUICK:+ (QUICK: shortened runs, not for the README)}."
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
	echo "the echo baseline is a bare gorilla/websocket server answering the same"
	echo "clients with a copy of hapticd's frame, padded to the same size; the bare"
	echo "loop is \`hapticd baseline-arms\`, the same simulated arms stepped with no"
	echo "service around them. Ratios are hapticd / baseline."
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
figure "One session as fast as it goes" \
	"$hb" run --quiet --arms 1 --clients 1 --rate 0 --duration "$d_single" --warmup "$warm" --json "$out/run-1x1.json"
figure "100 sessions at 1 kHz on 100 arms" \
	"$hb" run --quiet --arms 100 --clients 100 --rate 1000 --duration "$d_hundred" --warmup "$warm" --json "$out/run-100x100.json"
figure "Client sweep at 1 kHz on 100 arms" \
	"$hb" run --quiet --arms 100 --rate 1000 --duration "$d_sweep" --warmup "$warm" --sweep clients=1,10,50,100 \
	--json "$out/sweep.json" --plot "$out/sweep.svg"
figure "Simulated-arm capacity at 1 kHz" \
	"$hb" arms --quiet --loop-hz 1000 --max "$arms_max" --window "$arms_window" --json "$out/arms.json"

if [[ -f "$out/sweep.svg" ]]; then
	printf '\n![RTT percentiles and achieved rate against clients](results/sweep.svg)\n' >> "$md"
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
