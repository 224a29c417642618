#!/usr/bin/env bash
# What in-band latency recording costs each generator: the same run with recording off
# (SCHEDLAB_LATENCY=off) and on (the default), alternating run by run. Prints, per case, each
# side's median throughput, the ratio on/off (goal: 0.98 or more), the median of the ratios of
# back-to-back runs, and each side's spread. Against the C peers, bench/run.sh's other parts
# already run schedlab with recording on.
#
#   bench/latency.sh [RUNS] [SECONDS]     (defaults: 5 runs of 2 s per side and case)
#   env: HB_GROUPS=10 HB_LOOPS=100 (hackbench)  CHAT=10x100  ONLY=hackbench (cases whose label has it)
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${1:-5}
SECS=${2:-2}
HB_GROUPS=${HB_GROUPS:-10}
HB_LOOPS=${HB_LOOPS:-100}
CHAT=${CHAT:-10x100}
ONLY=${ONLY:-}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cargo build --release --quiet --bins
SL=$PWD/target/release/schedlab

. bench/lib.sh

# Each parser turns a run's output into one throughput figure (higher = faster).
pingpong_rate() { awk '/^Total:/ {print $(NF-2)}'; }
hackbench_rate() { awk -v m=$((HB_GROUPS * 20 * 20 * HB_LOOPS)) '/^Time:/ {print m / $2}'; }
fork_rate() { awk '/^Rate:/ {print $2}'; }
chat_rate() { awk '/^Average throughput/ {print $4}'; }

printf 'machine: %s CPUs, kernel %s, load average at start: %s\n' "$(nproc)" "$(uname -r)" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf 'each side: %s runs, alternating (which side goes first alternates too)\n\n' "$RUNS"
printf '%-40s %12s %12s %7s %7s   %s\n' case "off" "on" "on/off" paired "spread (off | on)"

compare() { # label, command, parser
  local label=$1 cmd=$2 parse=$3
  [[ $label == *"$ONLY"* ]] || return 0
  : >"$tmp/off"; : >"$tmp/on"
  for i in $(seq "$RUNS"); do
    if (( i % 2 )); then
      SCHEDLAB_LATENCY=off eval "$cmd" | $parse >>"$tmp/off"
      eval "$cmd" | $parse >>"$tmp/on"
    else
      eval "$cmd" | $parse >>"$tmp/on"
      SCHEDLAB_LATENCY=off eval "$cmd" | $parse >>"$tmp/off"
    fi
  done
  bench_paired "$tmp/on" "$tmp/off" # the ratios: on / off; the columns: off, on
  printf '%-40s %12.0f %12.0f %7s %7.3f   %s | %s\n' "$label" "$MED2" "$MED1" "$RATIO" "$PAIRED" \
    "$SPREAD2" "$SPREAD1"
}

for kind in sem msg; do
  compare "ping-pong $kind, 2 pairs, pin same (rt/s)" \
    "$SL ipc-pingpong --kind $kind --pairs 2 --pin same --duration $SECS" pingpong_rate
done
compare "ping-pong pipe, 1 pair, pin same (rt/s)" \
  "$SL ipc-pingpong --kind pipe --pairs 1 --pin same --duration $SECS" pingpong_rate
for mode in process pipe thread; do
  case $mode in process) flag="" ;; pipe) flag="--pipe" ;; thread) flag="--threads" ;; esac
  compare "hackbench $mode -g $HB_GROUPS -l $HB_LOOPS (msg/s)" \
    "$SL hackbench -g $HB_GROUPS -l $HB_LOOPS $flag" hackbench_rate
done
compare "fork-load, 1 forker, $SECS s (forks/s)" \
  "$SL fork-load --forkers 1 --duration $SECS" fork_rate
compare "chat-bench $CHAT (msg/s)" \
  "$SL chat-bench ${CHAT%x*} ${CHAT#*x} --runs 1" chat_rate
