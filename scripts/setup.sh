#!/usr/bin/env bash
# Install what the demo and the tests need on a Debian 12 machine, as root, idempotently:
# debootstrap, python3-venv, shellcheck (ansible-test sanity runs it) and prometheus (its promtool and a real server for
# tests/integration/test_prometheus.py; the tests do not use the package's service) from Debian; a docker engine (the
# one that is installed, Docker CE's docker-ce or Debian's docker.io, is used as it is; Debian's docker.io is installed
# only where there is none; no package is ever removed); a pinned venv in .venv, the collections community.docker,
# ansible.posix and community.general taken from the `ansible` wheel on PyPI (Galaxy is not needed), this collection
# linked into the venv, a running dockerd, and the base image of the test containers.
# Source it (`. scripts/setup.sh`) to get PATH and the variables below.
set -euo pipefail
INFEROPS_REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export INFEROPS_REPO
VENV="$INFEROPS_REPO/.venv"
CACHE="$INFEROPS_REPO/.cache"
ANSIBLE_WHEEL_VERSION=12.3.0
log() { printf '[setup] %s\n' "$*" >&2; }

[ "$(id -u)" = 0 ] || { echo "run as root (it installs Debian packages and starts dockerd)" >&2; exit 1; }

need_pkgs=()
for p in debootstrap python3-venv shellcheck prometheus; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need_pkgs+=("$p")
done
# Docker: use what is installed. Installing docker.io beside Docker CE would make apt remove docker-ce and containerd.io.
docker_pkgs="$(dpkg-query -W -f='${Package} ${Status}\n' docker-ce docker-ce-cli docker.io moby-engine containerd.io 2>/dev/null \
  | awk '/install ok installed/ {print $1}' | xargs || true)"
# The engine decides, not the client: a machine may carry a docker CLI alone (seen: /usr/local/bin/docker, no dockerd).
if docker info >/dev/null 2>&1 || command -v dockerd >/dev/null 2>&1; then
  command -v docker >/dev/null 2>&1 || {
    log "a docker engine is installed but no docker client: install the client from the same source (docker-ce-cli" \
        "for Docker CE) and run again. Nothing was installed or removed."
    exit 1
  }
  log "using the installed docker engine: $(command -v dockerd || echo 'a running one'), client $(command -v docker)${docker_pkgs:+ (packages: $docker_pkgs)}"
elif [ -n "$docker_pkgs" ]; then
  log "docker packages are installed ($docker_pkgs) but there is no docker engine (dockerd): install the engine from the" \
      "same source (docker-ce for Docker CE) and run again. Nothing was installed or removed."
  exit 1
else
  if command -v docker >/dev/null 2>&1; then
    log "$(command -v docker) is a docker client without an engine: installing Debian's docker.io for the engine" \
        "(that client stays first on PATH; the engine's API version is negotiated)"
  fi
  need_pkgs+=(docker.io)
fi
if ((${#need_pkgs[@]})); then
  log "installing Debian packages: ${need_pkgs[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends --no-remove "${need_pkgs[@]}" >/dev/null
fi

if ! docker info >/dev/null 2>&1; then
  if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
    systemctl start docker || true
  fi
  if ! docker info >/dev/null 2>&1; then
    command -v dockerd >/dev/null || { log "docker does not answer (docker info) and there is no dockerd to start"; exit 1; }
    log "starting dockerd"
    mkdir -p /var/log
    nohup dockerd >/var/log/inferops-dockerd.log 2>&1 &
  fi
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { log "dockerd did not start; see /var/log/inferops-dockerd.log"; exit 1; }
fi

# The venv's recipe: a change of requirements-dev.txt, of the ansible wheel or of the collections taken from it rebuilds
# the venv (other edits of this script do not).
WHEEL_COLLECTIONS="community/docker ansible/posix community/general"
stamp="$(printf '%s\n' "venv-recipe 2" "$ANSIBLE_WHEEL_VERSION" "$WHEEL_COLLECTIONS" \
  | cat - "$INFEROPS_REPO/requirements-dev.txt" | sha256sum | cut -c1-16)"
if [ "$(cat "$VENV/.inferops-stamp" 2>/dev/null)" != "$stamp" ]; then
  log "creating $VENV"
  rm -rf "$VENV"
  /usr/bin/python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check -r "$INFEROPS_REPO/requirements-dev.txt"
  mkdir -p "$CACHE/wheels"
  cached_wheel() { local w; for w in "$CACHE"/wheels/ansible-"$ANSIBLE_WHEEL_VERSION"-*.whl; do [ -e "$w" ] && echo "$w" && break; done; true; }
  wheel="$(cached_wheel)"
  if [ -z "$wheel" ]; then
    log "downloading the ansible $ANSIBLE_WHEEL_VERSION wheel for community.docker, ansible.posix, community.general"
    "$VENV/bin/pip" download -q --disable-pip-version-check --no-deps -d "$CACHE/wheels" "ansible==$ANSIBLE_WHEEL_VERSION"
    wheel="$(cached_wheel)"
  fi
  site="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  "$VENV/bin/python" - "$wheel" "$site" "$WHEEL_COLLECTIONS" <<'PY'
import sys, zipfile
wheel, site, names = sys.argv[1:]
keep = tuple("ansible_collections/%s/" % name for name in names.split())
with zipfile.ZipFile(wheel) as zf:
    zf.extractall(site, [n for n in zf.namelist() if n.startswith(keep)])
PY
  echo "$stamp" >"$VENV/.inferops-stamp"
fi
# sglang-router and its dependencies for the fleet scenario's router container (pinned; installed offline there).
if [ ! -s "$CACHE/wheels/router/.complete" ] || ! cmp -s "$CACHE/wheels/router/.complete" "$INFEROPS_REPO/tests/fleet/router-requirements.txt"; then
  rm -rf "$CACHE/wheels/router"
  mkdir -p "$CACHE/wheels/router"
  "$VENV/bin/pip" download -q --disable-pip-version-check --no-deps --only-binary=:all: -d "$CACHE/wheels/router" \
    -r "$INFEROPS_REPO/tests/fleet/router-requirements.txt"
  cp "$INFEROPS_REPO/tests/fleet/router-requirements.txt" "$CACHE/wheels/router/.complete"
fi

# smg (the router from 0.4 on) and its dependencies for tests/integration/test_smg.py (pinned; installed offline).
if [ ! -s "$CACHE/wheels/smg/.complete" ] || ! cmp -s "$CACHE/wheels/smg/.complete" "$INFEROPS_REPO/tests/integration/smg-requirements.txt"; then
  rm -rf "$CACHE/wheels/smg"
  mkdir -p "$CACHE/wheels/smg"
  "$VENV/bin/pip" download -q --disable-pip-version-check --no-deps --only-binary=:all: -d "$CACHE/wheels/smg" \
    -r "$INFEROPS_REPO/tests/integration/smg-requirements.txt"
  cp "$INFEROPS_REPO/tests/integration/smg-requirements.txt" "$CACHE/wheels/smg/.complete"
fi

# supervisor's wheel for the no-systemd fallback in test containers (they get it from here, not from PyPI).
if ! ls "$CACHE"/wheels/supervisor-4.3.0-*.whl >/dev/null 2>&1; then
  mkdir -p "$CACHE/wheels"
  "$VENV/bin/pip" download -q --disable-pip-version-check --no-deps -d "$CACHE/wheels" supervisor==4.3.0
fi
site="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
mkdir -p "$site/ansible_collections/inferops"
ln -sfn "$INFEROPS_REPO" "$site/ansible_collections/inferops/sglang"

bash "$INFEROPS_REPO/tests/images/build-base.sh" >&2

export PATH="$VENV/bin:$PATH"
export ANSIBLE_COLLECTIONS_PATH="$site"
export ANSIBLE_FORCE_COLOR="${ANSIBLE_FORCE_COLOR:-false}"
# The whole output first: `ansible --version | head -n1` ends ansible with a broken pipe (a traceback on stderr).
ansible_version="$("$VENV/bin/ansible" --version)"
log "ready: ${ansible_version%%$'\n'*}"
