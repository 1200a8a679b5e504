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
# Benchmark runs are not the project's history (loadlab history).
export LOADLAB_HISTORY=${LOADLAB_HISTORY:-off}

dur=8 conns=50 rounds=3
while (($#)); do
  case $1 in
    -d) dur=$2; shift 2 ;;
    -c) conns=$2; shift 2 ;;
    -r) rounds=$2; shift 2 ;;
    *) echo "usage: $0 [-d SECONDS] [-c CONNS] [-r ROUNDS]" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d /tmp/loadlab-tls.XXXXXX)
chmod 755 "$work" # nginx's workers run as nobody
port=18443
cleanup() {
  [[ -f $work/nginx.pid ]] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
for tool in nginx wrk curl taskset openssl; do
  command -v $tool >/dev/null || { echo "tls.sh needs $tool (apt-get install nginx wrk curl openssl)" >&2; exit 1; }
done
[[ -x /usr/bin/time ]] || { echo "tls.sh needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
if [[ -z ${LOADLAB:-} ]]; then
  go build -o "$work/loadlab" ./cmd/loadlab
  LOADLAB=$work/loadlab
fi

# A private CA and a certificate for 127.0.0.1 from it (ECDSA P-256, as
# most sites now serve).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=bench-ca \
  -keyout "$work/ca.key" -out "$work/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=127.0.0.1 \
  -keyout "$work/key.pem" -out "$work/cert.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' >"$work/ext.cnf"
openssl x509 -req -in "$work/cert.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -CAcreateserial -days 1 \
  -extfile "$work/ext.cnf" -out "$work/cert.pem" 2>/dev/null

mkdir -p "$work/www" "$work/tmp" "$work/logs"
head -c 100 /dev/zero | tr '\0' 'x' >"$work/www/static.txt"
cat >"$work/nginx.conf" <<EOF2
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
    listen 127.0.0.1:$port ssl backlog=65535;
    ssl_certificate $work/cert.pem; ssl_certificate_key $work/key.pem;
    root $work/www;
    location = /static.txt { }
    location = /nginx_status { stub_status; }
  }
}
EOF2
ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)"
taskset -c 0 nginx -c "$work/nginx.conf" -p "$work"
for _ in $(seq 50); do [[ -f $work/nginx.pid ]] && break; sleep 0.1; done
url=https://127.0.0.1:$port/static.txt

served() { curl -s --cacert "$work/ca.pem" "https://127.0.0.1:$port/nginx_status" | awk 'NR==3{print $3}'; }

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

run_tool() {
  case $1 in
    loadlab) measure loadlab "$LOADLAB" run --url "$url" --tls-ca "$work/ca.pem" -c "$conns" -d "${dur}s" ;;
    wrk) measure wrk wrk -t1 -c"$conns" -d"${dur}s" "$url" ;;
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
  ratios+=("$(awk -v a="${cpu[loadlab]}" -v b="${cpu[wrk]}" 'BEGIN { if (a == "-" || b == "-") print "-"; else printf "%.2f", a/b }')")
done
echo "loadlab/wrk cpu per request over TLS by round: ${ratios[*]}"
printf '%s\n' "${ratios[@]}" | grep -v '^-$' | sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) { print "loadlab/wrk cpu per request over TLS: unmeasured"; exit 1 } printf "loadlab/wrk cpu per request over TLS: %s\n", v[int((NR + 1) / 2)] }'
