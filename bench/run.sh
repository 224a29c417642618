#!/bin/sh
# The one benchmark command (issue #9): every load generator against its peer, then what
# watching costs, then how long the dashboard takes to draw a frame. Each part alternates
# schedlab and its peer run by run and prints medians, their spread and the ratio of medians;
# the statistics are bench/lib.sh's, shared by every part.
#
#   chat       bench/chat.sh      10x100 and 30x1000 vs bench/c/chat_{s,c}.c
#   hackbench  bench/loads.sh     process/socket, pipe, thread vs `perf bench sched messaging`
#   fork-load                     and bench/c/hackbench.c; fork+exec+wait vs bench/c/forkloop.c
#   ping-pong  bench/ipc.sh       msg and sem vs bench/c/pingpong.c, pipe vs `perf bench sched pipe`
#   latency    bench/latency.sh   each generator with latency recording on against off
#              (the parts above run schedlab with it on, its default)
#   wakeup     bench/wakeup.sh    the wakeup probe's timer thread vs rt-tests' cyclictest, matched
#   observer   bench/observer.sh  schedlab run at 10 Hz, top -d 0.1, htop -d 1 on 1,000 threads
#   ui         cargo bench --bench ui_render   one frame with 5,000 tasks watched
#
# Usage: bench/run.sh [--quick]     --quick: fewer, shorter runs (a smoke pass, a few minutes)
# Needs: a C compiler, perf (linux-perf), procps (top); installs htop and rt-tests with apt-get if missing.
set -eu
cd "$(dirname "$0")/.."
quick=0
case "${1:-}" in
    --quick) quick=1 ;;
    "") ;;
    *) echo "usage: bench/run.sh [--quick]" >&2; exit 2 ;;
esac
if [ $quick = 1 ]; then
    chat_runs=3; chat_sizes="10x100 30x1000"; loads_runs=3; ipc_runs=3; ipc_secs=1
    lat_runs=3; lat_secs=1; wake_runs=2; wake_secs=3; obs_runs=1; obs_secs=4; ui_args="--quick"
else
    chat_runs=5; chat_sizes="10x100 30x1000"; loads_runs=7; ipc_runs=5; ipc_secs=2
    lat_runs=5; lat_secs=2; wake_runs=5; wake_secs=10; obs_runs=3; obs_secs=6; ui_args=""
fi

echo "# schedlab benchmarks$( [ $quick = 1 ] && echo " (--quick)")"
echo
echo "Machine: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), kernel $(uname -r)"
echo "Started: $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "Ratios are of medians; spreads are min..max or [interquartile range] as labelled."
echo
echo "## chat (messages/s; schedlab/C above 1 = faster)"
echo
CHAT_SIZES=$chat_sizes bench/chat.sh "$chat_runs"
echo
echo "## hackbench and fork-load"
echo
RUNS=$loads_runs bench/loads.sh
echo
echo "## ping-pong (round trips/s; ratio above 1 = faster)"
echo
bench/ipc.sh "$ipc_runs" "$ipc_secs"
echo
echo "## latency recording (throughput on / off; goal: 0.98 or more)"
echo
bash bench/latency.sh "$lat_runs" "$lat_secs"
echo
echo "## wakeup latency, against cyclictest"
echo
RUNS=$wake_runs SECS=$wake_secs bench/wakeup.sh
echo
echo "## observer"
echo
RUNS=$obs_runs SECS=$obs_secs bench/observer.sh
echo
echo "## dashboard frame, 5,000 tasks watched (goal: under 5 ms)"
echo
cargo bench --quiet --bench ui_render -- $ui_args 2>/dev/null |
    awk '/^ui_frame/ {name = $1} /time:/ && name {gsub(/[\[\]]/, ""); print "| " name " | " $4 " " $5 " (" $2 " " $3 " .. " $6 " " $7 ") |"; name = ""}' |
    { echo "| frame | criterion median-estimate (95% CI) |"; echo "| --- | --- |"; cat; }
echo
echo "Finished: $(date -u '+%H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
