#!/usr/bin/env bash
# The whole test suite: lint, unit tests, integration tests on real process trees, molecule scenarios.
# Run as root on Debian 12:  bash scripts/test.sh        (installs what it needs first)
# Select stages with STAGES="lint unit integration molecule" and scenarios with SCENARIOS="default ...".
# Exits non-zero when any stage fails; the last line counts the stages.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/setup.sh
. "$here/scripts/setup.sh" || exit 1
set +e
cd "$INFEROPS_REPO"
STAGES="${STAGES:-lint unit integration molecule}"
SCENARIOS="${SCENARIOS:-default}"
passed=0
failed=0
failures=()
started=$(date +%s)

stage() {
  local name="$1"; shift
  local t0=$(date +%s)
  printf '\n===== %s: %s\n' "$name" "$*"
  "$@"
  local rc=$?
  printf '===== %s: %s in %ss\n' "$name" "$([ $rc = 0 ] && echo passed || echo "FAILED (exit $rc)")" "$(( $(date +%s) - t0 ))"
  if [ $rc = 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); failures+=("$name"); fi
}

for s in $STAGES; do
  case "$s" in
    lint)
      stage ansible-lint ansible-lint --profile production --strict
      ;;
    unit)
      stage unit-tests python -m pytest -q -p no:cacheprovider tests/unit tests/double
      ;;
    integration)
      stage integration-tests python -m pytest -q -p no:cacheprovider tests/integration
      ;;
    molecule)
      for sc in $SCENARIOS; do
        stage "molecule-$sc" molecule test -s "$sc"
      done
      ;;
    *) echo "unknown stage $s" >&2; failed=$((failed + 1)); failures+=("$s") ;;
  esac
done

printf '\nwall time: %ss\n' "$(( $(date +%s) - started ))"
((failed)) && printf 'failed stages: %s\n' "${failures[*]}"
printf 'stages: %d passed, %d failed\n' "$passed" "$failed"
[ "$failed" = 0 ]
