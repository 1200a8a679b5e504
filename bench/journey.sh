#!/usr/bin/env bash
# journey.sh: CPU per request of loadlab's journey mode (captures, cookies,
# checks) beside its quick mode, against the same nginx, in one run.
#
# nginx is pinned to CPU 0 and loadlab to CPU 1; CPU per request is loadlab's
# user+sys time divided by the requests nginx counted (stub_status).
# The journey: GET an HTML page that sets a session cookie and carries a CSRF
# token (captured by CSS selector), POST a form with the token (JSON answer,
# token captured by JSONPath), GET a JSON API with a bearer token (status and
# JSONPath checks).
#
# Usage (from the project root):  bench/journey.sh [-d SECONDS] [-c VUS] [-a 'LOADLAB FLAGS']
# -a adds flags to both loadlab runs, such as -a '--metrics-addr 127.0.0.1:0'
# to measure what the live metrics cost.
# Prints a table and, last, "journey/quick cpu per request: R".
set -euo pipefail
# Benchmark runs are not the project's history (loadlab history).
export LOADLAB_HISTORY=${LOADLAB_HISTORY:-off}

dur=8 vus=50 extra=""
while (($#)); do
  case $1 in
    -d) dur=$2; shift 2 ;;
    -c) vus=$2; shift 2 ;;
    -a) extra=$2; shift 2 ;;
    *) echo "usage: $0 [-d SECONDS] [-c VUS] [-a 'LOADLAB FLAGS']" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d /tmp/loadlab-journey.XXXXXX)
chmod 755 "$work" # nginx's workers run as nobody
port=18081
cleanup() {
  [[ -f $work/nginx.pid ]] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
[[ -n ${KEEP:-} ]] && trap - EXIT
command -v nginx >/dev/null || [[ -x /usr/sbin/nginx ]] || scripts/test-deps
go build -o "$work/loadlab" ./cmd/loadlab

mkdir -p "$work/www" "$work/tmp" "$work/logs"
head -c 100 /dev/zero | tr '\0' 'x' >"$work/www/static.txt"
{
  echo '<!doctype html><html><head><title>Shop</title></head><body><h1>Products</h1><ul>'
  for i in $(seq 1 20); do echo "<li><a href=\"/products/$i\">Product $i</a> <span class=\"price\">\$$i.99</span></li>"; done
  echo '</ul><form method="post" action="/login"><input type="hidden" name="authenticity_token" value="Xk2f9QpLz8vR3mN7tY1wB5cH0jD4gS6e">'
  echo '<input name="email"><input type="password" name="password"><button>Log in</button></form></body></html>'
} >"$work/www/form.html"
echo '{"id":3,"name":"Product 3","price_cents":399,"tags":["a","b"]}' >"$work/www/api.json"
cat >"$work/nginx.conf" <<CONF
worker_processes 1;
pid $work/nginx.pid;
error_log $work/logs/error.log warn;
daemon on;
events { worker_connections 4096; use epoll; }
http {
  access_log off; sendfile on; tcp_nodelay on;
  keepalive_timeout 65; keepalive_requests 100000000;
  client_body_temp_path $work/tmp/body; proxy_temp_path $work/tmp/proxy;
  fastcgi_temp_path $work/tmp/fcgi; uwsgi_temp_path $work/tmp/uwsgi; scgi_temp_path $work/tmp/scgi;
  server {
    listen 127.0.0.1:$port backlog=4096;
    root $work/www;
    location = /static.txt { }
    location = /form.html { add_header Set-Cookie "session=s3ss10n; Path=/; HttpOnly"; }
    location = /api.json { default_type application/json; }
    location = /login { default_type application/json; return 200 '{"token":"tok-123","user":"guest"}'; }
    location = /nginx_status { stub_status; }
  }
}
CONF
cat >"$work/journey.yaml" <<PLAN
target: http://127.0.0.1:$port
steps:
  - get: /form.html
    capture: { csrf: { css: "input[name=authenticity_token]", attr: value } }
  - post: /login
    form: { email: "user-{{ vu }}@example.com", password: secret, authenticity_token: "{{ csrf }}" }
    capture: { token: { json: "\$.token" } }
  - get: /api.json
    headers: { Authorization: "Bearer {{ token }}" }
    expect: { status: 200, json: { "\$.id": 3 } }
load:
  closed: { vus: $vus, duration: ${dur}s }
PLAN
taskset -c 0 nginx -c "$work/nginx.conf" -p "$work"
for _ in $(seq 50); do [[ -f $work/nginx.pid ]] && break; sleep 0.1; done
served() { curl -s http://127.0.0.1:$port/nginx_status | awk 'NR==3{print $3}'; }

measure() { # NAME COMMAND...: prints "req/s cpu_us_per_req peak_rss_mb"
  local name=$1; shift
  local before after
  before=$(served)
  taskset -c 1 /usr/bin/time -f '%U %S %M' -o "$work/$name.time" "$@" >"$work/$name.out" 2>"$work/$name.err" || {
    echo "$name failed: $(tail -3 "$work/$name.err")" >&2; echo "- - -"; return; }
  after=$(served)
  read -r u s m <"$work/$name.time"
  awk -v n=$((after - before - 1)) -v u="$u" -v s="$s" -v m="$m" -v d="$dur" \
    'BEGIN { printf "%.0f %.2f %.1f\n", n/d, (u+s)*1e6/n, m/1024 }'
}

printf '%-8s %6s %10s %14s %12s\n' mode vus 'req/s' 'cpu us/req' 'peak RSS MB'
read -r qr qc qm < <(measure quick "$work/loadlab" run --url "http://127.0.0.1:$port/static.txt" -c "$vus" -d "${dur}s" --json $extra)
grep -q '"total": 0' "$work/quick.out" || { echo "quick mode had errors:" >&2; cat "$work/quick.out" >&2; exit 1; }
printf '%-8s %6s %10s %14s %12s\n' quick "$vus" "$qr" "$qc" "$qm"
sleep 1
read -r jr jc jm < <(measure journey "$work/loadlab" run "$work/journey.yaml" --json $extra)
printf '%-8s %6s %10s %14s %12s\n' journey "$vus" "$jr" "$jc" "$jm"
if ! grep -q '"failed": 0' "$work/journey.out" || ! grep -q '"total": 0' "$work/journey.out"; then
  echo "the journey had errors or failed checks:" >&2; cat "$work/journey.out" >&2; exit 1
fi
awk -v a="$jc" -v b="$qc" 'BEGIN { printf "journey/quick cpu per request: %.2f\n", a/b }'
