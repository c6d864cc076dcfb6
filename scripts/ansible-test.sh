#!/usr/bin/env bash
# Run ansible-test the way the Ansible ecosystem does, on a copy of this tree.
#   bash scripts/ansible-test.sh sanity [ansible-test options]   # all sanity tests, no ignore entries allowed
#   bash scripts/ansible-test.sh units  [ansible-test options]   # tests/unit with ansible-test's pytest setup
#   bash scripts/ansible-test.sh --core 2.16 sanity              # the same with another ansible-core (2.16 ... 2.21)
#   bash scripts/ansible-test.sh --core 2.16 venv                # only make that virtual environment; print its path
#   bash scripts/ansible-test.sh lines                           # the claimed lines, oldest first (2.16 ... 2.21)
# Without --core it runs the ansible-test of the environment (the .venv of scripts/setup.sh, ansible-core 2.19).
# With --core X.Y it runs ansible-core X.Y (the release pinned in CORE_RELEASES below) from its own virtual environment,
# .cache/ansible-core/X.Y, made here on first use from the pip mirror with the oldest Python of this machine that the
# release supports as a controller (Debian's 3.11, or Python 3.12 for 2.20 and later: pyenv's 3.12.1, else python3.12
# on PATH; ANSIBLE_TEST_PYTHON overrides).
# ansible-test wants the real path of the collection to end in ansible_collections/<namespace>/<name> (a symlink
# does not do), so the tracked files, plus new files that git does not ignore, are copied to
# build/ansible-test/ansible_collections/inferops/sglang first (build/ansible-test-X.Y with --core, so that runs of
# two versions do not share a copy). It runs with --venv: ansible-test makes its own virtual environments with its own
# pinned requirements from PyPI (cached in ~/.ansible/test/venv, per version of those requirements); the one download
# it would make from elsewhere, its pip bootstrap script, is replaced by scripts/get_pip_offline.py.
# --docker cannot work here (no image registry).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The ansible-core releases that --core X.Y installs (the newest patch release of each line when it was last checked).
# meta/runtime.yml's requires_ansible claims exactly these lines; tests/packaging/test_galaxy_metadata.py checks that.
CORE_RELEASES="2.16.19 2.17.14 2.18.19 2.19.14 2.20.10 2.21.5"
log() { printf '[ansible-test] %s\n' "$*" >&2; }

usage="usage: $0 [--core X.Y] sanity|units [ansible-test options] | --core X.Y venv | lines"
core=""
if [ "${1:-}" = --core ]; then
  core="${2:?$usage}"
  shift 2
fi
command="${1:?$usage}"
shift
case "$command" in
  sanity|units) ;;
  venv) [ -n "$core" ] || { echo "$usage" >&2; exit 2; } ;;
  lines) for r in $CORE_RELEASES; do echo "${r%.*}"; done; exit 0 ;;
  *) echo "unknown command: $command; $usage" >&2; exit 2 ;;
esac

copy="$repo/build/ansible-test"
if [ -n "$core" ]; then
  line="$(printf '%s' "$core" | cut -d. -f1,2)"
  release=""
  for r in $CORE_RELEASES; do
    [ "${r%.*}" = "$line" ] && release="$r"
  done
  [ -n "$release" ] || { log "ansible-core $core: not one of the lines this collection claims ($CORE_RELEASES)"; exit 2; }
  # A virtual environment with ansible-core alone (and what it requires): tests/packaging/test_clean_install.py
  # installs the collection tarball with it too. One maker at a time (flock), then it is only read.
  venv="$repo/.cache/ansible-core/$line"
  mkdir -p "$(dirname "$venv")"
  exec 9>"$venv.lock"
  flock 9
  if [ ! -x "$venv/bin/ansible-test" ] || ! "$venv/bin/python" -c 'import sys; from ansible.release import __version__ as v; sys.exit(v != sys.argv[1])' "$release" 2>/dev/null; then
    base="${ANSIBLE_TEST_PYTHON:-}"
    if [ -z "$base" ]; then
      case "$line" in
        2.1[6-9]) base=/usr/bin/python3.11 ;;
        *)
          for base in "$HOME/.pyenv/versions/3.12.1/bin/python3.12" "$(command -v python3.12 || true)"; do
            "$base" -c '' 2>/dev/null && break  # a pyenv shim on PATH may name no usable interpreter
          done ;;
      esac
    fi
    log "making $venv: ansible-core $release on $("$base" --version 2>&1)"
    rm -rf "$venv"
    "$base" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "ansible-core==$release" >&2
  fi
  exec 9>&-
  if [ "$command" = venv ]; then
    echo "$venv"
    exit 0
  fi
  export PATH="$venv/bin:$PATH"
  hash -r
  copy="$repo/build/ansible-test-$line"
fi
log "$(ansible-test --version 2>&1 | head -n1) on $(python --version 2>&1)"

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

dest="$copy/ansible_collections/inferops/sglang"
# One run per copy at a time: a second run would delete the tree the first one is testing. The lock (fd 8) stays
# held by ansible-test through the exec below, until it exits.
mkdir -p "$copy"
exec 8>"$copy.lock"
flock 8
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
