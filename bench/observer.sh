#!/bin/sh
# What watching costs (issue #9): 1,000 threads in SysV semaphore ping-pong (500 pairs, as
# `schedlab ipc-pingpong --kind sem --pairs 500 --threads`), run D seconds
#   alone;
#   under `schedlab run` sampling every task at 10 Hz (scenario interval_ms = 100): run
#     launches the very same command as a `command` workload, so every row's figure is that
#     command's own Total line, and only the observer differs;
#   alone, with `top -b -H -d 0.1` watching every thread on the machine;
#   alone, with `htop -d 1` (10 Hz) watching every thread, on a pseudo-terminal of 200x50;
# alternating, RUNS times. Prints the workload's round trips/s (median [IQR]) and its ratio to
# alone (of the medians, and the median of each round's ratio), and the observer's own CPU in % of one CPU, from about 1 s after the start to 1 s
# before the end (start-up and the final report left out): for top and htop, the CPU time
# of its threads (schedstat, ns) over the time measured between the two readings; for run, its own
# steady-state CPU from its results (`observer.cpu_pct`, the first second left out). For run,
# also the samples taken against the samples due, and how late they were (p50, p99, and the
# share within 10 ms of due), from the same results: top and htop do not say.
# The workload always runs in a session of its own (setsid; the `run` scenario's placement =
# "own-session"): with autogroup on, 1,000 busy threads in this script's session would starve
# the script's own clock readings and the observer alike.
# With BASE=PATH (another build of schedlab, say of main before a change), each round also
# runs that build under the same conditions, and a last line gives the median of each round's
# CPU ratio of this build to it: drift of the machine between rounds cancels there too.
# Goal: ratio >= 0.98, observer <= 2% of one CPU, >= 95% of samples within 10 ms of due.
#
# Usage: bench/observer.sh   (env: RUNS=3 SECS=6 PAIRS=500 BASE=; installs htop with apt-get if missing)
set -eu
RUNS=${RUNS:-3}
SECS=${SECS:-6}
PAIRS=${PAIRS:-500}
BASE=${BASE:-}
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_observer_setup

cat > "$TMP/obs.toml" <<TOML
name = "observer-bench"
description = "$((PAIRS * 2)) threads in sem ping-pong, sampled at 10 Hz"
interval_ms = 100

[[workload]]
name = "pp"
kind = "command"
placement = "own-session"
argv = ["sh", "-c", "exec $SL ipc-pingpong --kind sem --pairs $PAIRS --threads --pin none --duration $SECS > $TMP/run.out"]
TOML

# Observer PID's CPU in % of one CPU from about 1 s to SECS-1 s after it started, over the
# time that really passed between the two readings.
observe() {
    sleep 1; t1=$(date +%s.%N); a=$(bench_cpu_ns "$1"); sleep $((SECS - 2)); t2=$(date +%s.%N); b=$(bench_cpu_ns "$1")
    # Gone before the second reading: no figure rather than a wrong one.
    [ -n "$a" ] && [ -n "$b" ] || { echo "observer.sh: PID $1 exited before ${SECS}-1 s; no CPU reading" >&2; return 0; }
    bench_cpu_pct "$a" "$b" "$t1" "$t2"
}
total() { awk '/^Total:/ {print $(NF-2)}'; }
workload() { setsid -w "$SL" ipc-pingpong --kind sem --pairs "$PAIRS" --threads --pin none --duration "$SECS" | total; }

alone() { workload >> "$TMP/alone"; }
# $1: the schedlab to run (default this build), $2: the name of its rows' files.
with_run() {
    bin=${1:-$SL}; name=${2:-run}
    rm -f "$TMP/run.out" "$TMP/res.json"
    # A second longer than the command, so run never cuts it short.
    "$bin" run "$TMP/obs.toml" --duration $((SECS + 1)) --format json -o "$TMP/res.json" \
        2> "$TMP/run.err" &
    pid=$!; BG="$pid"
    wait "$pid"; BG=""
    total < "$TMP/run.out" >> "$TMP/$name" || cat "$TMP/run.err" >&2
    observer_fields "$TMP/res.json" >> "$TMP/$name.obs"
}
# This build's run and, with BASE, the base build's, first one then the other by round.
with_runs() {
    if [ -z "$BASE" ]; then with_run; elif [ $((i % 2)) -eq 0 ]; then with_run; with_run "$BASE" base; else with_run "$BASE" base; with_run; fi
}
# run's own figures from its results: steady CPU %, samples taken, due, late p50 and p99 (ms),
# % within 10 ms of due.
observer_fields() {
    python3 -c 'import json, sys
o = json.load(open(sys.argv[1]))["observer"]
print(o["cpu_pct_mean"], o["samples_taken"], o["samples_due"], o["late_ms_p50"], o["late_ms_p99"], o["on_time_pct"])' "$1"
}
# The workload with a watcher on a pseudo-terminal; $1 = name, $2 = command.
with_tool() {
    bench_watcher_start "$2"
    workload >> "$TMP/$1" &
    wpid=$!
    observe "$WATCHER" >> "$TMP/$1.cpu"
    wait "$wpid"
    bench_watcher_stop
}

i=0
while [ $i -lt "$RUNS" ]; do
    # Rotate the order, so that drift in the machine hits every side alike.
    case $((i % 4)) in
        0) alone; with_runs; with_tool top "top -b -H -d 0.1"; with_tool htop "htop -d 1" ;;
        1) with_runs; with_tool top "top -b -H -d 0.1"; with_tool htop "htop -d 1"; alone ;;
        2) with_tool top "top -b -H -d 0.1"; with_tool htop "htop -d 1"; alone; with_runs ;;
        3) with_tool htop "htop -d 1"; alone; with_runs; with_tool top "top -b -H -d 0.1" ;;
    esac
    i=$((i + 1))
done

a=$(bench_median < "$TMP/alone")
cpu_cell() { if [ -s "$1" ]; then echo "$(bench_median < "$1" | awk '{printf "%.2f", $1}') ($(bench_spread %.2f < "$1"), $(wc -l < "$1") readings)"; else echo "no reading"; fi; }
echo "Observer: $((PAIRS * 2)) threads in sem ping-pong, $SECS s, $RUNS runs each, rotating order; $(nproc) CPUs, kernel $(uname -r)"
echo
col() { awk -v c="$2" '{print $c}' "$1"; }
# The ratio of each round's run to the same round's alone run, median over rounds: drift of
# the machine between rounds (this VM's alone runs spread by a third) cancels out.
paired() { paste "$TMP/$1" "$TMP/alone" | awk '$1 > 0 && $2 > 0 {print $1 / $2}' | bench_median | awk '{printf "%.3f", $1}'; }
echo "| observer (10 Hz) | workload rt/s, median [IQR] | / alone | / alone, paired by round | observer CPU, % of one CPU, median (min..max) | samples taken / due | late p50 / p99 ms | within 10 ms |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
echo "| none (alone) | $(bench_median_iqr < "$TMP/alone") | 1.000 | 1.000 | - | - | - | - |"
rows="run top htop"
[ -z "$BASE" ] || rows="run base top htop"
for o in $rows; do
    case $o in
        run) label="schedlab run, interval 100 ms" ;;
        base) label="the same, BASE build" ;;
        top) label="top -b -H -d 0.1 (all threads)" ;;
        htop) label="htop -d 1 (all threads)" ;;
    esac
    m=$(bench_median < "$TMP/$o")
    if { [ "$o" = run ] || [ "$o" = base ]; } && [ -s "$TMP/$o.obs" ]; then
        col "$TMP/$o.obs" 1 > "$TMP/$o.cpu"
        taken=$(col "$TMP/$o.obs" 2 | awk '{s += $1} END {print s}')
        due=$(col "$TMP/$o.obs" 3 | awk '{s += $1} END {print s}')
        late="$(col "$TMP/$o.obs" 4 | bench_median | awk '{printf "%.1f", $1}') / $(col "$TMP/$o.obs" 5 | bench_median | awk '{printf "%.1f", $1}')"
        ontime="$(col "$TMP/$o.obs" 6 | bench_median | awk '{printf "%.1f%%", $1}')"
        echo "| $label | $(bench_median_iqr < "$TMP/$o") | $(bench_ratio "$m" "$a") | $(paired "$o") | $(cpu_cell "$TMP/$o.cpu") | $taken / $due | $late | $ontime |"
    else
        echo "| $label | $(bench_median_iqr < "$TMP/$o") | $(bench_ratio "$m" "$a") | $(paired "$o") | $(cpu_cell "$TMP/$o.cpu") | - | - | - |"
    fi
done
if [ -n "$BASE" ] && [ -s "$TMP/base.cpu" ]; then
    echo
    echo "Observer CPU, this build against BASE ($BASE), median of each round's ratio: $(paste "$TMP/run.cpu" "$TMP/base.cpu" | awk '$1 > 0 && $2 > 0 {print $1 / $2}' | bench_median | awk '{printf "%.3f", $1}') ($(paste "$TMP/run.cpu" "$TMP/base.cpu" | awk '$1 > 0 && $2 > 0 {print $1 / $2}' | bench_spread %.3f), $(wc -l < "$TMP/run.cpu") rounds)"
fi
