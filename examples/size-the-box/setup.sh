#!/bin/sh
# Install the Debian packages the size-the-box recipe needs (safe to run again).
exec "$(dirname "$0")/../install.sh" size-the-box ruby puma ruby-rack
