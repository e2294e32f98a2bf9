#!/usr/bin/env bash
# Makes sure this machine has what `npm run test:deploy` runs containers with, from Debian's
# packages, installing only what is missing (quick when nothing is):
#   podman, runc          the engine and the OCI runtime the test configures (deploy/podman/env.sh)
#   netavark, aardvark-dns podman's networks and their DNS (a compose service name answers with
#                          every replica's address)
#   iptables              netavark's published ports
#   catatonit             the init of the pause image podman builds for pods (kube play)
#   podman-compose        runs deploy/compose.yaml
#   debootstrap           the Debian root file system of the local base images (images.sh)
set -euo pipefail

declare -A need=(
  [podman]=podman [runc]=runc [netavark]=/usr/lib/podman/netavark [aardvark-dns]=/usr/lib/podman/aardvark-dns
  [iptables]=iptables [catatonit]=/usr/libexec/podman/catatonit [podman-compose]=podman-compose [debootstrap]=debootstrap
)
missing=()
for pkg in "${!need[@]}"; do
  probe=${need[$pkg]}
  if [[ $probe == /* ]]; then [ -x "$probe" ] || missing+=("$pkg")
  else command -v "$probe" >/dev/null 2>&1 || [ -x "/usr/sbin/$probe" ] || missing+=("$pkg"); fi
done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=()
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "deploy/podman/install.sh: needs root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
echo "deploy/podman/install.sh: installing ${missing[*]}" >&2
"${sudo[@]}" apt-get -qq update
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
