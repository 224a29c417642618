#!/bin/sh
# Benchmark (not a test): `schedlab wakeup-probe`'s timer thread beside rt-tests' `cyclictest`,
# the tool users know for the same question (how late does a thread woken by a timer run?),
# alternating, RUNS rounds of SECS seconds each. Prints each side's p50 and p99 wakeup latency
# (µs, median over rounds with min..max) and the paired ratio schedlab / cyclictest with its
# 95% bootstrap interval.
#
# The two are matched where they differ by default (docs/latency.md, "the wakeup probe and
# cyclictest"):
#   - policy: both SCHED_OTHER at nice 0 (cyclictest's default priority 0; the probe never
#     asks for real time);
#   - timer slack: the probe sets its threads' to 1 ns; cyclictest is started by a parent
#     whose slack is 1 ns (prctl PR_SET_TIMERSLACK), which makes 1 ns its default too: its
#     main thread passes through SCHED_FIFO and back, and leaving real time puts a task's
#     slack back to its default, which would otherwise be a normal task's 50 µs, in every
#     figure of cyclictest's;
#   - CPU: cyclictest pins its thread (rt-tests 2.4 does even without -a); both run on CPU 0
#     (`-a 0`, `--cpu 0`);
#   - PM QoS: cyclictest writes 0 to /dev/cpu_dma_latency unless `--laptop`; the probe does
#     not, so cyclictest runs with `--laptop` (MATCH_QOS=0 leaves that out, to see what it
#     changes on this machine);
#   - one thread, period INTERVAL µs, absolute deadlines (`clock_nanosleep` TIMER_ABSTIME in
#     both); cyclictest's histogram (`-h`, 1 µs buckets) gives its percentiles.
# Usage: bench/wakeup.sh   (env: RUNS=5 SECS=10 INTERVAL=1000 MATCH_QOS=1; installs rt-tests
#                           with apt-get when cyclictest is missing)
set -eu
RUNS=${RUNS:-5}
SECS=${SECS:-10}
INTERVAL=${INTERVAL:-1000}
MATCH_QOS=${MATCH_QOS:-1}
cd "$(dirname "$0")/.."
cargo build --release --quiet --bins
SL=target/release/schedlab
if ! command -v cyclictest >/dev/null; then
    echo "installing rt-tests (apt-get) for its cyclictest" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rt-tests; } >/dev/null 2>&1 ||
        { echo "rt-tests could not be installed: its cyclictest is needed" >&2; exit 1; }
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM
. bench/lib.sh

laptop=--laptop
[ "$MATCH_QOS" = 1 ] || laptop=
# cyclictest with 1 ns of timer slack, now and as its default: PR_SET_TIMERSLACK (29) in a
# parent, whose slack a child forked from it takes as its default.
cyclic() {
    python3 -c 'import ctypes, subprocess, sys
ctypes.CDLL(None, use_errno=True).prctl(29, 1, 0, 0, 0)
sys.exit(subprocess.call(sys.argv[1:]))' \
        cyclictest -q -t 1 -a 0 -i "$INTERVAL" -D "$SECS" -h 20000 $laptop > "$TMP/cyc.out"
    # The histogram's lines: "BUCKET COUNT"; its overflows past 20 ms count as 20 ms.
    awk '/^[0-9]/ { b[NR] = $1 + 0; c[NR] = $2 + 0; n += $2; k = NR }
         /Histogram Overflows/ { o = $NF + 0 }
         END {
             n += o; if (n == 0) { print "nan nan"; exit }
             for (i = 1; i <= k; i++) { s += c[i]; if (!p50 && s >= 0.5 * n) p50 = b[i] "x"; if (!p99 && s >= 0.99 * n) p99 = b[i] "x" }
             if (!p99) p99 = "20000x"
             sub("x", "", p50); sub("x", "", p99); print p50, p99
         }' "$TMP/cyc.out"
}
probe() {
    "$SL" wakeup-probe --timers 1 --pairs 0 --cpu 0 --period "$INTERVAL" --duration "$SECS" --interval "$((SECS + 1))" > "$TMP/probe.out"
    awk '/whole run/ { whole = 1 } whole && /50.0th:/ { p50 = $2 } whole && /99.0th:/ { p99 = $2 } END { print p50, p99 }' "$TMP/probe.out"
}

: > "$TMP/s50"; : > "$TMP/s99"; : > "$TMP/c50"; : > "$TMP/c99"
i=0
while [ "$i" -lt "$RUNS" ]; do
    # Alternate which goes first, so drift of the machine hits both alike.
    if [ $((i % 2)) -eq 0 ]; then s=$(probe); c=$(cyclic); else c=$(cyclic); s=$(probe); fi
    echo "$s" | awk '{print $1}' >> "$TMP/s50"; echo "$s" | awk '{print $2}' >> "$TMP/s99"
    echo "$c" | awk '{print $1}' >> "$TMP/c50"; echo "$c" | awk '{print $2}' >> "$TMP/c99"
    i=$((i + 1))
done

cell() { echo "$(bench_median < "$1" | awk '{printf "%.1f", $1}') ($(bench_spread %.1f < "$1"))"; }
echo "Wakeup latency of one timer thread, period $INTERVAL µs, $SECS s, $RUNS rounds alternating; $(nproc) CPUs, kernel $(uname -r), $(date -u '+%Y-%m-%d %H:%M UTC'); cyclictest ${laptop:-without --laptop (PM QoS 0)}, timer slack 1 ns and CPU 0 on both"
echo
echo "| percentile | wakeup-probe, µs, median (min..max) | cyclictest, µs, median (min..max) | probe / cyclictest, paired [95% interval] |"
echo "| --- | --- | --- | --- |"
for p in 50 99; do
    bench_paired "$TMP/s$p" "$TMP/c$p"
    echo "| p$p | $(cell "$TMP/s$p") | $(cell "$TMP/c$p") | $(printf %.3f "$PAIRED") [$PAIRED_LO..$PAIRED_HI] |"
done
