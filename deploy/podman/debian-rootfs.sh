#!/usr/bin/env bash
# deploy/podman/debian-rootfs.sh ROOTFS SUITE MIRROR CACHE_DIR [CA_FILE...]
#
# A Debian root file system for a local base image (images.sh imports it): debootstrap's
# minbase variant with ca-certificates, then what Debian's official images add — package
# installs start no service, apt keeps no package files or caches, and (as the -slim images)
# no documentation, manual pages or translations — and the host's local CA files, so that npm
# in a build trusts what the host's npm does (a TLS-inspecting proxy's CA, say).
set -euo pipefail
rootfs=$1 suite=$2 mirror=$3 cache=$4
shift 4

mkdir -p "$cache"
debootstrap --variant=minbase --include=ca-certificates --cache-dir="$cache" "$suite" "$rootfs" "$mirror" >"$rootfs.log" 2>&1 || {
  tail -n 20 "$rootfs.log" >&2
  exit 1
}
cat >"$rootfs/etc/apt/sources.list" <<EOF
deb $mirror $suite main
deb $mirror $suite-updates main
deb http://deb.debian.org/debian-security $suite-security main
EOF
printf '#!/bin/sh\nexit 101\n' >"$rootfs/usr/sbin/policy-rc.d"
chmod 755 "$rootfs/usr/sbin/policy-rc.d"
clean='rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true'
printf 'DPkg::Post-Invoke { "%s"; };\nAPT::Update::Post-Invoke { "%s"; };\nDir::Cache::pkgcache "";\nDir::Cache::srcpkgcache "";\n' \
  "$clean" "$clean" >"$rootfs/etc/apt/apt.conf.d/docker-clean"
printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' 'path-exclude /usr/share/man/*' \
  'path-exclude /usr/share/info/*' 'path-exclude /usr/share/locale/*' >"$rootfs/etc/dpkg/dpkg.cfg.d/docker"
find "$rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
rm -rf "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/locale/*
if [ $# -gt 0 ]; then
  cp "$@" "$rootfs/usr/local/share/ca-certificates/"
  chroot "$rootfs" update-ca-certificates >/dev/null
fi
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/log/*.log
