#!/usr/bin/env bash
# Demo: run the collection's main job against a local target in the state of a hand-started SGLang server.
# Run as root on Debian 12:  bash scripts/demo.sh
# 1. installs what it needs (scripts/setup.sh), 2. starts the systemd container `sglang-demo` and puts it in the
# reference state (the test double of SGLang started by hand with nohup), 3. runs
# `ansible-playbook site.yml -i inventory/demo`, 4. shows the service, its health and the deployment record.
# Leave the container for inspection: docker exec -it sglang-demo bash   Remove it: docker rm -f sglang-demo
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/setup.sh
. "$here/scripts/setup.sh"
cd "$INFEROPS_REPO"
name=sglang-demo
echo "== starting the demo target ($name)"
docker rm -f "$name" >/dev/null 2>&1 || true
docker run -d --name "$name" --hostname "$name" \
  --cap-add SYS_ADMIN --security-opt seccomp=unconfined --cgroupns=host \
  -v /sys/fs/cgroup:/sys/fs/cgroup:rw --tmpfs /run --tmpfs /tmp \
  inferops-sglang/debian12-systemd:latest >/dev/null
for _ in $(seq 1 60); do
  state="$(docker exec "$name" systemctl is-system-running 2>/dev/null || true)"
  case "$state" in running|degraded) break ;; esac
  sleep 1
done
echo "== putting it in the reference state (hand-started server, nohup, outside any unit)"
ansible-playbook -i inventory/demo extensions/molecule/resources/prepare_reference.yml
docker exec "$name" sh -c 'echo "hand-started: $(tr "\0" " " </proc/$(cat /root/handstarted.pid)/cmdline)"'
echo "== running the main job: ansible-playbook site.yml -i inventory/demo"
ansible-playbook -i inventory/demo site.yml
echo "== result"
docker exec "$name" systemctl --no-pager status sglang.service | head -n 12 || true
docker exec "$name" sh -c 'echo "enabled: $(systemctl is-enabled sglang.service)"'
docker exec "$name" python3 -c "import urllib.request; print('GET /health ->', urllib.request.urlopen('http://127.0.0.1:30000/health', timeout=30).status)"
echo "deployment record: $name:/root/production_v2.md  (docker exec $name cat /root/production_v2.md)"
echo "== run the play again by hand (in a new shell; on this converged host nothing changes):"
echo "  cd $INFEROPS_REPO && . .venv/bin/activate && export ANSIBLE_COLLECTIONS_PATH=$ANSIBLE_COLLECTIONS_PATH"
echo "  ansible-playbook -i inventory/demo site.yml"
echo "remove the demo target: docker rm -f $name"
