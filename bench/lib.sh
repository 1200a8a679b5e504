# lib.sh: the set-up that bench/engines.sh, bench/tls.sh and bench/h2.sh
# share, sourced by each (not run on its own). The method is
# shared/bench/peers.sh's: nginx serves a 100-byte static file on loopback,
# pinned to CPU 0; the tool under test runs pinned to CPU 1; a tool's CPU per
# request is its user+sys time over the requests nginx counted in
# stub_status; tools alternate round by round so that drift hits them alike,
# and the ratio reported is the median round's.
#
# Functions:
#   bench_init NAME            work dir /tmp/loadlab-NAME.XXXXXX ($work), removed at exit with nginx
#   bench_need TOOL...         exit 1 naming what is missing (and /usr/bin/time)
#   bench_loadlab              $LOADLAB, built from ./cmd/loadlab unless already set
#   bench_cert_self            $work/cert.pem, $work/key.pem: self-signed RSA for 127.0.0.1
#   bench_cert_ca              $work/ca.pem and, signed by it, $work/cert.pem, $work/key.pem (ECDSA P-256)
#   bench_nginx STATUS_URL LISTEN...
#                              nginx with one server block listening on each LISTEN (extra nginx
#                              directives for the http block in $nginx_http_extra, for the server
#                              block in $nginx_server_extra), pinned to CPU 0; STATUS_URL is where
#                              stub_status answers (curl -k)
#   bench_measure NAME CMD...  runs CMD pinned to CPU 1 for $dur seconds; prints "req/s cpu_us_per_req peak_rss_mb"
#   bench_ratio A B            a/b to two places, "-" when either is unmeasured
#   bench_median LABEL R...    prints "LABEL: median" of the measured ratios (exit 1 when none)

# Benchmark runs are not the project's history (loadlab history).
export LOADLAB_HISTORY=${LOADLAB_HISTORY:-off}

bench_init() {
  work=$(mktemp -d "/tmp/loadlab-$1.XXXXXX")
  chmod 755 "$work" # nginx's workers run as nobody
  trap bench_cleanup EXIT
  [[ -n ${KEEP:-} ]] && trap - EXIT
  mkdir -p "$work/www" "$work/tmp" "$work/logs"
  head -c 100 /dev/zero | tr '\0' 'x' >"$work/www/static.txt"
}

bench_cleanup() {
  [[ -f $work/nginx.pid ]] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true
  rm -rf "$work"
}

bench_need() {
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null || [[ -x /usr/sbin/$tool ]] || {
      echo "$(basename "$0") needs $tool (scripts/test-deps installs it)" >&2
      exit 1
    }
  done
  [[ -x /usr/bin/time ]] || { echo "$(basename "$0") needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
}

bench_loadlab() {
  if [[ -z ${LOADLAB:-} ]]; then
    go build -o "$work/loadlab" ./cmd/loadlab
    LOADLAB=$work/loadlab
  fi
}

bench_cert_self() {
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 \
    -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
}

# A private CA and a certificate for 127.0.0.1 from it (ECDSA P-256, as most
# sites now serve), so that a tool can verify it with the CA.
bench_cert_ca() {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=bench-ca \
    -keyout "$work/ca.key" -out "$work/ca.pem" 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=127.0.0.1 \
    -keyout "$work/key.pem" -out "$work/cert.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1\n' >"$work/ext.cnf"
  openssl x509 -req -in "$work/cert.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -CAcreateserial -days 1 \
    -extfile "$work/ext.cnf" -out "$work/cert.pem" 2>/dev/null
}

bench_nginx() {
  status_url=$1
  shift
  local listen="" l
  for l in "$@"; do listen+="    listen $l backlog=65535;"$'\n'; done
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
  ${nginx_http_extra:-}
  client_body_temp_path $work/tmp/body; proxy_temp_path $work/tmp/proxy;
  fastcgi_temp_path $work/tmp/fcgi; uwsgi_temp_path $work/tmp/uwsgi; scgi_temp_path $work/tmp/scgi;
  server {
$listen    ${nginx_server_extra:-}
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
}

bench_served() { curl -sk "$status_url" | awk 'NR==3{print $3}'; }

bench_measure() {
  local name=$1 before after u s m
  shift
  before=$(bench_served)
  taskset -c 1 /usr/bin/time -f '%U %S %M' -o "$work/$name.time" "$@" >"$work/$name.out" 2>"$work/$name.err" || {
    echo "$name failed: $(tail -3 "$work/$name.err")" >&2
    echo "- - -"
    return
  }
  after=$(bench_served)
  read -r u s m <"$work/$name.time" || true
  # less one: the status request that read "after" is counted in it
  awk -v n="$((after - before - 1))" -v u="$u" -v s="$s" -v m="$m" -v d="$dur" \
    'BEGIN { if (n <= 0) { print "- - -"; exit } printf "%.0f %.2f %.1f\n", n/d, (u+s)*1e6/n, m/1024 }'
}

bench_ratio() {
  awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || a == "" || b == "") print "-"; else printf "%.2f", a/b }'
}

bench_median() {
  local label=$1
  shift
  printf '%s\n' "$@" | grep -v '^-$' | grep -v '^$' | sort -n |
    awk -v l="$label" '{ v[NR] = $1 } END { if (NR == 0) { printf "%s: unmeasured\n", l; exit 1 } printf "%s: %s\n", l, v[int((NR + 1) / 2)] }'
}
