#!/usr/bin/env bash
# tls.sh: loadlab's quick mode side by side with wrk over HTTPS keep-alive,
# in one run, as ../shared/bench/peers.sh does over plain HTTP.
#
# Both tools send keep-alive GETs of a 100-byte file to the same nginx with
# ssl on loopback (a private CA's certificate; loadlab verifies it with
# --tls-ca, wrk does not verify). nginx is pinned to CPU 0 and each tool to
# CPU 1; the figure is CPU time per request (user+sys of the tool over the
# requests nginx counted in stub_status). With keep-alive the handshakes
# (one per connection) are amortised. The tools alternate, ROUNDS times, so
# drift hits both alike; the ratio reported is the median round's.
#
# Usage (from the project root):  bench/tls.sh [-d SECONDS] [-c CONNS] [-r ROUNDS]
#   LOADLAB=path   use this loadlab binary instead of building ./cmd/loadlab
# Prints a table and, last, "loadlab/wrk cpu per request over TLS: R" (lower is better).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

dur=8 conns=50 rounds=3
while (($#)); do
  case $1 in
    -d) dur=$2; shift 2 ;;
    -c) conns=$2; shift 2 ;;
    -r) rounds=$2; shift 2 ;;
    *) echo "usage: $0 [-d SECONDS] [-c CONNS] [-r ROUNDS]" >&2; exit 2 ;;
  esac
done
bench_need nginx wrk curl taskset openssl
bench_init tls
bench_loadlab
bench_cert_ca
port=18443
nginx_server_extra="ssl_certificate $work/cert.pem; ssl_certificate_key $work/key.pem;"
bench_nginx "https://127.0.0.1:$port/nginx_status" "127.0.0.1:$port ssl"
url=https://127.0.0.1:$port/static.txt

run_tool() {
  case $1 in
    loadlab) bench_measure loadlab "$LOADLAB" run --url "$url" --tls-ca "$work/ca.pem" -c "$conns" -d "${dur}s" ;;
    wrk) bench_measure wrk wrk -t1 -c"$conns" -d"${dur}s" "$url" ;;
  esac
}

printf '%-5s %-8s %6s %10s %14s %12s\n' round tool conns 'req/s' 'cpu us/req' 'peak RSS MB'
ratios=()
for r in $(seq "$rounds"); do
  declare -A cpu=()
  for tool in loadlab wrk; do
    read -r rps us mb < <(run_tool "$tool")
    printf '%-5s %-8s %6s %10s %14s %12s\n' "$r" "$tool" "$conns" "$rps" "$us" "$mb"
    cpu[$tool]=$us
    sleep 1
  done
  ratios+=("$(bench_ratio "${cpu[loadlab]}" "${cpu[wrk]}")")
done
echo "loadlab/wrk cpu per request over TLS by round: ${ratios[*]}"
bench_median "loadlab/wrk cpu per request over TLS" "${ratios[@]}"
