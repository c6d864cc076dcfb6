#!/usr/bin/env bash
# The whole test suite: lint, changelog lint, ansible-test sanity and units, unit tests, the HTML docs, integration
# tests on real process trees, the collection tarball, molecule scenarios (run against the installed tarball).
# Run as root on Debian 12:  bash scripts/test.sh        (installs what it needs first)
# Select stages with STAGES="lint changelog sanity unit docs integration build molecule" and scenarios with
# SCENARIOS="default ...". The molecule stage builds and installs the tarball first when the build stage did not run.
#
# Two lanes run at once (TEST_JOBS=1: one lane, everything in order). Lane 1 runs the stages in STAGES order and
# after them the scenarios not in LANE2_SCENARIOS; lane 2 runs the build and then the scenarios in LANE2_SCENARIOS
# ("fleet no_systemd secure upgrade" by default, in that order); lane 1's scenarios wait for the build. Most of a
# scenario's time is spent waiting (loads, gates, sleeps), so the two lanes share two cores. Scenarios with the same
# container names (default, rollback and no_systemd all use sglang-host) never overlap: each scenario holds a lock per
# container name (build/test-logs/locks) while it runs. Each lane writes its log to build/test-logs/laneN.log, printed
# whole when the lane ends; its stage result lines are also printed as they come, prefixed [laneN].
# Exits non-zero when any stage of any lane fails; the end is a table of the stages (start, seconds, lane, result).
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/setup.sh
. "$here/scripts/setup.sh" || exit 1
set +e
cd "$INFEROPS_REPO" || exit 1
STAGES="${STAGES:-lint changelog sanity unit docs integration build molecule}"
SCENARIOS="${SCENARIOS:-default rollback no_systemd secure fleet upgrade}"
LANE2_SCENARIOS="${LANE2_SCENARIOS:-fleet no_systemd secure upgrade}"
TEST_JOBS="${TEST_JOBS:-2}"
started=$(date +%s)
logs="$INFEROPS_REPO/build/test-logs"
rm -rf "$logs"
mkdir -p "$logs/locks" "$logs/stages"
results="$logs/results.tsv"
: > "$results"
lane=main
exec 3>&1

# One stage: its banner and result line, and a row "name, rc, start (s into the run), seconds, lane" in $results.
stage() {
  local name="$1"; shift
  local t0 rc line
  t0=$(date +%s)
  printf '\n===== %s: %s\n' "$name" "$*"
  # Also kept in $logs/stages/NAME.log: the end of the run shows each failed stage's last lines again.
  "$@" 2>&1 | tee "$logs/stages/$name.log"
  rc=${PIPESTATUS[0]}
  line=$(printf '===== %s: %s in %ss' "$name" "$([ "$rc" = 0 ] && echo passed || echo "FAILED (exit $rc)")" "$(( $(date +%s) - t0 ))")
  printf '%s\n' "$line"
  [ "$lane" = main ] || printf '[%s] %s\n' "$lane" "$line" >&3
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$rc" "$(( t0 - started ))" "$(( $(date +%s) - t0 ))" "$lane" >> "$results"
  return "$rc"
}

# The collection as published: scripts/build-collection.sh builds the tarball and installs it into build/collections.
# Molecule then runs with build/collections first in ANSIBLE_COLLECTIONS_PATH, so inferops.sglang (playbook, roles,
# modules) comes from the installed tarball; the rest of the path (the venv's site-packages, from scripts/setup.sh)
# still gives community.docker, ansible.posix and community.general, and also holds the link to this tree, which is
# only reached when build/collections lacks the collection (tests/packaging checks that it does not).
# The build's outcome goes to $logs/built (1: built and checked, 2: failed), which a scenario of either lane waits for.
built_collections_path="$INFEROPS_REPO/build/collections:$ANSIBLE_COLLECTIONS_PATH"
build_collection() {
  local rc=2
  stage build-collection bash scripts/build-collection.sh &&
    stage packaging-tests env ANSIBLE_COLLECTIONS_PATH="$built_collections_path" \
      python -m pytest -q -p no:cacheprovider tests/packaging &&
    rc=1
  echo "$rc" > "$logs/built"
  [ "$rc" = 1 ]
}

# The container names of a scenario (its molecule.yml's platforms, else the shared config's), sorted.
container_names() {
  python - "extensions/molecule/$1/molecule.yml" .config/molecule/config.yml <<'PY'
import sys
import yaml
with open(sys.argv[1]) as scenario, open(sys.argv[2]) as shared:
    platforms = (yaml.safe_load(scenario) or {}).get("platforms") or yaml.safe_load(shared)["platforms"]
print(" ".join(sorted(p["name"] for p in platforms)))
PY
}

# Run a command holding the lock of every container name of scenario $1 (taken in one order: no deadlock).
with_container_locks() {
  local sc="$1"; shift
  local cmd=("$@") name
  for name in $(container_names "$sc" | tr ' ' '\n' | sort -r); do
    cmd=(flock "$logs/locks/$name.lock" "${cmd[@]}")
  done
  "${cmd[@]}"
}

scenario() {
  local sc="$1"
  while [ ! -s "$logs/built" ]; do sleep 5; done
  if [ "$(cat "$logs/built")" = 1 ]; then
    stage "molecule-$sc" with_container_locks "$sc" env ANSIBLE_COLLECTIONS_PATH="$built_collections_path" \
      molecule test -s "$sc"
  else
    stage "molecule-$sc" sh -c 'echo "not run: the collection tarball was not built and installed" >&2; exit 1'
  fi
}

run_stage() {
  case "$1" in
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
    molecule:*)
      scenario "${1#molecule:}"
      ;;
    *)
      # shellcheck disable=SC2016  # $0 is the stage's name, expanded by sh
      stage "$1" sh -c 'echo "unknown stage $0" >&2; exit 2' "$1"
      ;;
  esac
}

# A lane: its stages in order, every one run whatever the previous gave; exits 1 when one failed.
run_lane() {
  local s rc=0
  for s in "$@"; do
    run_stage "$s" || rc=1
  done
  return $rc
}

# Which stage goes where. The build (also run for the molecule stage when STAGES lacks it) goes first in lane 2, or in
# lane 1 before its first scenario when lane 2 has none.
lane1=()
lane2=()
with_build=0
with_molecule=0
for s in $STAGES; do
  case "$s" in
    build) with_build=1 ;;
    molecule) with_molecule=1 ;;
    *) lane1+=("$s") ;;
  esac
done
if [ "$with_molecule" = 1 ] && [ "$TEST_JOBS" -gt 1 ]; then
  for sc in $LANE2_SCENARIOS; do
    [[ " $SCENARIOS " == *" $sc "* ]] && lane2+=("molecule:$sc")
  done
fi
if [ "$with_build" = 1 ] || [ "$with_molecule" = 1 ]; then
  if [ ${#lane2[@]} -gt 0 ]; then lane2=(build "${lane2[@]}"); else lane1+=(build); fi
fi
if [ "$with_molecule" = 1 ]; then
  for sc in $SCENARIOS; do
    [[ " ${lane2[*]} " == *" molecule:$sc "* ]] || lane1+=("molecule:$sc")
  done
fi

if [ ${#lane2[@]} = 0 ] || [ ${#lane1[@]} = 0 ]; then
  run_lane "${lane1[@]}" "${lane2[@]}"
else
  printf '\n===== lanes: lane1 = %s; lane2 = %s (logs: %s)\n' "${lane1[*]}" "${lane2[*]}" "$logs"
  (lane=lane1; run_lane "${lane1[@]}") > "$logs/lane1.log" 2>&1 &
  pid1=$!
  (lane=lane2; run_lane "${lane2[@]}") > "$logs/lane2.log" 2>&1 &
  pid2=$!
  trap 'kill "$pid1" "$pid2" 2>/dev/null; exit 130' INT TERM
  for n in 1 2; do
    pid="pid$n"
    wait "${!pid}"
    rc=$?
    printf '\n===== lane%s ended (exit %s); its log:\n' "$n" "$rc"
    cat "$logs/lane$n.log"
    # A lane that died without noting a failed stage still fails the run.
    if [ "$rc" != 0 ] && ! awk -F'\t' -v l="lane$n" '$5 == l && $2 != 0 { f = 1 } END { exit !f }' "$results"; then
      printf 'lane%s\t%s\t-\t-\tlane%s\n' "$n" "$rc" "$n" >> "$results"
    fi
  done
fi

# Each failed stage's failure lines (pytest's E/FAILED lines, Ansible's fatal ones, errors), else its last lines,
# right above the table: the end of the run is what a CI log shows first.
awk -F'\t' '$2 != 0 { print $1 }' "$results" | while read -r name; do
  f="$logs/stages/$name.log"
  [ -s "$f" ] || continue
  printf '\n===== why %s failed (from build/test-logs/stages/%s.log)\n' "$name" "$name"
  # Ansible's retries and ignored errors are no cause; molecule's CRITICAL lines are.
  found=$(grep -E '^E  |^FAILED |^ERROR|^CRITICAL|^fatal: |FAILED! =>|Error: |error: ' "$f" \
    | grep -v -e 'RETRYING' -e '\.\.\.ignoring' | tail -n 40 | cut -c1-400)
  if [ -n "$found" ]; then
    printf '%s\n' "$found"
  else
    grep -v -e '^\s*$' -e '^[.sxF]* *\[ *[0-9]*%\]$' "$f" | tail -n 40 | cut -c1-400
  fi
done
passed=$(awk -F'\t' '$2 == 0' "$results" | wc -l)
failed=$(awk -F'\t' '$2 != 0' "$results" | wc -l)
printf '\n%-28s %6s %6s  %-5s  %s\n' stage start secs lane result
sort -t"$(printf '\t')" -k3,3n "$results" | awk -F'\t' '{ printf "%-28s %6s %6s  %-5s  %s\n", $1, $3, $4, $5, ($2 == 0 ? "passed" : "FAILED (exit " $2 ")") }'
printf '\nwall time: %ss\n' "$(( $(date +%s) - started ))"
((failed)) && printf 'failed stages: %s\n' "$(awk -F'\t' '$2 != 0 { printf "%s ", $1 }' "$results")"
printf 'stages: %d passed, %d failed\n' "$passed" "$failed"
[ "$failed" = 0 ]
