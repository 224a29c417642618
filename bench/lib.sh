# What the bench scripts share (sourced; POSIX sh): statistics, one copy so that every table
# reports the same median and spread; and the set-up of the scripts that compare schedlab
# with top and htop watching the same load (observer.sh, scale.sh).

# Numbers on stdin -> "median q1 q3 min max" (quartiles by linear interpolation, as R's type 7).
bench_stats() {
    sort -g | awk '
        function q(p,   h, i) { h = (NR - 1) * p + 1; i = int(h); return i >= NR ? v[NR] : v[i] + (h - i) * (v[i + 1] - v[i]) }
        { v[NR] = $1 }
        END { if (NR == 0) { print "nan nan nan nan nan"; exit } print q(0.5), q(0.25), q(0.75), v[1], v[NR] }'
}
bench_median() { bench_stats | awk '{print $1}'; }
# Numbers on stdin -> "min..max" rounded (FMT: printf format of each end, default %.0f).
bench_spread() { bench_stats | awk -v f="${1:-%.0f}" '{printf f ".." f "\n", $4, $5}'; }
# Numbers on stdin -> "median [q1..q3]" with printf format FMT (default %.0f).
bench_median_iqr() { bench_stats | awk -v f="${1:-%.0f}" '{printf f " [" f ".." f "]\n", $1, $2, $3}'; }
# A / B to 3 decimals.
bench_ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "nan"; else printf "%.3f\n", a / b }'; }
# Two sides run alternately, their numbers in files $1 and $2 -> MED1, MED2 their medians; RATIO
# MED1 / MED2; PAIRED the median of the ratios of back-to-back runs (less sensitive to load that
# comes and goes); SPREAD1, SPREAD2 their spreads.
bench_paired() {
    MED1=$(bench_median <"$1"); MED2=$(bench_median <"$2")
    RATIO=$(bench_ratio "$MED1" "$MED2")
    PAIRED=$(paste "$1" "$2" | awk '{print $1/$2}' | bench_median)
    SPREAD1=$(bench_spread <"$1"); SPREAD2=$(bench_spread <"$2")
}

# What a script comparing observers needs: SL, the release build of schedlab; htop (installed
# with apt-get when missing); TMP, a directory of its own, removed on exit with the background
# PIDs in BG killed.
bench_observer_setup() {
    cargo build --release --quiet --bins
    SL=$PWD/target/release/schedlab
    if ! command -v htop >/dev/null; then
        echo "installing htop (apt-get)" >&2
        apt-get update -qq >/dev/null && apt-get install -y -qq htop >/dev/null
    fi
    TMP=$(mktemp -d)
    BG=""
    trap bench_cleanup EXIT
    trap 'exit 130' INT TERM
}
bench_cleanup() { for p in $BG; do kill "$p" 2>/dev/null || true; done; rm -rf "$TMP"; }
# CPU time of PID's threads in ns (the first field of each thread's schedstat): utime+stime
# count in clock ticks, 0.25% of a CPU over 4 s, coarser than the differences measured here.
bench_cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {if (NR) print s}'; }
# % of one CPU: ns $1 to $2 over the wall-clock seconds $3 to $4.
bench_cpu_pct() {
    awk -v a="$1" -v b="$2" -v t1="$3" -v t2="$4" 'BEGIN {printf "%.2f\n", (b - a) / 1e9 / (t2 - t1) * 100}'
}
# Starts the watcher command $1 (top, htop) on a pseudo-terminal of 200x50, as they draw for
# one: WATCHER is its PID, WATCHER_PTY the script(1) that holds the terminal, both in BG.
bench_watcher_start() {
    rm -f "$TMP/watcher.pid"
    # The inner shell writes its PID, then becomes the tool: that PID is the tool's.
    TERM=xterm script -qfec "echo \$\$ > $TMP/watcher.pid; stty rows 50 cols 200; exec $1" /dev/null \
        < /dev/null > /dev/null 2>&1 &
    WATCHER_PTY=$!; BG="$WATCHER_PTY"
    while [ ! -s "$TMP/watcher.pid" ]; do sleep 0.05; done
    WATCHER=$(cat "$TMP/watcher.pid"); BG="$WATCHER_PTY $WATCHER"
}
bench_watcher_stop() {
    kill "$WATCHER" "$WATCHER_PTY" 2>/dev/null || true
    wait "$WATCHER_PTY" 2>/dev/null || true
    BG=""
}
