#!/usr/bin/env bash
# schedlab ipc-pingpong against its peers, side by side in one run, alternating:
#   msg and sem kinds  vs  bench/c/pingpong.c (the same pairs and system calls, in C)
#   pipe kind          vs  perf bench sched pipe (one pair, the same pinning via taskset)
# Prints, per case, the median round trips/sec of each, the ratio of medians (schedlab / peer),
# the median of the ratios of back-to-back runs, and the spread of each side.
#
#   bench/ipc.sh [RUNS] [SECONDS]      (defaults: 5 runs of 2 s each per side and case)
#   ONLY=cross bench/ipc.sh 15 1       (only the cases whose label contains "cross")
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${1:-5}
SECS=${2:-2}
ONLY=${ONLY:-}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cargo build --release --quiet
SCHEDLAB=$PWD/target/release/schedlab
gcc -O2 -Wall -o "$tmp/pingpong" bench/c/pingpong.c
command -v perf >/dev/null || { echo "perf is needed for the pipe comparison" >&2; exit 1; }

. bench/lib.sh

# "Total: N round trips in S s = R round trips/sec" -> R
total_rate() { awk '/^Total:/ {print $(NF-2)}'; }
# perf: "   396353 ops/sec" -> 396353
perf_rate() { awk '/ops\/sec/ {print $1}'; }

printf 'machine: %s CPUs, kernel %s, load average at start: %s\n' "$(nproc)" "$(uname -r)" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf 'each side: %s runs of %s s, alternating; rates in round trips/sec (total over pairs)\n\n' "$RUNS" "$SECS"
printf '%-34s %10s %10s %7s %7s   %s\n' case schedlab peer ratio paired "spread (schedlab | peer)"

compare() { # label, schedlab command, peer command, peer parser
  local label=$1 ours=$2 theirs=$3 parse=$4
  [[ $label == *"$ONLY"* ]] || return 0
  : >"$tmp/a"; : >"$tmp/b"
  for _ in $(seq "$RUNS"); do
    eval "$ours" | total_rate >>"$tmp/a"
    eval "$theirs" 2>&1 | $parse >>"$tmp/b"
  done
  bench_paired "$tmp/a" "$tmp/b"
  printf '%-34s %10.0f %10.0f %7s %7.3f   %s | %s\n' "$label" "$MED1" "$MED2" "$RATIO" "$PAIRED" \
    "$SPREAD1" "$SPREAD2"
}

for kind in msg sem; do
  for pin in same cross; do
    compare "$kind, 2 pairs, pin $pin (vs C)" \
      "$SCHEDLAB ipc-pingpong --kind $kind --pairs 2 --pin $pin --duration $SECS" \
      "$tmp/pingpong $kind $pin 2 $SECS" total_rate
  done
done

# perf runs a fixed number of loops: size them to about SECS from a first measurement.
probe=$(taskset -c 0 perf bench sched pipe -l 100000 2>&1 | perf_rate)
loops=$(awk -v r="$probe" -v s="$SECS" 'BEGIN {printf "%d", r * s}')
compare "pipe, 1 pair, pin same (vs perf)" \
  "$SCHEDLAB ipc-pingpong --kind pipe --pairs 1 --pin same --duration $SECS" \
  "taskset -c 0 perf bench sched pipe -l $loops" perf_rate
compare "pipe, 1 pair, none (vs perf)" \
  "$SCHEDLAB ipc-pingpong --kind pipe --pairs 1 --pin none --duration $SECS" \
  "perf bench sched pipe -l $loops" perf_rate
