#!/usr/bin/env bash
# How fast the dashboard answers a key, with and without 5,000 tasks under watch, and what
# it costs itself. Drives the release binary in a tmux server of its own: sends `?`, waits
# until the help is on screen, sends Esc, waits until it is gone; N times. Prints the median
# and worst key-to-screen time (tmux's own capture adds a few ms; both cases pay it) and the
# dashboard's "self" CPU% from its status line. A last case opens the dashboard on a 200-room
# chat (16,000 threads) at 1 Hz and presses keys from the start until a few seconds after the
# chat is done: the times by phase, while its threads start (until the dashboard counts them
# all), while it runs, and while they exit and after (as root: the chat needs the descriptors;
# CHAT_ROOMS=0 leaves it out).
#
#   cargo build --release && bench/ui_latency.sh [N]    (env: CHAT_ROOMS=200)
set -euo pipefail
N=${1:-20}
CHAT_ROOMS=${CHAT_ROOMS:-200}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$ROOT/target/release/schedlab
[ -x "$BIN" ] || { echo "build first: cargo build --release" >&2; exit 1; }
TMP=$(mktemp -d)
# A tmux server of its own for each case: a new server on the socket of one just killed can
# find it still exiting ("server exited unexpectedly").
CASE=0
SOCK=schedlab-bench-$$-0
next_server() { CASE=$((CASE + 1)); SOCK=schedlab-bench-$$-$CASE; }
# tmux leaves a killed server's socket file behind: remove this script's.
cleanup() {
    tmux -L "$SOCK" kill-server 2>/dev/null || true
    rm -f "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)"/schedlab-bench-$$-*
    rmdir "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)" 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT
cc -O2 -pthread -o "$TMP/sleepers" "$ROOT/bench/c/sleepers.c"

now_ms() { date +%s%3N; }
screen() { tmux -L "$SOCK" capture-pane -p -t b; }
wait_for() { # pattern present (1) or absent (0)
    local want=$1 pat=$2 deadline=$(( $(now_ms) + 10000 ))
    while :; do
        if screen | grep -q -- "$pat"; then got=1; else got=0; fi
        [ "$got" = "$want" ] && return 0
        [ "$(now_ms)" -gt "$deadline" ] && { echo "timeout waiting for $pat" >&2; screen >&2; return 1; }
        sleep 0.002
    done
}

run_case() { # label, extra workload command or ""
    local label=$1 cmd=$2
    next_server
    tmux -L "$SOCK" -f /dev/null new-session -d -x 100 -y 30 -s b "$BIN"
    wait_for 1 "Throughput"
    if [ -n "$cmd" ]; then
        tmux -L "$SOCK" send-keys -t b a 0 Tab
        tmux -L "$SOCK" send-keys -t b -l "$cmd"
        tmux -L "$SOCK" send-keys -t b Enter
        wait_for 1 "■ sleepers "
        sleep 3
    else
        sleep 3
    fi
    local times=()
    for _ in $(seq "$N"); do
        local t0; t0=$(now_ms); tmux -L "$SOCK" send-keys -t b '?'; wait_for 1 "Help: any key"
        times+=($(( $(now_ms) - t0 )))
        t0=$(now_ms); tmux -L "$SOCK" send-keys -t b Escape; wait_for 0 "Help: any key"
        times+=($(( $(now_ms) - t0 )))
        sleep 0.1
    done
    local tasks self
    tasks=$(screen | awk '$1=="■" && $2=="sleepers" {print $4}')
    self=$(screen | grep -o 'self [0-9.]*%' | head -1 || true)
    printf '%-22s keys: median %3d ms, worst %3d ms (%d presses)  sleepers tasks: %s  %s\n' \
        "$label" "$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')" \
        "$(printf '%s\n' "${times[@]}" | sort -n | tail -1)" "${#times[@]}" "${tasks:--}" "$self"
    tmux -L "$SOCK" send-keys -t b q
    sleep 1
    tmux -L "$SOCK" kill-server 2>/dev/null || true
}

# median and worst of the numbers given
stats() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END{if (NR) printf "median %3d ms, worst %4d ms (%d presses)", a[int((NR+1)/2)], a[NR], NR; else printf "no presses"}'; }

chat_case() {
    local rooms=$1 threads=$(( $1 * 80 ))
    cat > "$TMP/chat.toml" <<TOML
name = "chat-scale"
description = "$rooms rooms, watched at 1 Hz"
interval_ms = 1000

[[workload]]
name = "chat"
kind = "chat"
rooms = $rooms
messages = 100
runs = 1
placement = "own-session"
TOML
    ulimit -Sn "$(ulimit -Hn)"
    next_server
    tmux -L "$SOCK" -f /dev/null new-session -d -x 160 -y 48 -s b "$BIN tui $TMP/chat.toml"
    wait_for 1 "Throughput"
    local starting=() running=() ending=() phase=starting done_at=0 most=0
    while :; do
        local t0 dt; t0=$(now_ms); tmux -L "$SOCK" send-keys -t b '?'; wait_for 1 "Help: any key"
        dt=$(( $(now_ms) - t0 ))
        t0=$(now_ms); tmux -L "$SOCK" send-keys -t b Escape; wait_for 0 "Help: any key"
        local dt2=$(( $(now_ms) - t0 ))
        # The chat's row: its state ("run 70%" while it runs, "done") and its live threads,
        # the first whole number after the state.
        local row; row=$(screen | awk '$1=="■" && $2=="chat" {for (i = 3; i <= NF; i++) if ($i ~ /^[0-9]+$/) {print $3, $i; exit}}')
        local state=${row%% *} tasks=${row##* }
        [ "${tasks:-0}" -eq "${tasks:-0}" ] 2>/dev/null && [ "${tasks:-0}" -gt "$most" ] && most=$tasks
        if [ "$phase" = starting ] && [ "${tasks:-0}" -ge $(( threads * 9 / 10 )) ] 2>/dev/null; then phase=running; fi
        if [ "$phase" != ending ] && [ "$state" = done ]; then phase=ending; done_at=$(now_ms); fi
        case $phase in
            starting) starting+=("$dt" "$dt2") ;;
            running) running+=("$dt" "$dt2") ;;
            ending) ending+=("$dt" "$dt2") ;;
        esac
        [ "$phase" = ending ] && [ $(( $(now_ms) - done_at )) -gt 5000 ] && break
        sleep 0.1
    done
    local self; self=$(screen | grep -o 'self [0-9.]*%' | head -1 || true)
    echo "$rooms-room chat ($threads threads), 1 Hz, most tasks seen: $most; $self at the end"
    echo "  while it starts: $(stats "${starting[@]}")"
    echo "  while it runs:   $(stats "${running[@]}")"
    echo "  as it stops, and 5 s after: $(stats "${ending[@]}")"
    tmux -L "$SOCK" send-keys -t b q
    sleep 1
    tmux -L "$SOCK" kill-server 2>/dev/null || true
}

echo "machine: $(nproc) CPUs, kernel $(uname -r); load now: $(cut -d' ' -f1-3 /proc/loadavg)"
run_case "default scenario" ""
run_case "+ 5,000 sleeping tasks" "$TMP/sleepers 5000"
[ "$CHAT_ROOMS" -gt 0 ] && chat_case "$CHAT_ROOMS"
