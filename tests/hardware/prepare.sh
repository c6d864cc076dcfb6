#!/usr/bin/env bash
# Prepare, on a machine that reaches PyPI (this one, from a fresh clone), what tests/hardware/run-h200.sh needs on the
# lent GPU machine, where nothing can be downloaded:
#   bash tests/hardware/prepare.sh        -> .whl/ and .device-collections/ (ignored by git; name both in the device
#                                            call's carry)
# .whl/ holds wheels for the GPU machine's Python 3.12 (x86-64): ansible-core and resolvelib (Ansible runs there from a
# --target install), and supervisor (the service role installs it into its venv from there: the no-systemd fallback).
# Jinja2, PyYAML, MarkupSafe and packaging are already in the GPU machine's Python.
# .device-collections/ holds ansible.posix, taken from the `ansible` wheel on PyPI as scripts/setup.sh does: the
# collection itself needs no other collection (galaxy.yml), but the tests' JSON output (ansible.builtin.json, which
# ansible-core redirects to ansible.posix.json) does.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dest="$repo/.whl"
python="${PYTHON:-python3}"
[ -x "$repo/.venv/bin/python" ] && python="$repo/.venv/bin/python"
ansible_core="$(sed -n 's/^ansible-core==//p' "$repo/requirements-dev.txt")"
mkdir -p "$dest"
download() {
  "$python" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 -d "$dest" "$@"
}
download "ansible-core==$ansible_core" "supervisor==4.3.0"
# resolvelib as ansible-core pins it.
resolvelib="$(unzip -p "$dest"/ansible_core-"$ansible_core"-*.whl '*/METADATA' | sed -n 's/^Requires-Dist: resolvelib *//p' | head -n1)"
download "resolvelib${resolvelib}"
# One version of each (a stale wheel from an earlier run would make pip refuse the set).
for name in ansible_core resolvelib supervisor; do
  mapfile -t found < <(find "$dest" -maxdepth 1 -name "$name-*.whl" | sort -V)
  [ "${#found[@]}" -le 1 ] || rm -f "${found[@]:0:${#found[@]}-1}"
done
# ansible.posix from the ansible wheel setup.sh caches (or a fresh download of the same version).
ansible_version="$(sed -n 's/^ANSIBLE_WHEEL_VERSION=//p' "$repo/scripts/setup.sh")"
wheel="$(find "$repo/.cache/wheels" -maxdepth 1 -name "ansible-$ansible_version-*.whl" 2>/dev/null | head -n1)"
if [ -z "$wheel" ]; then
  mkdir -p "$repo/.cache/wheels"
  "$python" -m pip download -q --disable-pip-version-check --no-deps -d "$repo/.cache/wheels" "ansible==$ansible_version"
  wheel="$(find "$repo/.cache/wheels" -maxdepth 1 -name "ansible-$ansible_version-*.whl" | head -n1)"
fi
rm -rf "$repo/.device-collections"
"$python" - "$wheel" "$repo/.device-collections" <<'PY'
import sys, zipfile
wheel, dest = sys.argv[1:]
with zipfile.ZipFile(wheel) as zf:
    zf.extractall(dest, [n for n in zf.namelist() if n.startswith("ansible_collections/ansible/posix/")])
PY
ls -1 "$dest" "$repo/.device-collections/ansible_collections/ansible"
