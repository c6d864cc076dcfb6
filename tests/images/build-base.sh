#!/usr/bin/env bash
# Build the Debian systemd base image used by the molecule scenarios and the demo: Debian 12 (bookworm, systemd
# 252, Python 3.11) by default, Debian 13 (trixie, systemd 257, Python 3.13) for scripts/test-debian13.sh.
# No registry is reachable, so the image is made with debootstrap and `docker import`.
# Usage: tests/images/build-base.sh [IMAGE [SUITE]]
#   (default: inferops-sglang/debian12-systemd:latest bookworm)
# Rebuilds only when the image is missing or this script or the suite changed (label inferops.recipe).
set -euo pipefail
image="${1:-inferops-sglang/debian12-systemd:latest}"
suite="${2:-bookworm}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
recipe="$(sha256sum "$here/build-base.sh" | cut -c1-16)-$suite"
if have="$(docker image inspect -f '{{ index .Config.Labels "inferops.recipe" }}' "$image" 2>/dev/null)" \
   && [ "$have" = "$recipe" ]; then
  echo "image $image is up to date (recipe $recipe)"
  exit 0
fi
mirror="$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)"
mirror="${mirror:-http://deb.debian.org/debian}"
root="$(mktemp -d /var/tmp/inferops-rootfs.XXXXXX)"
trap 'rm -rf "$root"' EXIT
# sudo: the scenario secure connects as an unprivileged user that escalates with sudo (become).
packages=systemd,systemd-sysv,dbus,python3,python3-venv,procps,iproute2,libpam-systemd,sudo
echo "debootstrap $suite from $mirror into $root"
debootstrap --variant=minbase --include="$packages" "$suite" "$root" "$mirror" >"$root.log" 2>&1 \
  || { tail -n 30 "$root.log"; exit 1; }
rm -f "$root.log"
# Trim what a test container never needs; keep the units systemd needs to boot in a container.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/usr/share/doc/* \
       "$root"/usr/share/man/* "$root"/usr/share/locale/*
: >"$root/etc/machine-id"
# Units that fail or hang inside a container.
for u in systemd-remount-fs.service getty.target console-getty.service systemd-logind.service \
         systemd-udevd.service systemd-udev-trigger.service sys-kernel-debug.mount dev-hugepages.mount; do
  ln -sf /dev/null "$root/etc/systemd/system/$u"
done
tar -C "$root" -c . | docker import \
  -c 'CMD ["/lib/systemd/systemd"]' -c 'ENV container=docker' \
  -c "LABEL inferops.recipe=$recipe" - "$image" >/dev/null
echo "built $image (recipe $recipe)"
