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
# comes and goes), PAIRED_LO..PAIRED_HI its 95% bootstrap interval; SPREAD1, SPREAD2 their
# spreads.
bench_paired() {
    MED1=$(bench_median <"$1"); MED2=$(bench_median <"$2")
    RATIO=$(bench_ratio "$MED1" "$MED2")
    PAIRED=$(paste "$1" "$2" | awk '{print $1/$2}' | bench_median)
    SPREAD1=$(bench_spread <"$1"); SPREAD2=$(bench_spread <"$2")
    set -- $(paste "$1" "$2" | awk '{print $1/$2}' | bench_boot_median)
    PAIRED_LO=$1; PAIRED_HI=$2
}
# Numbers on stdin -> "lo hi": a 95% percentile-bootstrap interval of their median (2,000
# resamples, fixed seed so a table is reproducible from its numbers). On this shared machine
# one run of hackbench varies by 10-20% from the next; the interval says whether a median
# paired ratio of 1.04 is a gap or the noise of that many rounds.
bench_boot_median() {
    awk '
        function med(a, n,   i, j, t) {
            for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }
        { v[NR] = $1 }
        END {
            if (NR == 0) { print "nan nan"; exit }
            srand(1); B = 2000
            for (b = 1; b <= B; b++) { for (i = 1; i <= NR; i++) s[i] = v[int(rand() * NR) + 1]; m[b] = med(s, NR) }
            med(m, B)
            printf "%.3f %.3f\n", m[int(B * 0.025) + 1], m[int(B * 0.975)]
        }'
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
