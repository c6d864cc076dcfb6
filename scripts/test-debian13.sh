#!/usr/bin/env bash
# The second platform, beside CI: the molecule scenarios on Debian 13 (trixie: systemd 257, Python 3.13) instead of
# Debian 12 (bookworm: systemd 252, Python 3.11), so that every systemd-version-gated directive (LogFilterPatterns=
# from 253, ...) runs on both sides of its gate. Builds the trixie base image (tests/images/build-base.sh; a few
# minutes the first time, then kept), then runs scripts/test.sh's build and molecule stages with that image.
#
#   bash scripts/test-debian13.sh                       # the default and secure scenarios (about 12 minutes)
#   SCENARIOS="default secure rollback" bash scripts/test-debian13.sh
#
# Not part of scripts/test.sh (CI's budget); the support matrix (docs/docsite/rst/support.rst) says what it ran.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
image=inferops-sglang/debian13-systemd:latest
# The setup first (it installs debootstrap and docker on a fresh machine and fetches the 3.11 wheels).
. "$here/scripts/setup.sh" >/dev/null
bash "$here/tests/images/build-base.sh" "$image" trixie
# The routers' compiled dependencies for the containers' Python 3.13, beside the 3.11 ones scripts/setup.sh fetched
# (pip on the host picks the wheels of its own Python from the one directory).
"$VENV/bin/pip" download -q --disable-pip-version-check --no-deps --only-binary=:all: --python-version 3.13 \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux_2_5_x86_64 \
  -d "$CACHE/wheels/router" -r "$here/tests/fleet/router-requirements.txt"
INFEROPS_BASE_IMAGE="$image" STAGES="build molecule" SCENARIOS="${SCENARIOS:-default secure}" \
  exec bash "$here/scripts/test.sh"
