#!/usr/bin/env bash
# memory.sh: loadlab's peak RSS, in one run, beside its peers where there is
# one (issue 29's table): the idle binary, HTTP/1.1 at 50 and at 5,000
# connections (wrk), 10,000 idle VUs, HTTP/2 at 5,000 streams (h2load), and
# 10,000 WebSocket sockets that each send one small message a second.
#
# As the other scripts (lib.sh): nginx serves a 100-byte file on loopback,
# pinned to CPU 0, each tool pinned to CPU 1; peak RSS is /usr/bin/time's
# %M (the kernel's maxrss: the tool's whole peak, its binary's pages it
# touched included). The WebSocket sockets go to `loadlab target`'s /ws echo
# (a separate process on CPU 0). Tools alternate ROUNDS times; the table
# prints every round and, last, each figure's median.
#
# Usage (from the project root):  bench/memory.sh [-d SECONDS] [-r ROUNDS]
# Needs nginx, wrk and h2load (apt-get install nginx wrk nghttp2-client).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

dur=5 rounds=1
while (($#)); do
  case $1 in
    -d) dur=$2; shift 2 ;;
    -r) rounds=$2; shift 2 ;;
    *) echo "usage: $0 [-d SECONDS] [-r ROUNDS]" >&2; exit 2 ;;
  esac
done
bench_need nginx curl taskset wrk h2load
bench_init memory
bench_loadlab
port=18180 h2c_port=18181 status_port=18182 ws_port=18183
nginx_http_extra="http2_max_requests 100000000; http2_max_concurrent_streams 128;"
bench_nginx "http://127.0.0.1:$status_port/nginx_status" "127.0.0.1:$port" "127.0.0.1:$h2c_port http2" "127.0.0.1:$status_port"
url=http://127.0.0.1:$port/static.txt

taskset -c 0 "$LOADLAB" target --addr 127.0.0.1:$ws_port >"$work/target.log" 2>&1 &
target_pid=$!
trap 'kill $target_pid 2>/dev/null; [[ -n ${KEEP:-} ]] || bench_cleanup' EXIT # KEEP=1 keeps $work, as lib.sh does
for _ in $(seq 50); do curl -s "http://127.0.0.1:$ws_port/health" >/dev/null && break; sleep 0.1; done

# 10,000 VUs, each with its own connection, cookie jar and variables,
# pausing 8 s between two requests (TestTenThousandIdleVUs's journey).
cat >"$work/idle.yaml" <<EOF
target: $url
vars: { shop: demo }
steps:
  - get: /static.txt?page=1
    capture: { session: { header: Content-Type } }
  - think: 8s
  - get: "/static.txt?page=2&shop={{ shop }}&s={{ session }}"
load: { closed: { vus: 10000, iterations: 1 } }
EOF
# 10,000 sockets, each sending a small message a second for DUR seconds
# and reading its echo.
{
  echo "target: http://127.0.0.1:$ws_port"
  echo "steps:"
  echo "  - ws: /ws"
  echo "    name: socket"
  echo "    do:"
  for _ in $(seq "$dur"); do
    echo "      - send: 'hello {{ vu }}'"
    echo "      - receive: { expect: { contains: hello } }"
    echo "      - think: 1s"
  done
  echo "load: { closed: { vus: 10000, iterations: 1 } }"
} >"$work/ws.yaml"

# peak NAME CMD...: the command's peak RSS in MB, pinned to CPU 1; "-" when it failed.
peak() {
  local name=$1
  shift
  if taskset -c 1 /usr/bin/time -f '%M' -o "$work/$name.rss" "$@" >"$work/$name.out" 2>"$work/$name.err"; then
    awk '{ printf "%.1f\n", $1/1024 }' "$work/$name.rss"
  else
    echo "$name failed: $(tail -3 "$work/$name.err")" >&2
    echo "-"
  fi
}

ulimit -n 30000 2>/dev/null || ulimit -n "$(ulimit -Hn)"
declare -A all=()
printf '%-5s %-34s %12s %12s %8s\n' round figure 'loadlab MB' 'peer MB' ratio
row() { # ROUND FIGURE LOADLAB PEER
  printf '%-5s %-34s %12s %12s %8s\n' "$1" "$2" "$3" "${4:--}" "$(bench_ratio "$3" "${4:--}")"
  all["$2|loadlab"]+="$3 "
  all["$2|peer"]+="${4:--} "
}
for r in $(seq "$rounds"); do
  row "$r" "idle binary (loadlab version)" "$(peak version "$LOADLAB" version)"
  for c in 50 5000; do
    ll=$(peak "ll-$c" "$LOADLAB" run --url "$url" -c "$c" -d "${dur}s" --no-history --threshold 'error_rate < 100%')
    wk=$(peak "wrk-$c" wrk -t1 -c"$c" -d"${dur}s" "$url")
    row "$r" "HTTP/1.1, $c connections (wrk)" "$ll" "$wk"
  done
  row "$r" "10,000 idle VUs" "$(peak idle "$LOADLAB" run "$work/idle.yaml" --no-history)"
  ll=$(peak h2 "$LOADLAB" run --url "http://127.0.0.1:$h2c_port/static.txt" --http2 -c 50 --streams 100 -d "${dur}s" --no-history --threshold 'error_rate < 100%')
  h2=$(peak h2load h2load -t1 -c50 -m100 -D"$dur" "http://127.0.0.1:$h2c_port/static.txt")
  row "$r" "HTTP/2 h2c, 5,000 streams (h2load)" "$ll" "$h2"
  row "$r" "10,000 WebSockets, 1 message/s" "$(peak ws "$LOADLAB" run "$work/ws.yaml" --no-history)"
done
if ((rounds > 1)); then
  echo
  echo "medians of $rounds rounds:"
  for k in "${!all[@]}"; do
    bench_median "$k" ${all[$k]} || true
  done | sort
fi
