#!/bin/sh
# Benchmark (not a test): schedlab's hackbench and fork-load against their peers, side by
# side, alternating, N times each; prints medians and the ratio of medians as a Markdown table.
#   hackbench: rt-tests' `hackbench` (Debian's rt-tests, installed when missing) and `perf bench
#              sched messaging` with the same groups and loops, in process/socket, pipe and
#              thread modes, and bench/c/hackbench.c, a C program of the same shape
#              (ratios = schedlab time / peer time: below 1 is faster; "paired" is the median
#              of each round's schedlab / C, with its 95% bootstrap interval: one run varies by
#              10-20% from the next here, so tell a gap from noise by that interval).
#   fork-load: bench/c/forkloop.c, a plain C fork+exec+wait loop, each exec'ing its own nil
#              (schedlab-nil vs a C `int main(){return 0;}`), and both exec'ing the C nil
#              (ratio = schedlab forks/s / C forks/s: above 1 is faster).
# Usage: bench/loads.sh   (env: RUNS=10 GROUPS=10 LOOPS=100 FORK_SECS=1 FORKERS=1
#                          MODES="process pipe thread" FORK=1; FORK=0 leaves fork-load out)
set -eu
RUNS=${RUNS:-10}
GROUPS=${GROUPS:-10}
LOOPS=${LOOPS:-100}
FORK_SECS=${FORK_SECS:-1}
FORKERS=${FORKERS:-1}
MODES=${MODES:-process pipe thread}
FORK=${FORK:-1}
cd "$(dirname "$0")/.."
cargo build --release --quiet --bins
SL=target/release/schedlab
command -v perf >/dev/null || { echo "perf not found: install linux-perf" >&2; exit 1; }
# rt-tests' hackbench, the one users run; /usr/bin/hackbench is Debian's rt-tests.
if ! [ -x /usr/bin/hackbench ]; then
    echo "installing rt-tests (apt-get) for its hackbench" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rt-tests; } >/dev/null 2>&1 ||
        { echo "rt-tests could not be installed: its hackbench is needed" >&2; exit 1; }
fi
RT_HACKBENCH=/usr/bin/hackbench
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM
cc -O2 -o "$TMP/forkloop" bench/c/forkloop.c
cc -O2 -pthread -o "$TMP/hackbench" bench/c/hackbench.c
printf 'int main(void){return 0;}\n' > "$TMP/nil.c"
cc -O2 -o "$TMP/nil" "$TMP/nil.c"

. bench/lib.sh
median() { bench_median; }
# "median (min..max)" of a file of numbers.
cell() { echo "$(median < "$1") ($(bench_spread %.3f < "$1"))"; }

echo "Machine: $(nproc) CPUs, kernel $(uname -r), $(date -u '+%Y-%m-%d %H:%M UTC'); $RUNS runs each, alternating"
echo
echo "| hackbench -g $GROUPS -l $LOOPS, time (s), median (min..max) | schedlab | C hackbench | rt-tests hackbench | perf messaging | schedlab / C, paired [95% interval] | schedlab / rt-tests, paired [95% interval] | schedlab / perf, paired [95% interval] |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for mode in $MODES; do
    case $mode in
        process) sflag=""; pflag=""; rflag="" ;;
        pipe) sflag="--pipe"; pflag="-p"; rflag="-p" ;;
        thread) sflag="--threads"; pflag="-t"; rflag="-T" ;;
    esac
    : > "$TMP/s"; : > "$TMP/c"; : > "$TMP/p"; : > "$TMP/r"
    i=0
    while [ $i -lt "$RUNS" ]; do
        $SL hackbench -g "$GROUPS" -l "$LOOPS" $sflag | awk '/^Time:/ {print $2}' >> "$TMP/s"
        "$TMP/hackbench" "$GROUPS" "$LOOPS" $mode | awk '/^Time:/ {print $2}' >> "$TMP/c"
        "$RT_HACKBENCH" -g "$GROUPS" -l "$LOOPS" $rflag | awk '/^Time:/ {print $2}' >> "$TMP/r"
        perf bench sched messaging -g "$GROUPS" -l "$LOOPS" $pflag | awk '/Total time:/ {print $3}' >> "$TMP/p"
        i=$((i + 1))
    done
    paired() { bench_paired "$TMP/s" "$1"; echo "$(printf %.3f "$PAIRED") [$PAIRED_LO..$PAIRED_HI]"; }
    echo "| $mode | $(cell "$TMP/s") | $(cell "$TMP/c") | $(cell "$TMP/r") | $(cell "$TMP/p") | $(paired "$TMP/c") | $(paired "$TMP/r") | $(paired "$TMP/p") |"
done
[ "$FORK" = 0 ] && exit 0
echo
echo "| fork+exec+wait, $FORKERS forker(s), $FORK_SECS s (forks/s), median (min..max) | schedlab fork-load | C forkloop | schedlab / C |"
echo "| --- | --- | --- | --- |"

fork_rate() { awk -v secs="$FORK_SECS" '/^Children forked:/ {print $3/secs}'; }
for nil in own cnil; do
    : > "$TMP/s"; : > "$TMP/p"
    if [ $nil = own ]; then exec_arg=""; c_nil="$TMP/nil"; label="each execs its own nil (schedlab-nil, C nil)"; else exec_arg="--exec $TMP/nil"; c_nil="$TMP/nil"; label="both exec the C nil"; fi
    i=0
    while [ $i -lt "$RUNS" ]; do
        $SL fork-load --forkers "$FORKERS" --duration "$FORK_SECS" $exec_arg | awk '/^Rate:/ {print $2}' >> "$TMP/s"
        "$TMP/forkloop" "$c_nil" "$FORK_SECS" "$FORKERS" | awk '/^Rate:/ {print $2}' >> "$TMP/p"
        i=$((i + 1))
    done
    s=$(median < "$TMP/s"); p=$(median < "$TMP/p")
    echo "| $label | $(echo "$(median < "$TMP/s") ($(bench_spread < "$TMP/s"))") | $(echo "$(median < "$TMP/p") ($(bench_spread < "$TMP/p"))") | $(echo "$s $p" | awk '{printf "%.3f", $1/$2}') |"
done
