#!/bin/sh
# Install the Debian packages the puma-threads recipe needs (safe to run again).
exec "$(dirname "$0")/../install.sh" puma-threads ruby puma ruby-rack
