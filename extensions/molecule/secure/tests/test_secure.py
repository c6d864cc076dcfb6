"""Verify the secure scenario: keyed, TLS, non-root, sandboxed servers behind a keyed router.

After converge (the first cutover of both hand-started servers, which had their API key on the command line, while
a load generator sent keyed requests through the router) and idempotence:
- where the keys are: SGLang's --config file (0600, the service user's), the router's 0600 secrets file, and nowhere
  an unprivileged user, ps, a unit, a supervisor file, the record, the fleet summary or Ansible's -vvv output shows;
- how the servers run: as sglang, caches under /var/cache/sglang, the systemd unit sandboxed with the GPUs reachable;
- C21: a dead proxy in every host's environment did not stop a probe; the server's own proxy got NO_PROXY;
- a keyed rollout through the router drains and re-registers with zero failed requests;
- a refused key ends the gate at once (supervisord host) and rolls back; a service user without access to the GPUs
  is stopped by the pre-flight with the group to add.
"""

import json
import os
import re
import shlex
import subprocess

import pytest
import yaml

from containers import sh, start_load, stop_load

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
SCENARIO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
INVENTORY = os.environ["MOLECULE_INVENTORY_FILE"]
SUMMARY_DIR = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "fleet-summary")
VAULT_PASSWORD = os.path.join(SCENARIO, "vault-password")
ROUTER = "secure-router"
W1, W2 = "secure-w1", "secure-w2"
SERVERS = [W1, W2]
RECORD = "/root/production_v2.md"
CONFIG = "/etc/sglang/sglang-secrets.yaml"
# Files of the test harness itself, not of the collection: the hand-started double's state (it records its parsed
# arguments, and the hand-started server had the key on its command line) and the scenario's vault.
HARNESS = ["/run/sglang-double", "/opt/inferops-double"]


def keys():
    out = subprocess.run(["ansible-vault", "view", "--vault-password-file", VAULT_PASSWORD,
                          os.path.join(SCENARIO, "inventory", "group_vars", "all", "vault.yml")],
                         stdout=subprocess.PIPE, text=True, check=True).stdout
    return yaml.safe_load(out)


KEYS = keys()
API_KEY = KEYS["vault_sglang_api_key"]
SECRETS = sorted(KEYS.values()) + ["proxy-pass-4711"]


def site(tmp_path, extra, verbose=False, limit=None):
    """Run site.yml with extra variables; return (rc, output)."""
    extra_file = tmp_path / "extra.json"
    extra_file.write_text(json.dumps(extra))
    proc = subprocess.run(
        ["ansible-playbook", "-i", INVENTORY, os.path.join(REPO, "site.yml"), "-e", "@%s" % extra_file]
        + (["-vvv"] if verbose else []) + (["--limit", limit] if limit else []),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO, timeout=900, check=False,
        env=dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", ANSIBLE_VAULT_PASSWORD_FILE=VAULT_PASSWORD),
    )
    return proc.returncode, proc.stdout


def server_pid(container):
    if container == W1:
        return int(sh(W1, "systemctl show -p MainPID --value sglang.service").strip())
    out = sh(W2, "/opt/inferops-sglang/supervisor/bin/supervisorctl -c /etc/inferops-sglang/supervisord.conf pid sglang")
    return int(out.strip())


def environ(container):
    """The server's environment, read as its own user (root in a container lacks CAP_SYS_PTRACE to read it)."""
    return sh(container, "runuser -u sglang -- cat /proc/%d/environ | tr '\\0' '\\n'" % server_pid(container))


def converge_started(container):
    """Seconds since the epoch (int) of the first command deploy ran through sudo on container: the start of converge.

    prepare connected as root without sudo, and its tasks logged their invocations to the journal before that, among
    them the hand-started server's command line with the key (the field case the cutover replaces). sudo logs each
    command to the journal (identifier sudo) and to /var/log/sudo.log; the journal is read first.
    """
    out = sh(container, "journalctl --no-pager -o json SYSLOG_IDENTIFIER=sudo 2>/dev/null || true", check=False)
    for line in out.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        message = entry.get("MESSAGE")
        if isinstance(message, str) and re.match(r"\s*deploy : .*USER=root", message):
            return int(entry["__REALTIME_TIMESTAMP"]) // 1000000
    log = sh(container, "cat /var/log/sudo.log")
    first = re.search(r"^(\w{3} +\d+ \d\d:\d\d:\d\d) : deploy : ", log, re.MULTILINE)
    assert first, log[:2000]
    return int(sh(container, "date -d %s +%%s" % shlex.quote(first.group(1))).strip())


def request(container, path, key=None):
    """Status of GET path on the server of container, from inside it (https with the CA on secure-w1)."""
    scheme = "https" if container == W1 else "http"
    code = ("import ssl,urllib.request as u\n"
            "c=ssl.create_default_context(cafile='/etc/sglang/tls/ca.pem')\n"
            "r=u.Request('%s://127.0.0.1:30000%s'%s)\n"
            "try:\n print(u.urlopen(r, timeout=30, context=c).status)\n"
            "except Exception as e:\n print(getattr(e, 'code', e))"
            % (scheme, path, (", headers={'Authorization': 'Bearer %s'}" % key) if key else ""))
    return sh(container, "env -u http_proxy -u https_proxy -u HTTP_PROXY -u HTTPS_PROXY python3 -c %s"
              % _quote(code)).strip()


def _quote(text):
    return "'" + text.replace("'", "'\"'\"'") + "'"


def router_workers():
    code = ("import json,urllib.request as u\n"
            "r=u.Request('http://127.0.0.1:30000/workers', headers={'Authorization': 'Bearer %s'})\n"
            "print(json.dumps({w['url']: w['is_healthy'] for w in json.load(u.urlopen(r, timeout=10))['workers']}))"
            % KEYS["vault_router_admin_key"])
    return json.loads(sh(ROUTER, "env -u http_proxy -u HTTP_PROXY python3 -c %s" % _quote(code)))


@pytest.fixture(scope="module", autouse=True)
def loadgen_key():
    """The load generator reads the router's key from a root-only file, never from its command line."""
    sh(ROUTER, "umask 077 && cat > /root/.loadgen-key <<'EOF'\n%s\nEOF" % API_KEY)


class TestTheConnection:
    """Issue 13: converge connected as the account deploy (no rights but sudo with a password, made by prepare) and
    escalated with sudo; nothing of the collection needed a root login. The first tests of the module: the sudo log
    holds converge and idempotence only (later tests run site.yml as deploy too)."""

    @pytest.mark.parametrize("container", [ROUTER] + SERVERS)
    def test_the_plays_connected_as_deploy_and_escalated_with_sudo(self, container):
        assert sh(container, "id -nG deploy").split() == ["deploy"]
        # Ansible's temporary directory lies in the home of the user it connected as; prepare connected as root.
        assert sh(container, "stat -c '%U %a' /home/deploy/.ansible/tmp").strip() == "deploy 700"
        assert sh(container, "stat -c '%U %a' /var/log/sudo.log").strip() == "root 600"
        log = sh(container, "cat /var/log/sudo.log")
        escalated = [line for line in log.splitlines()
                     if re.search(r" : deploy : .*; USER=root ; COMMAND=/bin/sh -c '?echo BECOME-SUCCESS-", line)]
        # converge and idempotence: every task that touched the host (dozens), each through sudo.
        assert len(escalated) > 20, log[-3000:]
        assert "incorrect password" not in log

    @pytest.mark.parametrize("container", [ROUTER] + SERVERS)
    def test_no_key_reached_sudos_log(self, container):
        """A secret the collection passes through the task's environment or a command line would be logged by sudo
        (and be on sudo's command line while the task runs)."""
        log = sh(container, "cat /var/log/sudo.log")
        assert not [s for s in SECRETS if s in log]


class TestHowTheServersRun:
    @pytest.mark.parametrize("container", SERVERS)
    def test_the_server_runs_as_sglang_and_answers_only_with_the_key(self, container):
        pid = server_pid(container)
        assert sh(container, "ps -o user= -p %d" % pid).strip() == "sglang"
        assert request(container, "/health") == "200"
        assert request(container, "/v1/models") == "401"
        assert request(container, "/v1/models", API_KEY) == "200"
        record = sh(container, "cat %s" % RECORD)
        assert "- Outcome: healthy" in record and "Runs as: `sglang:sglang`" in record

    @pytest.mark.parametrize("container", SERVERS)
    def test_caches_and_environment_files_belong_to_the_service_user(self, container):
        assert sh(container, "stat -c '%U:%G %a' /var/cache/sglang").strip() == "sglang:sglang 750"
        # systemd reads the environment file as root; the supervisord wrapper sources it as the service user.
        owner = "root" if container == W1 else "sglang"
        assert sh(container, "stat -c '%U %a' /etc/sglang/sglang.env").strip() == owner + " 600"
        assert sh(container, "stat -c '%U %a' " + CONFIG).strip() == "sglang 600"
        env = environ(container)
        for name in ("TRITON_CACHE_DIR=/var/cache/sglang/triton", "TORCHINDUCTOR_CACHE_DIR=/var/cache/sglang/torchinductor",
                     "SGLANG_CACHE_DIR=/var/cache/sglang/sglang", "FLASHINFER_WORKSPACE_BASE=/var/cache/sglang/flashinfer",
                     "SGLANG_DG_CACHE_DIR=/var/cache/sglang/deep_gemm", "HOME=/var/cache/sglang"):
            assert name in env.split("\n"), name

    def test_the_unit_is_sandboxed_and_keeps_the_gpus(self):
        unit = sh(W1, "cat /etc/systemd/system/sglang.service")
        lines = unit.splitlines()
        for line in ("User=sglang", "NoNewPrivileges=yes", "PrivateTmp=yes", "ProtectSystem=strict", "ProtectHome=yes",
                     "ProtectKernelTunables=yes", "RestrictSUIDSGID=yes", "LockPersonality=yes", "CapabilityBoundingSet=",
                     "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX AF_NETLINK", "ReadWritePaths=/var/cache/sglang",
                     "SupplementaryGroups=video", "ExecStartPre=-+/usr/bin/nvidia-modprobe -u -c=0"):
            assert any(have.startswith(line) for have in lines), line
        directives = [have.split("=", 1)[0] for have in lines if "=" in have and not have.startswith("#")]
        assert "PrivateDevices" not in directives and "DevicePolicy" not in directives
        # ProtectClock is gated on systemd 253 (before, it hid /dev/nvidia*): absent on Debian 12's 252, present on
        # Debian 13's 257 (scripts/test-debian13.sh). No LogFilterPatterns: the scenario sets no patterns (the default).
        version = int(sh(W1, "systemctl --version").split()[1])
        assert ("ProtectClock" in directives) == (version >= 253), (version, directives)
        assert "LogFilterPatterns" not in directives
        record = sh(W1, "cat %s" % RECORD)
        exposure = re.search(r"exposure \(0.0 confined - 10.0 exposed\): before (.*), after ([0-9.]+) (\w+)", record)
        assert exposure, record
        after = float(exposure.group(2))
        # The same unit without the sandbox, as root: what the role rendered before this issue.
        sh(W1, "sed -e '/^# Sandbox/,$ {/^[A-Z][A-Za-z]*=/{/^\\(WantedBy\\)=/!d}}' -e 's/^User=.*/User=root/' "
               "/etc/systemd/system/sglang.service > /etc/systemd/system/sglang-unsandboxed.service && "
               "systemctl daemon-reload")
        try:
            plain = sh(W1, "systemd-analyze security --no-pager sglang-unsandboxed.service", check=False)
        finally:
            sh(W1, "rm -f /etc/systemd/system/sglang-unsandboxed.service && systemctl daemon-reload")
        before = float(re.search(r"Overall exposure level for \S+: ([0-9.]+)", plain).group(1))
        print("systemd-analyze security sglang.service: unsandboxed root unit %.1f, rendered unit %.1f" % (before, after))
        assert after < before - 2, (before, after)
        assert request(W1, "/health") == "200"


class TestWhereTheKeysAre:
    """Field case C10, with the hand-started servers' key on their command lines before the cutover."""

    @pytest.mark.parametrize("container", [ROUTER] + SERVERS)
    def test_no_key_on_any_command_line(self, container):
        cmdlines = sh(container, "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '", check=False)
        for secret in SECRETS:
            assert secret not in cmdlines

    @pytest.mark.parametrize("container", [ROUTER] + SERVERS)
    def test_no_key_in_a_unit_or_supervisor_file(self, container):
        # The server's environment file (0600, the service user's) holds the proxy password of service_environment.
        out = sh(container, "grep -rlF -e %s /etc/systemd/system /etc/inferops-sglang /etc/sglang/*.env "
                            "/etc/sglang/router-workers.env 2>/dev/null || true"
                 % " -e ".join(sorted(KEYS.values())))
        assert out.strip() == ""

    @pytest.mark.parametrize("container", [ROUTER] + SERVERS)
    def test_an_unprivileged_user_reads_no_key_anywhere(self, container):
        excluded = " ".join("--exclude-dir=%s" % os.path.basename(path) for path in HARNESS)
        out = sh(container, "runuser -u nobody -- grep -rlIF %s -e %s / --exclude-dir=proc --exclude-dir=sys "
                            "--exclude-dir=dev 2>/dev/null || true" % (excluded, " -e ".join(SECRETS)), timeout=300)
        assert out.strip() == "", out
        journal = sh(container, "runuser -u nobody -- journalctl --no-pager 2>&1 || true")
        assert not [s for s in SECRETS if s in journal]

    @pytest.mark.parametrize("container", [ROUTER, W1])
    def test_no_key_or_proxy_password_in_the_journal_since_converge(self, container):
        """Read as root, every field (-o export: _CMDLINE too), from the start of the first converge to the end of the
        last (converge.yml notes both; prepare logged the hand-started server's key before, verify's own commands
        come after): a module that logs its invocation (its options that are not no_log) or a process whose command
        line holds a key would put it there. secure-w2 has no journald (PID 1 is not systemd).

        SGLang itself logs its resolved server_args, keys included, once at start-up (sglang/srt/entrypoints/engine.py,
        0.5.23: logger.info(f"server_args=...")); the service's logging configuration (SGLANG_LOGGING_CONFIG_PATH)
        masks it, on Debian 12's systemd 252 too, where LogFilterPatterns= does not exist. The masked line is there."""
        started = int(sh(container, "cat /root/converge-started").strip())
        ended = int(sh(container, "cat /root/converge-ended").strip())
        assert converge_started(container) >= started, "deploy's first sudo before the converge started"
        window = "journalctl --no-pager -o export --since @%d --until @%d" % (started, ended + 1)
        patterns = " ".join("-e " + shlex.quote(secret) for secret in SECRETS)
        # grep -a inside the container: the export format carries binary fields, and only the findings come back.
        command = ("%s | grep -ac '^SYSLOG_IDENTIFIER=sudo$'; %s | grep -aF %s "
                   "| LC_ALL=C tr -cd '\\11\\12\\40-\\176' | cut -c1-200 | sort | uniq -c || true" % (window, window, patterns))
        counts = sh(container, command, timeout=300, check=False)
        first, dummy, rest = counts.partition("\n")
        assert int(first.strip() or 0) > 0, "the converge's commands through sudo are not in the window"
        findings = [line.strip() for line in rest.splitlines() if line.strip()]
        assert findings == [], findings[:20]
        if container == W1:
            masked = sh(container, "%s | grep -a '^MESSAGE=.*server_args=' | grep -acF \"api_key='********'\" || true"
                        % window, timeout=300, check=False)
            assert int(masked.strip() or 0) >= 1, "SGLang's start-up line (masked) is not in the window"

    @pytest.mark.parametrize("container", [ROUTER] + SERVERS)
    def test_no_key_in_a_file_others_can_read(self, container):
        # Mode o+r, whatever the directories around it: the unit, cuda.env, the record, the known-good store.
        # grep exits 1 when it finds nothing.
        out = sh(container, "find /etc/sglang /etc/systemd/system /etc/inferops-sglang /var/lib %s -xdev -type f "
                            "-perm -o=r -print0 2>/dev/null | xargs -0 -r grep -lIF %s 2>/dev/null || true"
                 % (RECORD, " ".join("-e " + shlex.quote(s) for s in SECRETS)), timeout=300)
        assert out.strip() == "", out

    def test_the_key_is_where_sglang_and_the_router_read_it(self):
        assert API_KEY in sh(W1, "cat " + CONFIG)
        assert "--config " + CONFIG in sh(W1, "tr '\\0' ' ' < /proc/%d/cmdline" % server_pid(W1))
        assert sh(ROUTER, "stat -c '%U %a' /etc/sglang/sglang-router-secrets.json").strip() == "sglang-router 600"

    @pytest.mark.parametrize("container", SERVERS)
    def test_no_key_or_proxy_password_in_the_record(self, container):
        record = sh(container, "cat %s" % RECORD)
        assert not [s for s in SECRETS if s in record]

    def test_no_key_in_the_fleet_summary(self):
        for name in os.listdir(SUMMARY_DIR):
            with open(os.path.join(SUMMARY_DIR, name)) as handle:
                text = handle.read()
            assert not [s for s in SECRETS if s in text], name


class TestProxies:
    """Field case C21: a dead proxy in the hosts' environment, loopback not in no_proxy."""

    def test_the_hosts_have_a_dead_proxy_and_the_run_still_passed(self):
        for container in [ROUTER] + SERVERS:
            assert "http_proxy=http://proxy.invalid:3128" in sh(container, "env")
        for container in SERVERS:
            assert "- Outcome: healthy" in sh(container, "cat %s" % RECORD)

    @pytest.mark.parametrize("container", SERVERS)
    def test_a_server_behind_a_proxy_gets_no_proxy_for_loopback(self, container):
        env = environ(container).split("\n")
        no_proxy = [line.split("=", 1)[1] for line in env if line.startswith("NO_PROXY=")]
        assert no_proxy, env
        for name in ("127.0.0.1", "localhost", "0.0.0.0", "::1", container):
            assert name in no_proxy[0].split(","), no_proxy


class TestRollout:
    def test_a_keyed_rollout_through_the_router_fails_no_request(self, tmp_path):
        """A new configuration across both servers: drain with the server key, re-register with the worker key
        through the admin control-plane key; the -vvv output of the whole run holds no secret."""
        before = {c: server_pid(c) for c in SERVERS}
        start_load(ROUTER, key_file="/root/.loadgen-key")
        try:
            rc, out = site(tmp_path, {"secure_test_args": {"cuda-graph-max-bs": 256}}, verbose=True)
        finally:
            result = stop_load(ROUTER)
        assert rc == 0, out[-4000:]
        assert not [s for s in SECRETS if s in out]
        assert result["failed"] == 0 and result["ok"] > 0, result
        assert all(server_pid(c) != before[c] for c in SERVERS)
        workers = router_workers()
        assert workers == {"https://secure-w1:30000": True, "http://secure-w2:30000": True}, workers
        for container in SERVERS:
            record = sh(container, "cat %s" % RECORD)
            assert "--cuda-graph-max-bs 256" in record

    def test_a_refused_key_fails_at_once_and_rolls_back_under_supervisord(self, tmp_path):
        before = server_pid(W2)
        rc, out = site(tmp_path, {"secure_test_args": {"cuda-graph-max-bs": 64}, "cutover_api_key": "sk-wrong",
                                  "fleet_canary": W2}, limit="%s,%s" % (ROUTER, W2))
        assert rc != 0
        assert "the key was refused" in out and "Rolled back to the last known-good configuration" in out, out[-4000:]
        gate = json.loads(re.search(r'FAILED! => (\{.*"the key was refused.*\})', out).group(1))
        # supervisorctl start returns after startsecs (10 s); from the first /health 200 the gate ends at once.
        assert gate["elapsed"] - gate["time_to_healthy"] < 10, gate
        assert not [s for s in SECRETS if s in out]
        assert server_pid(W2) != before
        assert request(W2, "/v1/models", API_KEY) == "200"
        assert router_workers().get("http://secure-w2:30000") is True

    def test_a_service_user_without_the_gpus_is_stopped_before_anything_changes(self, tmp_path):
        unit = sh(W1, "cat /etc/systemd/system/sglang.service")
        pid = server_pid(W1)
        rc, out = site(tmp_path, {"service_user": "sglang-nogpu", "service_user_create": True,
                                  "service_user_groups": []}, limit=W1)
        assert rc != 0
        assert "cannot open /dev/nvidia" in out and "service_user_groups: [video]" in out, out[-3000:]
        assert sh(W1, "cat /etc/systemd/system/sglang.service") == unit
        assert server_pid(W1) == pid
        assert sh(W1, "getent passwd sglang-nogpu || echo absent").strip() == "absent"

    def test_a_key_rotation_drains_each_old_server_with_its_old_key(self, tmp_path):
        """The last test (the servers keep the new key): the old server is drained with the known-good key, the new
        one registered with the new key, and the load through the router sees no failed request."""
        new_key = "sk-rotated-%s" % os.urandom(8).hex()
        start_load(ROUTER, key_file="/root/.loadgen-key")
        try:
            rc, out = site(tmp_path, {"service_secret_args": {"api-key": new_key,
                                                              "admin-api-key": KEYS["vault_sglang_admin_api_key"]}},
                           verbose=True)
        finally:
            result = stop_load(ROUTER)
        assert rc == 0, out[-4000:]
        assert "did not wait" not in out and "the key was refused" not in out
        assert not [s for s in SECRETS + [new_key] if s in out]
        assert result["failed"] == 0 and result["ok"] > 0, result
        for container in SERVERS:
            assert request(container, "/v1/models", new_key) == "200"
            assert request(container, "/v1/models", API_KEY) == "401"
