#!/usr/bin/env bash
# What recording the kernel's events costs the workloads (`schedlab explain`'s traced run),
# paired: each `explain --variant none` runs the scenario as it is twice untraced and then once
# traced, back to back; its report gives each workload's throughput traced over the mean of the
# two untraced runs. RUNS such rounds per workload; the median ratio and its 95% bootstrap
# interval (bench/lib.sh). Needs root (tracefs). Goal (issue 27): at most 5% on hackbench, chat
# and the ping-pong.
#
#   bench/evidence.sh [RUNS] [SECONDS]   (defaults: 5 rounds of 10 s runs)
#   ONLY=pipe bench/evidence.sh          (only the cases whose name contains "pipe")
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${1:-5}
SECS=${2:-10}
ONLY=${ONLY:-}
[ "$(id -u)" = 0 ] || { echo "bench/evidence.sh: tracefs needs root" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cargo build --release --quiet --bins
SCHEDLAB=$PWD/target/release/schedlab
. bench/lib.sh

# Endless versions of the presets, so that the settled span has figures: verdict window 3 s,
# so figures count from 5 s on.
scenario() { # name, workload table lines
    printf 'name = "%s"\ninterval_ms = 250\nverdict_window = 3\n[[workload]]\n%s\n' "$1" "$2" >"$tmp/$1.toml"
}
scenario hackbench 'name = "hackbench"
kind = "hackbench"
groups = 10
loops = 100
runs = 0'
scenario chat 'name = "chat"
kind = "chat"
rooms = 10
messages = 100
runs = 0'
scenario pipe-pingpong 'name = "pipe-pingpong"
kind = "ipc-pingpong"
ipc = "pipe"
pin = "same"'
scenario msg-pingpong 'name = "msg-pingpong"
kind = "ipc-pingpong"
ipc = "msg"
pin = "same"'

printf 'machine: %s CPUs, kernel %s, load average at start: %s\n' "$(nproc)" "$(uname -r)" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%s rounds per case, each: 2 runs untraced and 1 traced of %s s\n\n' "$RUNS" "$SECS"
printf '%-14s %12s %8s %16s %12s %9s\n' case "untraced/s" paired "95% interval" "recorded" "reader"

for case in hackbench chat pipe-pingpong msg-pingpong; do
    [[ $case == *"$ONLY"* ]] || continue
    : >"$tmp/ratios"; : >"$tmp/rates"; : >"$tmp/shares"; : >"$tmp/readers"
    for _ in $(seq "$RUNS"); do
        "$SCHEDLAB" explain "$tmp/$case.toml" --workload "$case" --variant none --repeat 2 \
            --duration "$SECS" --format json -o "$tmp/report.json" 2>/dev/null
        python3 - "$tmp" <<'EOF'
import json, sys
tmp = sys.argv[1]
r = json.load(open(f"{tmp}/report.json"))["traced"]
c = r["cost"][0]
e = r["evidence"]
for f, v in [("ratios", c["traced"] / c["untraced"]), ("rates", c["untraced"]),
             ("shares", e["recorded_share"]), ("readers", e["reader_cpu_pct"])]:
    open(f"{tmp}/{f}", "a").write(f"{v}\n")
EOF
    done
    set -- $(bench_boot_median <"$tmp/ratios")
    printf '%-14s %12.0f %8.3f %16s %11.0f%% %8.1f%%\n' "$case" "$(bench_median <"$tmp/rates")" \
        "$(bench_median <"$tmp/ratios")" "$1..$2" \
        "$(awk '{print 100 * $1}' "$tmp/shares" | bench_median)" "$(bench_median <"$tmp/readers")"
done
