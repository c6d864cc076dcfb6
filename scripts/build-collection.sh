#!/usr/bin/env bash
# Build the collection tarball exactly as it would be published, and install it into a clean collections path:
#   build/inferops-sglang-<version>.tar.gz
#   build/collections/ansible_collections/inferops/sglang   (what the molecule stage runs; see scripts/test.sh)
# Offline: galaxy.yml has no dependencies, so nothing is asked from a Galaxy server.
# Needs ansible-galaxy on PATH (the .venv of scripts/setup.sh).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$repo/build"
log() { printf '[build] %s\n' "$*" >&2; }

mkdir -p "$out"
rm -f "$out"/inferops-sglang-*.tar.gz
ansible-galaxy collection build --force --output-path "$out" "$repo" >&2
tarball="$(ls "$out"/inferops-sglang-*.tar.gz)"

rm -rf "$out/collections"
mkdir -p "$out/collections"
ANSIBLE_COLLECTIONS_PATH="$out/collections" \
  ansible-galaxy collection install --offline --no-deps --force -p "$out/collections" "$tarball" >&2
log "built ${tarball#"$repo"/} ($(du -k "$tarball" | cut -f1) KiB, $(tar -tzf "$tarball" | wc -l) entries)"
log "installed into ${out#"$repo"/}/collections/ansible_collections/inferops/sglang"
