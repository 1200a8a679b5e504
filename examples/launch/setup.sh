#!/bin/sh
# Install the Debian packages the launch recipe needs (safe to run again).
exec "$(dirname "$0")/../install.sh" launch ruby puma ruby-rack ruby-bcrypt ruby-json haproxy
