#!/usr/bin/env bash
# engines.sh: CPU per request of loadlab's two HTTP engines, epoll and
# portable (LOADLAB_ENGINE), side by side in one run against the same nginx.
#
# Quick mode, keep-alive GETs of a 100-byte file, nginx pinned to CPU 0 and
# loadlab to CPU 1 (as shared/bench/peers.sh does); CPU per request is
# loadlab's user+sys time over the requests nginx counted (stub_status). The
# engines alternate, ROUNDS times, so drift hits both alike.
#
# Usage (from the project root):  bench/engines.sh [-d SECONDS] [-c CONNS] [-r ROUNDS] [--tls]
#   LOADLAB=path   use this loadlab binary instead of building ./cmd/loadlab
#   --tls   HTTPS to the same nginx (a self-signed certificate, --insecure)
# Prints a table and, last, "portable/epoll cpu per request: R" (the median round).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

dur=5 conns=50 rounds=3 tls=0
while (($#)); do
  case $1 in
    -d) dur=$2; shift 2 ;;
    -c) conns=$2; shift 2 ;;
    -r) rounds=$2; shift 2 ;;
    --tls) tls=1; shift ;;
    *) echo "usage: $0 [-d SECONDS] [-c CONNS] [-r ROUNDS] [--tls]" >&2; exit 2 ;;
  esac
done
bench_need nginx curl taskset openssl
bench_init engines
bench_loadlab
port=18082
scheme=http listen="127.0.0.1:$port"
if ((tls)); then
  bench_cert_self
  scheme=https listen="127.0.0.1:$port ssl"
  nginx_server_extra="ssl_certificate $work/cert.pem; ssl_certificate_key $work/key.pem;"
fi
bench_nginx "$scheme://127.0.0.1:$port/nginx_status" "$listen"
url=$scheme://127.0.0.1:$port/static.txt

printf '%-5s %-8s %6s %10s %14s %12s\n' round engine conns 'req/s' 'cpu us/req' 'peak RSS MB'
ratios=()
for r in $(seq "$rounds"); do
  declare -A cpu=()
  for engine in epoll portable; do
    read -r rps us mb < <(LOADLAB_ENGINE=$engine bench_measure "$engine" "$LOADLAB" run --url "$url" --insecure -c "$conns" -d "${dur}s")
    printf '%-5s %-8s %6s %10s %14s %12s\n' "$r" "$engine" "$conns" "$rps" "$us" "$mb"
    cpu[$engine]=$us
    sleep 1
  done
  ratios+=("$(bench_ratio "${cpu[portable]}" "${cpu[epoll]}")")
done
echo "portable/epoll cpu per request by round: ${ratios[*]}"
bench_median "portable/epoll cpu per request" "${ratios[@]}"
