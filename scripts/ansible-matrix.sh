#!/usr/bin/env bash
# The slow matrix: every ansible-core line meta/runtime.yml claims (scripts/ansible-test.sh lines: 2.16 ... 2.21),
# each with ansible-test sanity and units (scripts/ansible-test.sh --core X.Y) and the clean install of the built
# tarball (tests/packaging/test_clean_install.py with INFEROPS_CLEAN_INSTALL_CORE=X.Y). The CI (scripts/test.sh)
# runs the oldest and the newest line only. About 3 to 4 minutes a line on two cores once the venvs exist (the first
# run makes .cache/ansible-core/X.Y and ansible-test's own venvs from the pip mirror).
#   bash scripts/ansible-matrix.sh              # every claimed line
#   bash scripts/ansible-matrix.sh 2.17 2.18    # some of them
# Needs the .venv of scripts/setup.sh (pytest, ansible-galaxy for the tarball). Exits non-zero when anything failed;
# the last lines give each line's result and time.
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo" || exit 1
if [ -z "${VIRTUAL_ENV:-}" ]; then
  # shellcheck source=/dev/null
  . "$repo/.venv/bin/activate" || { echo "no .venv: run scripts/setup.sh first" >&2; exit 1; }
fi
if [ $# -gt 0 ]; then lines=("$@"); else mapfile -t lines < <(bash scripts/ansible-test.sh lines); fi

bash scripts/build-collection.sh || { echo "the collection tarball did not build" >&2; exit 1; }
results=()
failed=0
for line in "${lines[@]}"; do
  for step in sanity units install; do
    t0=$(date +%s)
    printf '\n===== ansible-core %s: %s\n' "$line" "$step"
    if [ "$step" = install ]; then
      INFEROPS_CLEAN_INSTALL_CORE="$line" python -m pytest -q -p no:cacheprovider tests/packaging/test_clean_install.py
    else
      bash scripts/ansible-test.sh --core "$line" "$step"
    fi
    rc=$?
    [ $rc = 0 ] || failed=$((failed + 1))
    results+=("$(printf '%-5s %-7s %-6s %4ss' "$line" "$step" "$([ $rc = 0 ] && echo passed || echo FAILED)" \
      "$(( $(date +%s) - t0 ))")")
  done
done
printf '\n'
printf '%s\n' "${results[@]}"
printf '%d failed\n' "$failed"
[ "$failed" = 0 ]
