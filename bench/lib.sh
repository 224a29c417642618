# Statistics shared by the bench scripts (sourced; POSIX sh). One copy, so that every table
# reports the same median and spread.

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
