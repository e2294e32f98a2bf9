#!/bin/sh
# redis-server [ARGS...] runs Redis as user redis with protected mode off (as the official
# image); anything else runs as given.
set -eu
if [ "${1:-}" = redis-server ]; then
  shift
  if [ "$(id -u)" = 0 ]; then
    chown -R redis:redis .
    exec setpriv --reuid=redis --regid=redis --init-groups redis-server --protected-mode no "$@"
  fi
  exec redis-server --protected-mode no "$@"
fi
exec "$@"
