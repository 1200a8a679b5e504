#!/bin/sh
# Install the Debian packages the jemalloc recipe needs. Safe to run again:
# packages already installed are skipped.
set -eu
PACKAGES="ruby puma ruby-rack ruby-json libjemalloc2"
missing=""
for p in $PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
  echo "jemalloc: already installed: $PACKAGES"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing
