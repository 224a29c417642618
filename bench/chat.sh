#!/usr/bin/env bash
# Chatroom benchmark throughput: schedlab chat-client/chat-server against a C implementation of
# the same protocol (bench/c/chat_c.c, chat_s.c), runs alternating between the two, for 10 rooms
# x 100 messages and the 2002 chatroom thread's 30 x 1000. Prints, per size, each side's median
# messages/s with its spread (min..max) and the ratio of medians (schedlab / C; 1.00 = par,
# above = faster).
#
# usage: bench/chat.sh [RUNS]        RUNS of each side per size (default 5)
# env:   CHAT_SIZES="10x100 30x1000"  CHAT_PORT_C=29997  CHAT_PORT_S=29998
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
sizes=${CHAT_SIZES:-"10x100 30x1000"}
port_c=${CHAT_PORT_C:-29997}
port_s=${CHAT_PORT_S:-29998}

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cc -O2 -pthread -o "$tmp/chat_s" bench/c/chat_s.c
cc -O2 -pthread -o "$tmp/chat_c" bench/c/chat_c.c
cargo build --release --quiet
schedlab=target/release/schedlab

"$tmp/chat_s" 127.0.0.1 "$port_c" >/dev/null &
pids+=($!)
"$schedlab" chat-server 127.0.0.1 "$port_s" >/dev/null &
pids+=($!)
sleep 0.5
for p in "${pids[@]}"; do
  kill -0 "$p" 2>/dev/null || { echo "a chat server did not start (ports $port_c, $port_s: set CHAT_PORT_C/CHAT_PORT_S)" >&2; exit 1; }
done

throughput() { awk '/^Average throughput/ {print $4}'; }
c_run() { "$tmp/chat_c" 127.0.0.1 "$1" "$2" "$port_c" | throughput; }
s_run() { "$schedlab" chat-client 127.0.0.1 "$1" "$2" "$port_s" | throughput; }
. bench/lib.sh
# "median min max" of the numbers on stdin.
stats() { bench_stats | awk '{printf "%.0f %.0f %.0f\n", $1, $4, $5}'; }

echo "chat throughput, messages/s (sent + received), $runs runs each, alternating; $(nproc) CPUs, kernel $(uname -r)"
printf '%-8s %-30s %-30s %s\n' size "C median (min..max)" "schedlab median (min..max)" "schedlab/C"
for size in $sizes; do
  rooms=${size%x*} messages=${size#*x}
  : >"$tmp/c" && : >"$tmp/s"
  for i in $(seq 1 "$runs"); do
    # Alternate which side goes first, so that drift in the machine hits both alike.
    if (( i % 2 )); then c_run "$rooms" "$messages" >>"$tmp/c"; s_run "$rooms" "$messages" >>"$tmp/s"
    else s_run "$rooms" "$messages" >>"$tmp/s"; c_run "$rooms" "$messages" >>"$tmp/c"; fi
  done
  read -r cm cmin cmax < <(stats <"$tmp/c")
  read -r sm smin smax < <(stats <"$tmp/s")
  printf '%-8s %-30s %-30s %s\n' "$size" "$cm ($cmin..$cmax)" "$sm ($smin..$smax)" \
    "$(awk -v s="$sm" -v c="$cm" 'BEGIN {printf "%.2f", s/c}')"
done
