#!/usr/bin/env bash
# Run ansible-test the way the Ansible ecosystem does, on a copy of this tree.
#   bash scripts/ansible-test.sh sanity [ansible-test options]   # all sanity tests, no ignore entries allowed
#   bash scripts/ansible-test.sh units  [ansible-test options]   # tests/unit with ansible-test's pytest setup
# ansible-test wants the real path of the collection to end in ansible_collections/<namespace>/<name> (a symlink
# does not do), so the tracked files, plus new files that git does not ignore, are copied to
# build/ansible-test/ansible_collections/inferops/sglang first. It runs with --venv: ansible-test makes its own
# virtual environments with its own pinned requirements from PyPI (cached in ~/.ansible/test/venv); the one
# download it would make from elsewhere, its pip bootstrap script, is replaced by scripts/get_pip_offline.py.
# Needs ansible-test on PATH (the .venv of scripts/setup.sh). --docker cannot work here (no image registry).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
command="${1:?usage: $0 sanity|units [ansible-test options]}"
shift
case "$command" in sanity|units) ;; *) echo "unknown ansible-test command: $command" >&2; exit 2 ;; esac
log() { printf '[ansible-test] %s\n' "$*" >&2; }

python="$(command -v python)"
pyver="$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"

# ansible-test's pip bootstrap: the version it asks for, and the offline stand-in under that name.
pip_version="$("$python" - <<'PY'
import types
from ansible_test._internal.python_requirements import get_venv_packages
print(get_venv_packages(types.SimpleNamespace(version=None))['pip'])
PY
)"
bootstrap="$HOME/.ansible/test/cache/get_pip_${pip_version//./_}.py"
if [ ! -s "$bootstrap" ]; then
  mkdir -p "$(dirname "$bootstrap")"
  cp "$repo/scripts/get_pip_offline.py" "$bootstrap"
  log "pip $pip_version bootstrap for ansible-test: $bootstrap (ensurepip, then pip install from PyPI)"
fi

if [ "$command" = sanity ]; then
  # Sanity passes without ignore entries: fixes go into the code, not into tests/sanity/ignore-*.txt.
  for ignore in "$repo"/tests/sanity/ignore-*.txt; do
    [ -e "$ignore" ] || continue
    if grep -q '[^[:space:]]' "$ignore"; then
      log "${ignore#"$repo"/} must stay empty; it has:"
      cat "$ignore" >&2
      exit 1
    fi
  done
fi

dest="$repo/build/ansible-test/ansible_collections/inferops/sglang"
rm -rf "$dest"
mkdir -p "$dest"
cd "$repo"
# Tracked files that exist, and untracked files that git does not ignore, except top-level hidden scratch
# directories of tools (a clean clone has only the tracked ones).
{
  git ls-files -z --cached
  git ls-files -z --others --exclude-standard | grep -zv '^\.' || true
} | sort -zu | while IFS= read -r -d '' path; do
  [ -f "$path" ] && printf '%s\0' "$path"
done | tar --null -T - -cf - | tar -C "$dest" -xf -
log "copied $(find "$dest" -type f | wc -l) files to ${dest#"$repo"/}"
# A repository of its own: otherwise ansible-test finds this one above it, where build/ is ignored.
git -C "$dest" init -q
echo /tests/output/ >>"$dest/.git/info/exclude"

cd "$dest"
case "$command" in
  sanity) exec ansible-test sanity --venv --python "$pyver" --color no "$@" ;;
  units) exec ansible-test units --venv --python "$pyver" --color no "$@" ;;
esac
