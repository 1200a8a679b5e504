#!/bin/sh
# Install the Debian packages the jemalloc recipe needs (safe to run again).
exec "$(dirname "$0")/../install.sh" jemalloc ruby puma ruby-rack ruby-json libjemalloc2
