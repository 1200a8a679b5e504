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
#   --tls   HTTPS to the same nginx (a self-signed certificate, --insecure)
# Prints a table and, last, "portable/epoll cpu per request: R" (the median round).
set -euo pipefail
# Benchmark runs are not the project's history (loadlab history).
export LOADLAB_HISTORY=${LOADLAB_HISTORY:-off}

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
work=$(mktemp -d /tmp/loadlab-engines.XXXXXX)
chmod 755 "$work" # nginx's workers run as nobody
port=18082
cleanup() {
  [[ -f $work/nginx.pid ]] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
for tool in nginx curl taskset openssl; do
  command -v $tool >/dev/null || { echo "engines.sh needs $tool" >&2; exit 1; }
done
[[ -x /usr/bin/time ]] || { echo "engines.sh needs /usr/bin/time (apt-get install time)" >&2; exit 1; }

go build -o "$work/loadlab" ./cmd/loadlab
mkdir -p "$work/www" "$work/tmp" "$work/logs"
head -c 100 /dev/zero | tr '\0' 'x' >"$work/www/static.txt"
scheme=http listen="127.0.0.1:$port"
if ((tls)); then
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 \
    -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
  scheme=https listen="127.0.0.1:$port ssl"
fi
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
  client_body_temp_path $work/tmp/body; proxy_temp_path $work/tmp/proxy;
  fastcgi_temp_path $work/tmp/fcgi; uwsgi_temp_path $work/tmp/uwsgi; scgi_temp_path $work/tmp/scgi;
  server {
    listen $listen backlog=65535;
    $( ((tls)) && echo "ssl_certificate $work/cert.pem; ssl_certificate_key $work/key.pem;" )
    root $work/www;
    location = /static.txt { }
    location = /nginx_status { stub_status; }
  }
}
EOF
ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)"
taskset -c 0 nginx -c "$work/nginx.conf" -p "$work"
for _ in $(seq 50); do [[ -f $work/nginx.pid ]] && break; sleep 0.1; done
url=$scheme://127.0.0.1:$port/static.txt

served() { curl -sk "$scheme://127.0.0.1:$port/nginx_status" | awk 'NR==3{print $3}'; }

# measure ENGINE: prints "req/s cpu_us_per_req peak_rss_mb"
measure() {
  local engine=$1 before after
  before=$(served)
  LOADLAB_ENGINE=$engine taskset -c 1 /usr/bin/time -f '%U %S %M' -o "$work/$engine.time" \
    "$work/loadlab" run --url "$url" --insecure -c "$conns" -d "${dur}s" >"$work/$engine.out" 2>"$work/$engine.err" || {
    echo "$engine failed: $(tail -3 "$work/$engine.err")" >&2
    echo "- - -"
    return
  }
  after=$(served)
  read -r u s m <"$work/$engine.time" || true
  awk -v n="$((after - before - 1))" -v u="$u" -v s="$s" -v m="$m" -v d="$dur" \
    'BEGIN { if (n <= 0) { print "- - -"; exit } printf "%.0f %.2f %.1f\n", n/d, (u+s)*1e6/n, m/1024 }'
}

printf '%-5s %-8s %6s %10s %14s %12s\n' round engine conns 'req/s' 'cpu us/req' 'peak RSS MB'
ratios=()
for r in $(seq "$rounds"); do
  declare -A cpu=()
  for engine in epoll portable; do
    read -r rps us mb < <(measure "$engine")
    printf '%-5s %-8s %6s %10s %14s %12s\n' "$r" "$engine" "$conns" "$rps" "$us" "$mb"
    cpu[$engine]=$us
    sleep 1
  done
  ratios+=("$(awk -v a="${cpu[portable]}" -v b="${cpu[epoll]}" 'BEGIN { if (a == "-" || b == "-") print "-"; else printf "%.2f", a/b }')")
done
echo "portable/epoll cpu per request by round: ${ratios[*]}"
printf '%s\n' "${ratios[@]}" | grep -v '^-$' | sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) { print "portable/epoll cpu per request: unmeasured"; exit 1 } printf "portable/epoll cpu per request: %s\n", v[int((NR + 1) / 2)] }'
