#!/bin/sh
# Start two Puma backends and HAProxy in front of them. loadlab runs this as
# the server under test, samples the whole process tree, and stops it all.
#   backend a: A_THREADS threads (default 4), port 29122
#   backend b: B_THREADS threads (default 1), port 29123: the smaller box
#   haproxy:   port 29121, config rendered by loadlab into run/haproxy.cfg
set -e
here=$(cd "$(dirname "$0")" && pwd)
export USERS_DIR="${USERS_DIR:-/tmp/loadlab-launch-users}"
rm -rf "$USERS_DIR"
mkdir -p "$USERS_DIR"
cd "$here/app"
BACKEND=a puma -t "${A_THREADS:-4}:${A_THREADS:-4}" -w 0 -b tcp://127.0.0.1:29122 config.ru &
BACKEND=b puma -t "${B_THREADS:-1}:${B_THREADS:-1}" -w 0 -b tcp://127.0.0.1:29123 config.ru &
# Wait until both backends answer, so that HAProxy never sees one down; a
# backend that never does (its port taken, say) fails the start.
ruby -rnet/http -e '
  ARGV.each do |url|
    up = 200.times.any? { (Net::HTTP.get_response(URI(url)).code == "200" rescue false) || (sleep 0.1; false) }
    abort "start.sh: #{url} never answered" unless up
  end' http://127.0.0.1:29122/health http://127.0.0.1:29123/health
exec haproxy -db -f "$here/run/haproxy.cfg"
