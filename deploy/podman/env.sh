# Sourced by the scripts of deploy/podman/ (and the deploy test): a podman of the project's own,
# configured through files it writes, never through /etc.
#
#   PET_STORE_PODMAN_DIR   where its configuration, image store and scratch space live
#                          (default: ~/.cache/pet-store-podman; images built there are reused
#                          by the next run on this machine)
#
# Sets CONTAINERS_CONF and CONTAINERS_STORAGE_CONF, which every podman (and podman-compose)
# started from this shell reads:
#   - runtime runc: crun fails on this kind of machine's cgroups v1 hybrid hierarchy;
#   - default rlimits no higher than the host's (a sandbox may refuse raising them);
#   - a storage root of its own, so the test's images, containers and volumes never mix with
#     an operator's, and a cold run is `PET_STORE_PODMAN_DIR=$(mktemp -d)`.
# shellcheck shell=bash

PET_STORE_PODMAN_DIR=${PET_STORE_PODMAN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pet-store-podman}
mkdir -p "$PET_STORE_PODMAN_DIR"
PET_STORE_PODMAN_DIR=$(cd "$PET_STORE_PODMAN_DIR" && pwd)
export PET_STORE_PODMAN_DIR

if [ "$(id -u)" = 0 ]; then
  _pet_store_runroot=/run/pet-store-podman/$(printf %s "$PET_STORE_PODMAN_DIR" | sha256sum | cut -c1-12)
else
  _pet_store_runroot=${XDG_RUNTIME_DIR:-$PET_STORE_PODMAN_DIR}/pet-store-podman-run
fi

# Limits for every container: at most what this shell may have (podman refuses nothing lower).
_pet_store_nofile=$(ulimit -Hn)
[ "$_pet_store_nofile" = unlimited ] || [ "$_pet_store_nofile" -gt 65536 ] && _pet_store_nofile=65536
_pet_store_nproc=$(ulimit -Hu)
[ "$_pet_store_nproc" = unlimited ] || [ "$_pet_store_nproc" -gt 4096 ] && _pet_store_nproc=4096

cat >"$PET_STORE_PODMAN_DIR/containers.conf" <<EOF
# Written by deploy/podman/env.sh; rewritten on every run.
[containers]
default_ulimits = ["nofile=${_pet_store_nofile}:${_pet_store_nofile}", "nproc=${_pet_store_nproc}:${_pet_store_nproc}"]
log_driver = "k8s-file"
[network]
network_backend = "netavark"
[engine]
runtime = "runc"
events_logger = "file"
cgroup_manager = "cgroupfs"
EOF
cat >"$PET_STORE_PODMAN_DIR/storage.conf" <<EOF
# Written by deploy/podman/env.sh; rewritten on every run.
[storage]
driver = "overlay"
graphroot = "$PET_STORE_PODMAN_DIR/storage"
runroot = "$_pet_store_runroot"
EOF
export CONTAINERS_CONF=$PET_STORE_PODMAN_DIR/containers.conf
export CONTAINERS_STORAGE_CONF=$PET_STORE_PODMAN_DIR/storage.conf
unset _pet_store_runroot _pet_store_nofile _pet_store_nproc
