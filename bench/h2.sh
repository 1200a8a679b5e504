#!/usr/bin/env bash
# h2.sh: loadlab's HTTP/2 quick mode (--http2 --streams) side by side with
# h2load (Debian's nghttp2-client), in one run, against the same nginx with
# http2 on: h2 over TLS (ALPN, a self-signed certificate) and h2c with prior
# knowledge.
#
# As shared/bench/peers.sh: GETs of a 100-byte static file, nginx pinned to
# CPU 0 and each load tool to CPU 1, CPU per request = the tool's user+sys
# time over the requests nginx counted (stub_status counts every stream).
# The tools alternate, ROUNDS times, so drift hits both alike.
#
# Usage (from the project root):  bench/h2.sh [-d SECONDS] [-c CONNS] [-m STREAMS] [-r ROUNDS] [--big]
#   --big   also 50 connections × 100 streams (5,000 streams) and each tool's peak RSS
# Prints a table and, last, "loadlab/h2load cpu per request (h2): R" (the median round).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

dur=5 conns=10 streams=10 rounds=3 big=0
while (($#)); do
  case $1 in
    -d) dur=$2; shift 2 ;;
    -c) conns=$2; shift 2 ;;
    -m) streams=$2; shift 2 ;;
    -r) rounds=$2; shift 2 ;;
    --big) big=1; shift ;;
    *) echo "usage: $0 [-d SECONDS] [-c CONNS] [-m STREAMS] [-r ROUNDS] [--big]" >&2; exit 2 ;;
  esac
done
bench_need nginx curl taskset openssl h2load
bench_init h2
bench_loadlab
bench_cert_self
tls_port=18443 h2c_port=18083 status_port=18084
# nginx 1.22 (Debian 12) spells http2 as a listen parameter; from 1.25.1
# "http2 on;" says the same and the parameter is deprecated, not gone.
nginx_http_extra="http2_max_requests 100000000; http2_max_concurrent_streams 128;"
nginx_server_extra="ssl_certificate $work/cert.pem; ssl_certificate_key $work/key.pem;"
bench_nginx "http://127.0.0.1:$status_port/nginx_status" "127.0.0.1:$tls_port ssl http2" "127.0.0.1:$h2c_port http2" "127.0.0.1:$status_port"

# run TOOL PROTO CONNS STREAMS
run() {
  local tool=$1 proto=$2 c=$3 m=$4 url
  url=https://127.0.0.1:$tls_port/static.txt
  [[ $proto == h2c ]] && url=http://127.0.0.1:$h2c_port/static.txt
  case $tool in
    loadlab) bench_measure "loadlab-$proto" "$LOADLAB" run --url "$url" --insecure --http2 -c "$c" --streams "$m" -d "${dur}s" ;;
    # h2load speaks h2c with prior knowledge to an http:// URL.
    h2load) bench_measure "h2load-$proto" h2load -t1 -c"$c" -m"$m" -D"$dur" "$url" ;;
  esac
}

printf '%-5s %-8s %-5s %13s %10s %14s %12s\n' round tool proto 'conns×streams' 'req/s' 'cpu us/req' 'peak RSS MB'
declare -A ratios=()
for r in $(seq "$rounds"); do
  for proto in h2 h2c; do
    declare -A cpu=()
    for tool in loadlab h2load; do
      read -r rps us mb < <(run "$tool" "$proto" "$conns" "$streams")
      printf '%-5s %-8s %-5s %13s %10s %14s %12s\n' "$r" "$tool" "$proto" "${conns}×${streams}" "$rps" "$us" "$mb"
      cpu[$tool]=$us
      sleep 1
    done
    ratios[$proto]+="$(bench_ratio "${cpu[loadlab]}" "${cpu[h2load]}") "
  done
done
if ((big)); then
  for tool in loadlab h2load; do
    read -r rps us mb < <(run "$tool" h2 50 100)
    printf '%-5s %-8s %-5s %13s %10s %14s %12s\n' big "$tool" h2 "50×100" "$rps" "$us" "$mb"
    sleep 1
  done
fi
for proto in h2c h2; do
  echo "loadlab/h2load cpu per request ($proto) by round: ${ratios[$proto]}"
  # shellcheck disable=SC2086 # the ratios are words
  bench_median "loadlab/h2load cpu per request ($proto)" ${ratios[$proto]}
done
