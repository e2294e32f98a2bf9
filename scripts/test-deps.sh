#!/usr/bin/env bash
# What the tests run besides Node, made sure of before `npm test` (npm's pretest) and by CI:
# redis-server and redis-cli (integration tests start private servers; the fault tests a Cluster
# and a Sentinel), Debian's chromium (the /docs page in a real browser, driven by playwright-core),
# promtool (from the prometheus package: checks deploy/monitoring's rules), e2fsprogs (mkfs.ext4,
# e2fsck: the read-only file-system fault test), wrk and h2load (nghttp2-client) for the
# benchmark's smoke run, and PostgreSQL (the store tests create and drop private databases on
# 127.0.0.1:5432 as user postgres). Installed with apt-get only when missing; quick when nothing is.
# PG_TEST_URL set: that server is the tests' own business, left alone here.
set -euo pipefail

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo "$@"
  else
    echo "test-deps: '$*' needs root (or sudo); install by hand: apt-get install redis-server redis-tools chromium prometheus e2fsprogs wrk nghttp2-client postgresql openssl bsdutils" >&2
    exit 1
  fi
}

missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || missing+=(redis-tools)
[ -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ] || missing+=(chromium)
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
command -v mkfs.ext4 >/dev/null 2>&1 || missing+=(e2fsprogs)
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
command -v h2load >/dev/null 2>&1 || missing+=(nghttp2-client)
# Certificates the TLS tests make, and the pseudo-terminal of npm start's terminal test.
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
command -v script >/dev/null 2>&1 || missing+=(bsdutils)
if [ -z "${PG_TEST_URL:-}" ]; then
  { [ -n "$(ls /etc/postgresql 2>/dev/null)" ] && command -v pg_ctlcluster >/dev/null 2>&1; } || missing+=(postgresql)
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "test-deps: installing ${missing[*]}" >&2
  as_root apt-get -qq update
  # The prometheus package brings promtool and the server the exemplar test runs (on a port of its own).
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi

[ -z "${PG_TEST_URL:-}" ] || exit 0
# Trust auth for user postgres on loopback (a fresh install asks for a password over TCP): the
# first matching pg_hba.conf line wins, so these go on top. Idempotent.
pg_version=$(ls /etc/postgresql | sort -V | tail -n 1)
hba=/etc/postgresql/$pg_version/main/pg_hba.conf
hba_changed=0
for net in 127.0.0.1/32 ::1/128; do
  if ! as_root grep -Eq "^host[[:space:]]+all[[:space:]]+all[[:space:]]+${net//./\\.}[[:space:]]+trust" "$hba"; then
    as_root sed -i "1i host all all $net trust" "$hba"
    hba_changed=1
  fi
done
if ! as_root pg_ctlcluster --skip-systemctl-redirect "$pg_version" main status >/dev/null 2>&1; then
  as_root pg_ctlcluster --skip-systemctl-redirect "$pg_version" main start
elif [ "$hba_changed" = 1 ]; then
  as_root pg_ctlcluster --skip-systemctl-redirect "$pg_version" main reload
fi
for _ in $(seq 1 30); do
  pg_isready -q -h 127.0.0.1 -p 5432 && break
  sleep 1
done
psql -h 127.0.0.1 -U postgres -d postgres -Atqc "SELECT 1" >/dev/null
