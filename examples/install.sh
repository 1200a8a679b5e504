#!/bin/sh
# install.sh RECIPE PACKAGE...: install the Debian packages a recipe needs.
# Each recipe's setup.sh calls it. Safe to run again: packages already
# installed are skipped.
set -eu
recipe=$1
shift
missing=""
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
  echo "$recipe: already installed: $*"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing
