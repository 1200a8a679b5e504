#!/bin/sh
# Install the Debian packages the actioncable recipe needs (safe to run again).
exec "$(dirname "$0")/../install.sh" actioncable ruby puma ruby-rack ruby-actioncable
