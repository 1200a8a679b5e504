#!/bin/sh
# Install the Debian packages the thin-vs-puma recipe needs (safe to run again).
exec "$(dirname "$0")/../install.sh" thin-vs-puma ruby puma thin ruby-rack
