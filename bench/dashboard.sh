#!/usr/bin/env bash
# dashboard.sh: what --dashboard with a page open costs the load. CPU per
# request of loadlab's quick mode against nginx, without the dashboard and
# with --dashboard and a headless Chromium (Playwright, tools/npm) showing
# the page throughout, in alternating pairs (A B, B A, ...) in one run.
#
# nginx and Chromium are pinned to CPU 0, loadlab to CPU 1; CPU per request
# is loadlab's user+sys time divided by the requests nginx counted
# (stub_status). The browser opens before each run and polls until the
# page answers, so the page is open from the load's first second.
#
# The load is open at a fixed rate (-r), below what this machine serves, so
# that both sides send the same requests a second: CPU per request depends
# on the rate (a slower run batches less), and the browser shares nginx's
# CPU.
#
# Usage (from the project root):  bench/dashboard.sh [-d SECONDS] [-c VUS] [-r RATE] [-n PAIRS]
# Prints each run, then the medians and "with/without cpu per request: R".
# A "with" run whose page did not open in time is marked "(no page)".
set -euo pipefail
export LOADLAB_HISTORY=${LOADLAB_HISTORY:-off}

dur=8 vus=50 rate=2000/s pairs=3
while (($#)); do
  case $1 in
    -d) dur=$2; shift 2 ;;
    -c) vus=$2; shift 2 ;;
    -r) rate=$2; shift 2 ;;
    -n) pairs=$2; shift 2 ;;
    *) echo "usage: $0 [-d SECONDS] [-c VUS] [-r RATE] [-n PAIRS]" >&2; exit 2 ;;
  esac
done
root=$(pwd)
[[ -x tools/npm/node_modules/.bin/playwright-core ]] || scripts/test-deps
work=$(mktemp -d /tmp/loadlab-dashboard.XXXXXX)
chmod 755 "$work"
port=18083 board=18084
browser_pid=""
cleanup() {
  [[ -n $browser_pid ]] && kill "$browser_pid" 2>/dev/null || true
  [[ -f $work/nginx.pid ]] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/loadlab" ./cmd/loadlab
mkdir -p "$work/www" "$work/tmp" "$work/logs"
head -c 100 /dev/zero | tr '\0' 'x' >"$work/www/static.txt"
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
    location = /nginx_status { stub_status; }
  }
}
CONF
# The page: opened as soon as loadlab serves it, kept open until the run ends.
cat >"$work/page.js" <<'JS'
const {chromium} = require('playwright-core');
(async () => {
  // Playwright's own SIGTERM handler closes the browser but leaves this
  // script waiting out its timer, and the run's `wait` with it: close and
  // exit here instead.
  const b = await chromium.launch({executablePath: process.env.CHROMIUM, handleSIGTERM: false, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking']});
  process.on('SIGTERM', () => { b.close().finally(() => process.exit(0)); });
  const p = await b.newPage({viewport: {width: 1280, height: 1600}});
  for (;;) { try { await p.goto(process.argv[2]); break; } catch (e) { await new Promise(r => setTimeout(r, 50)); } }
  await p.waitForFunction(() => Number((document.getElementById('requests').textContent || '').replace(/,/g, '')) > 0, null, {timeout: 60000});
  console.log('open');
  await new Promise(r => setTimeout(r, 600000)); // until the script is killed
})();
JS
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
without() { measure "without$1" "$work/loadlab" run --url "http://127.0.0.1:$port/static.txt" -c "$vus" --rate "$rate" -d "${dur}s" --json; }
with() {
  NODE_PATH="$root/tools/npm/node_modules" CHROMIUM=$(command -v chromium) taskset -c 0 node "$work/page.js" "http://127.0.0.1:$board/" >"$work/page$1.log" 2>&1 &
  browser_pid=$!
  sleep 2 # the browser is up, polling for the page
  measure "with$1" "$work/loadlab" run --url "http://127.0.0.1:$port/static.txt" -c "$vus" --rate "$rate" -d "${dur}s" --json --dashboard=127.0.0.1:$board
  kill "$browser_pid" 2>/dev/null || true
  wait "$browser_pid" 2>/dev/null || true
  browser_pid=""
  grep -q '^open$' "$work/page$1.log" || echo "(no page)" >&2
}

printf '%-4s %-8s %10s %14s %12s\n' pair mode 'req/s' 'cpu us/req' 'peak RSS MB'
: >"$work/cpu.without"; : >"$work/cpu.with"
for i in $(seq "$pairs"); do
  for mode in $( ((i % 2)) && echo "without with" || echo "with without"); do
    read -r r c m < <($mode "$i")
    printf '%-4s %-8s %10s %14s %12s\n' "$i" "$mode" "$r" "$c" "$m"
    echo "$c" >>"$work/cpu.$mode"
    sleep 1
  done
done
median() { sort -g "$1" | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
a=$(median "$work/cpu.without") b=$(median "$work/cpu.with")
printf 'median cpu us/req: without %s, with %s\n' "$a" "$b"
awk -v a="$a" -v b="$b" 'BEGIN { printf "with/without cpu per request: %.3f\n", b/a }'
