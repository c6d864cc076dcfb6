#!/usr/bin/env bash
# The whole test suite: lint, changelog lint, ansible-test sanity and units, unit tests, the HTML docs, integration
# tests on real process trees, the collection tarball, molecule scenarios (run against the installed tarball).
# Run as root on Debian 12:  bash scripts/test.sh        (installs what it needs first)
# Select stages with STAGES="lint changelog sanity unit docs integration build molecule" and scenarios with
# SCENARIOS="default ...". The molecule stage builds and installs the tarball first when the build stage did not run.
# Exits non-zero when any stage fails; the last line counts the stages.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/setup.sh
. "$here/scripts/setup.sh" || exit 1
set +e
cd "$INFEROPS_REPO"
STAGES="${STAGES:-lint changelog sanity unit docs integration build molecule}"
SCENARIOS="${SCENARIOS:-default rollback no_systemd secure fleet upgrade}"
passed=0
failed=0
failures=()
started=$(date +%s)

stage() {
  local name="$1"; shift
  local t0
  t0=$(date +%s)
  printf '\n===== %s: %s\n' "$name" "$*"
  "$@"
  local rc=$?
  printf '===== %s: %s in %ss\n' "$name" "$([ $rc = 0 ] && echo passed || echo "FAILED (exit $rc)")" "$(( $(date +%s) - t0 ))"
  if [ $rc = 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); failures+=("$name"); fi
  return $rc
}

# The collection as published: scripts/build-collection.sh builds the tarball and installs it into build/collections.
# Molecule then runs with build/collections first in ANSIBLE_COLLECTIONS_PATH, so inferops.sglang (playbook, roles,
# modules) comes from the installed tarball; the rest of the path (the venv's site-packages, from scripts/setup.sh)
# still gives community.docker, ansible.posix and community.general, and also holds the link to this tree, which is
# only reached when build/collections lacks the collection (tests/packaging checks that it does not).
built=0
built_collections_path="$INFEROPS_REPO/build/collections:$ANSIBLE_COLLECTIONS_PATH"
build_collection() {
  built=2
  stage build-collection bash scripts/build-collection.sh || return
  stage packaging-tests env ANSIBLE_COLLECTIONS_PATH="$built_collections_path" \
    python -m pytest -q -p no:cacheprovider tests/packaging || return
  built=1
}

for s in $STAGES; do
  case "$s" in
    lint)
      stage ansible-lint ansible-lint --profile production --strict
      ;;
    changelog)
      stage changelog-lint sh -c 'antsibull-changelog lint && antsibull-changelog lint-changelog-yaml changelogs/changelog.yaml'
      ;;
    sanity)
      # ansible-test on a copy of the tree under build/ansible-test/ansible_collections/inferops/sglang, with --venv:
      # the .venv's ansible-core (2.19), then the oldest and the newest line meta/runtime.yml claims, each from its own
      # venv under .cache/ansible-core (scripts/ansible-test.sh --core). Every claimed line: scripts/ansible-matrix.sh.
      stage ansible-test-sanity bash scripts/ansible-test.sh sanity
      stage ansible-test-units bash scripts/ansible-test.sh units
      for core in 2.16 2.21; do
        stage "ansible-test-sanity-$core" bash scripts/ansible-test.sh --core "$core" sanity
        stage "ansible-test-units-$core" bash scripts/ansible-test.sh --core "$core" units
      done
      ;;
    docs)
      stage docs-build bash scripts/build-docs.sh
      stage ansible-doc python -m pytest -q -p no:cacheprovider tests/docs
      ;;
    build)
      build_collection
      ;;
    unit)
      stage unit-tests python -m pytest -q -p no:cacheprovider tests/unit tests/double
      ;;
    integration)
      # Real SGLang's argument parser (sglang from PyPI without its deps, plus the CPU torch) for field case C12.
      stage real-sglang-setup bash tests/setup-real-sglang.sh "$INFEROPS_REPO/.cache/sglang-real"
      export INFEROPS_REAL_SGLANG_PYTHON="$INFEROPS_REPO/.cache/sglang-real/bin/python"
      stage integration-tests python -m pytest -q -p no:cacheprovider tests/integration tests/hardware
      ;;
    molecule)
      [ "$built" != 0 ] || build_collection
      for sc in $SCENARIOS; do
        if [ "$built" = 1 ]; then
          stage "molecule-$sc" env ANSIBLE_COLLECTIONS_PATH="$built_collections_path" molecule test -s "$sc"
        else
          stage "molecule-$sc" sh -c 'echo "not run: the collection tarball was not built and installed" >&2; exit 1'
        fi
      done
      ;;
    *) echo "unknown stage $s" >&2; failed=$((failed + 1)); failures+=("$s") ;;
  esac
done

printf '\nwall time: %ss\n' "$(( $(date +%s) - started ))"
((failed)) && printf 'failed stages: %s\n' "${failures[*]}"
printf 'stages: %d passed, %d failed\n' "$passed" "$failed"
[ "$failed" = 0 ]
