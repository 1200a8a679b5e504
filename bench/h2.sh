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
# Benchmark runs are not the project's history (loadlab history).
export LOADLAB_HISTORY=${LOADLAB_HISTORY:-off}

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
for tool in nginx curl taskset openssl h2load; do
  command -v $tool >/dev/null || [[ -x /usr/sbin/$tool ]] || {
    echo "h2.sh needs $tool (h2load: apt-get install nghttp2-client)" >&2
    exit 1
  }
done
[[ -x /usr/bin/time ]] || { echo "h2.sh needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
work=$(mktemp -d /tmp/loadlab-h2.XXXXXX)
chmod 755 "$work" # nginx's workers run as nobody
tls_port=18443 h2c_port=18083 status_port=18084
cleanup() {
  [[ -f $work/nginx.pid ]] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

if [[ -z ${LOADLAB:-} ]]; then
  go build -o "$work/loadlab" ./cmd/loadlab
  LOADLAB=$work/loadlab
fi
mkdir -p "$work/www" "$work/tmp" "$work/logs"
head -c 100 /dev/zero | tr '\0' 'x' >"$work/www/static.txt"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 \
  -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
# nginx 1.22 (Debian 12) spells http2 as a listen parameter; from 1.25.1
# "http2 on;" says the same and the parameter is deprecated, not gone.
cat >"$work/nginx.conf" <<EOF
worker_processes 1;
worker_rlimit_nofile 20000;
pid $work/nginx.pid;
error_log $work/logs/error.log warn;
daemon on;
events { worker_connections 19000; use epoll; multi_accept on; }
http {
  access_log off; sendfile on; tcp_nodelay on;
  keepalive_timeout 65; keepalive_requests 100000000;
  http2_max_requests 100000000; http2_max_concurrent_streams 128;
  client_body_temp_path $work/tmp/body; proxy_temp_path $work/tmp/proxy;
  fastcgi_temp_path $work/tmp/fcgi; uwsgi_temp_path $work/tmp/uwsgi; scgi_temp_path $work/tmp/scgi;
  server {
    listen 127.0.0.1:$tls_port ssl http2 backlog=65535;
    listen 127.0.0.1:$h2c_port http2 backlog=65535;
    listen 127.0.0.1:$status_port;
    ssl_certificate $work/cert.pem; ssl_certificate_key $work/key.pem;
    root $work/www;
    location = /static.txt { }
    location = /nginx_status { stub_status; }
  }
}
EOF
ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)"
taskset -c 0 nginx -c "$work/nginx.conf" -p "$work" 2>"$work/nginx.err" || {
  cat "$work/nginx.err" >&2
  exit 1
}
for _ in $(seq 50); do [[ -f $work/nginx.pid ]] && break; sleep 0.1; done

served() { curl -s "http://127.0.0.1:$status_port/nginx_status" | awk 'NR==3{print $3}'; }

# measure NAME COMMAND...: prints "req/s cpu_us_per_req peak_rss_mb"
measure() {
  local name=$1 before after
  shift
  before=$(served)
  taskset -c 1 /usr/bin/time -f '%U %S %M' -o "$work/$name.time" "$@" >"$work/$name.out" 2>"$work/$name.err" || {
    echo "$name failed: $(tail -3 "$work/$name.err")" >&2
    echo "- - -"
    return
  }
  after=$(served)
  read -r u s m <"$work/$name.time" || true
  awk -v n="$((after - before - 1))" -v u="$u" -v s="$s" -v m="$m" -v d="$dur" \
    'BEGIN { if (n <= 0) { print "- - -"; exit } printf "%.0f %.2f %.1f\n", n/d, (u+s)*1e6/n, m/1024 }'
}

# run TOOL PROTO CONNS STREAMS
run() {
  local tool=$1 proto=$2 c=$3 m=$4 url
  url=https://127.0.0.1:$tls_port/static.txt
  [[ $proto == h2c ]] && url=http://127.0.0.1:$h2c_port/static.txt
  case $tool in
    loadlab) measure "loadlab-$proto" "$LOADLAB" run --url "$url" --insecure --http2 -c "$c" --streams "$m" -d "${dur}s" ;;
    # h2load speaks h2c with prior knowledge to an http:// URL.
    h2load) measure "h2load-$proto" h2load -t1 -c"$c" -m"$m" -D"$dur" "$url" ;;
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
    ratios[$proto]+="$(awk -v a="${cpu[loadlab]}" -v b="${cpu[h2load]}" 'BEGIN { if (a == "-" || b == "-") print "-"; else printf "%.2f", a/b }') "
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
  printf '%s\n' ${ratios[$proto]} | grep -v '^-$' | sort -n | awk -v p="$proto" '{ v[NR] = $1 } END { if (NR == 0) { printf "loadlab/h2load cpu per request (%s): unmeasured\n", p; exit 1 } printf "loadlab/h2load cpu per request (%s): %s\n", p, v[int((NR + 1) / 2)] }'
done
