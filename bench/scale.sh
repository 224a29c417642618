#!/bin/sh
# Scale: a chat run of ROOMS rooms (20 users each: ROOMS*20 connections, ROOMS*80 threads
# across server and client), in a session of its own, run
#   alone (`schedlab chat-bench`);
#   under `schedlab run` sampling every task at 1 Hz (the same run as a `chat` workload);
#   alone, with `top -b -H -d 1` watching every thread on the machine;
#   alone, with `htop -d 10` (1 Hz) watching every thread, on a pseudo-terminal of 200x50;
# then a check that everything is gone. Prints the limits it found and the ones it raised, the
# chat run's throughput (messages/s, sent + received, as chat_c counts them) and its ratio to
# alone, the observer's own CPU in % of one CPU, and for run the samples taken against due
# and how late they were (from its own results). run's CPU is given twice: its own steady
# figure (the first second left out) and over its whole life, intake and exit included.
# Goal: >= 95% of samples within 100 ms of due, observer <= 5% of one CPU.
#
# Usage (as root): bench/scale.sh   (env: ROOMS=200 MESSAGES=100; installs htop if missing)
set -eu
ROOMS=${ROOMS:-200}
MESSAGES=${MESSAGES:-100}
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_observer_setup
threads=$((ROOMS * 80))

echo "Machine: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), kernel $(uname -r)"
echo "Limits before: nofile soft/hard $(ulimit -Sn)/$(ulimit -Hn), threads-max $(cat /proc/sys/kernel/threads-max)," \
     "pid_max $(cat /proc/sys/kernel/pid_max), vm.max_map_count $(cat /proc/sys/vm/max_map_count)"
# Each side holds ROOMS*20 sockets, and run keeps up to three files open per thread it watches
# (past its limit less 1,024 it reopens them at each read, at ten times the cost); chat and
# run raise their soft limits to the hard one by themselves.
need_files=$((threads * 3 + 1024))
if [ "$(ulimit -Hn)" != unlimited ] && [ "$(ulimit -Hn)" -lt "$need_files" ]; then
    if (ulimit -Hn "$need_files") 2>/dev/null; then
        ulimit -Hn "$need_files"; echo "raised: RLIMIT_NOFILE hard to $need_files"
    else
        echo "kept: RLIMIT_NOFILE hard $(ulimit -Hn) (raising it to $need_files was refused): past it less 1,024, run reopens files at each read"
    fi
fi
ulimit -Sn "$(ulimit -Hn)"
# Every thread takes a PID: the run's threads plus what the machine already runs.
need_pids=$((threads + $(ps -eL --no-headers | wc -l) + 4096))
if [ "$(cat /proc/sys/kernel/pid_max)" -lt "$need_pids" ]; then
    echo "raised: kernel.pid_max to $need_pids"; sysctl -qw kernel.pid_max="$need_pids"
fi
if [ "$(cat /proc/sys/kernel/threads-max)" -lt "$need_pids" ]; then
    echo "raised: kernel.threads-max to $need_pids"; sysctl -qw kernel.threads-max="$need_pids"
fi

cat > "$TMP/scale.toml" <<TOML
name = "chat-scale"
description = "$ROOMS rooms x $MESSAGES messages, watched at 1 Hz"
interval_ms = 1000

[[workload]]
name = "chat"
kind = "chat"
rooms = $ROOMS
messages = $MESSAGES
runs = 1
placement = "own-session"
TOML

throughput() { awk '/Average throughput/ {print $4}'; }
alone() { setsid -w "$SL" chat-bench "$ROOMS" "$MESSAGES" 2>&1 | throughput; }

before=$(ps -eL --no-headers | wc -l)
echo "alone ..." >&2
a=$(alone)

echo "under schedlab run ..." >&2
start=$(date +%s.%N)
rc=0
"$SL" run "$TMP/scale.toml" --format json -o "$TMP/res.json" 2> "$TMP/run.err" &
run_pid=$!
# run's CPU over its whole life, taking in and letting go of the threads included: its
# utime + stime (every thread's, the exited ones' too), last read just before it exits.
run_ticks=0
while [ -r /proc/$run_pid/stat ]; do
    t=$(awk '{print $14 + $15}' /proc/$run_pid/stat 2>/dev/null) && [ -n "$t" ] && run_ticks=$t
    sleep 0.05
done
wait $run_pid || rc=$?
end=$(date +%s.%N)
run_whole=$(awk -v t="$run_ticks" -v a="$start" -v b="$end" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.2f", t / hz / (b - a) * 100}')
python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
w = next(w for w in r["workloads"] if w["name"] == "chat")
tp = next((m["mean"] for m in w["metrics"] if m["metric"] == "throughput"), 0)
o = r["observer"]
print(tp, o["cpu_pct_mean"], o["samples_taken"], o["samples_due"], o["late_ms_p50"], o["late_ms_p99"], o["late_ms_max"], o["on_time_pct"])' "$TMP/res.json" > "$TMP/run.obs" 2>> "$TMP/run.err" || cat "$TMP/run.err" >&2

# A watcher on a pseudo-terminal: $1 = name, $2 = command; its CPU over the chat run.
with_tool() {
    bench_watcher_start "$2"
    sleep 1
    t1=$(date +%s.%N); c1=$(bench_cpu_ns "$WATCHER")
    alone > "$TMP/$1"
    t2=$(date +%s.%N); c2=$(bench_cpu_ns "$WATCHER")
    bench_cpu_pct "$c1" "$c2" "$t1" "$t2" > "$TMP/$1.cpu"
    bench_watcher_stop
}
echo "with top ..." >&2
with_tool top "top -b -H -d 1"
echo "with htop ..." >&2
with_tool htop "htop -d 10"
sleep 1
after=$(ps -eL --no-headers | wc -l)

echo "schedlab run exit code $rc after $(echo "$start $end" | awk '{printf "%.1f", $2 - $1}') s;" \
     "threads on the machine: $before before the runs, $after after"
echo
echo "| observer (1 Hz), $ROOMS rooms x $MESSAGES messages ($threads threads) | chat msg/s | / alone | observer CPU, % of one CPU | samples taken / due | late p50 / p99 / worst ms | within 100 ms |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
echo "| none (alone) | $a | 1.000 | - | - | - | - |"
# run: its own steady figure (results, the first second left out), then over its whole life.
if [ -s "$TMP/run.obs" ]; then
    read -r tp cpu taken due p50 p99 worst ontime < "$TMP/run.obs"
    # run's on-time share counts 10 ms; at 1 Hz the goal is 100 ms: count from its p99/worst.
    echo "| schedlab run, interval 1 s | $(printf %.0f "$tp") | $(bench_ratio "$tp" "$a") | $(printf %.2f "$cpu"); $run_whole over its whole run | $taken / $due | $(printf '%.1f / %.1f / %.1f' "$p50" "$p99" "$worst") | $(awk -v w="$worst" -v p="$p99" -v t="$taken" -v d="$due" 'BEGIN { if (w <= 100 && t == d) print "100%"; else if (p <= 100) printf ">= 99%% of taken, %d of %d due\n", t, d; else print "< 99%" }') |"
fi
for o in top htop; do
    label=$([ "$o" = top ] && echo "top -b -H -d 1 (all threads)" || echo "htop -d 10 (all threads)")
    m=$(cat "$TMP/$o")
    echo "| $label | $m | $(bench_ratio "$m" "$a") | $(cat "$TMP/$o.cpu") | - | - | - |"
done
echo
echo "left behind: schedlab processes: $(pgrep -c schedlab || true); SysV: $(ipcs -q -s | grep -c '^0x' || true)"
