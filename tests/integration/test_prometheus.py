"""The shipped monitoring (roles/fleet/files/monitoring) checked by real tools (issue 30, item 5).

* ``promtool check rules`` on the shipped alert rules, and ``promtool test rules`` (sglang_alerts_test.yml beside
  this file): every alert fires on the series it is written for.
* A real Prometheus (Debian's package; scripts/setup.sh installs it) on localhost - a temporary directory, a free
  port, 1 s scrape and evaluation intervals - reads file_sd targets written by the fleet role's plan filter
  (module_utils ``_plans/monitoring.prometheus_targets``, the function behind ``fleet_prometheus_targets_dir``),
  scrapes the SGLang test double started with ``--enable-metrics``, and evaluates the shipped rules: the target is
  up with the labels host, model, version, role and SGLang's metric names; after the double is stopped the alert
  SGLangServerDown fires. The rules are loaded as shipped but for that alert's ``for`` (1 m), shortened to 2 s so the
  test takes seconds.

Skipped (with the reason) only where the prometheus or promtool binary is missing.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import pytest
import yaml
from ansible_run import end_process_groups, free_port

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DOUBLE = os.path.join(REPO, "tests", "double")
RULES = os.path.join(REPO, "roles", "fleet", "files", "monitoring", "sglang-alerts.yml")

pytestmark = pytest.mark.skipif(
    not (shutil.which("prometheus") and shutil.which("promtool")),
    reason="no prometheus/promtool binary (Debian's package prometheus; scripts/setup.sh installs it)")


def get_json(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.loads(response.read().decode())


def wait_for(what, probe, timeout=90):
    """PROBE() until it returns something true; fails naming WHAT (and the last value) after TIMEOUT seconds."""
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            last = probe()
        except OSError as exc:
            last = exc
        if last and not isinstance(last, Exception):
            return last
        time.sleep(0.5)
    pytest.fail("%s: not within %d s (last: %r)" % (what, timeout, last))


def test_promtool_checks_the_shipped_rules():
    result = subprocess.run(["promtool", "check", "rules", RULES], capture_output=True, text=True, check=False)
    print(result.stdout + result.stderr)
    assert result.returncode == 0 and "SUCCESS" in result.stdout


def test_promtool_unit_tests_every_alert():
    """tests/integration/sglang_alerts_test.yml: each alert fires on the series it is written for (a server down, two
    restarts - a cutover and its rollback, a growing queue, a day of good figures and then a drop), not before."""
    tests = os.path.join(os.path.dirname(__file__), "sglang_alerts_test.yml")
    result = subprocess.run(["promtool", "test", "rules", tests], capture_output=True, text=True, check=False)
    print(result.stdout + result.stderr)
    assert result.returncode == 0 and "SUCCESS" in result.stdout
    with open(RULES) as handle:
        alerts = set(rule["alert"] for group in yaml.safe_load(handle)["groups"] for rule in group["rules"])
    with open(tests) as handle:
        tested = set(case["alertname"] for test in yaml.safe_load(handle)["tests"] for case in test["alert_rule_test"]
                     if case["exp_alerts"])
    assert alerts - tested == {"SGLangRouterDown"}  # the same rule as SGLangServerDown, on role="router"


def test_prometheus_scrapes_the_double_and_fires_server_down():
    from ansible_collections.inferops.sglang.plugins.module_utils._plans.monitoring import prometheus_targets

    version = subprocess.run(["prometheus", "--version"], capture_output=True, text=True, check=False)
    print((version.stdout or version.stderr).splitlines()[0])
    tmp = tempfile.mkdtemp(prefix="inferops-prometheus-")
    procs = []
    try:
        model = os.path.join(tmp, "model")
        os.makedirs(model)
        with open(os.path.join(model, "config.json"), "w") as handle:
            handle.write("{}")
        port = free_port()
        env = dict((k, v) for k, v in os.environ.items() if not k.lower().endswith("_proxy"))
        env.update(PYTHONPATH=DOUBLE, SGLANG_DOUBLE_REQUIRE_TOOLS="0", SGLANG_DOUBLE_STATE_DIR=os.path.join(tmp, "state"),
                   SGLANG_DOUBLE_GPU_DIR=os.path.join(tmp, "gpu"))
        double = subprocess.Popen(
            [sys.executable, "-m", "sglang.launch_server", "--model-path", model, "--port", str(port),
             "--served-model-name", "qwen-double", "--enable-metrics"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        procs.append(double)
        wait_for("the double's /metrics", lambda: urllib.request.urlopen(
            "http://127.0.0.1:%d/metrics" % port, timeout=2).status == 200)

        # The targets as the fleet role writes them (fleet_prometheus_targets_dir/sglang.json).
        hostvars = {"127.0.0.1": {"service_server_args": {"model-path": model, "served-model-name": "qwen-double",
                                                          "port": port, "enable-metrics": True},
                                  "service_sglang_version": "0.5.9"}}
        targets = os.path.join(tmp, "targets", "sglang.json")
        os.makedirs(os.path.dirname(targets))
        with open(targets, "w") as handle:
            json.dump(prometheus_targets(["127.0.0.1"], hostvars), handle)

        with open(RULES) as handle:
            rules = yaml.safe_load(handle)
        for group in rules["groups"]:
            for rule in group["rules"]:
                if rule.get("alert") == "SGLangServerDown":
                    rule["for"] = "2s"
        with open(os.path.join(tmp, "rules.yml"), "w") as handle:
            yaml.safe_dump(rules, handle)
        config = {
            "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
            "rule_files": [os.path.join(tmp, "rules.yml")],
            "scrape_configs": [{"job_name": "sglang", "file_sd_configs": [{"files": [targets], "refresh_interval": "1s"}]}],
        }
        with open(os.path.join(tmp, "prometheus.yml"), "w") as handle:
            yaml.safe_dump(config, handle)
        web = free_port()
        base = "http://127.0.0.1:%d" % web
        with open(os.path.join(tmp, "prometheus.log"), "w") as log:
            procs.append(subprocess.Popen(
                ["prometheus", "--config.file", os.path.join(tmp, "prometheus.yml"),
                 "--storage.tsdb.path", os.path.join(tmp, "data"), "--web.listen-address", "127.0.0.1:%d" % web],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True))

        def up_target():
            active = get_json(base + "/api/v1/targets")["data"]["activeTargets"]
            return [t for t in active if t["health"] == "up"]

        up = wait_for("the double's target up in Prometheus", up_target)
        print("target up: %s %s" % (up[0]["scrapeUrl"], json.dumps(up[0]["labels"], sort_keys=True)))
        assert up[0]["labels"]["host"] == "127.0.0.1" and up[0]["labels"]["model"] == "qwen-double"
        assert up[0]["labels"]["version"] == "0.5.9" and up[0]["labels"]["role"] == "worker"

        def series(name):
            query = base + "/api/v1/query?" + urllib.parse.urlencode({"query": name})
            return get_json(query)["data"]["result"]

        running = wait_for("sglang:num_running_reqs in Prometheus", lambda: series("sglang:num_running_reqs"))
        assert running[0]["metric"]["model_name"] == "qwen-double" and running[0]["metric"]["role"] == "worker"
        assert wait_for("the TTFT histogram", lambda: series("sglang:time_to_first_token_seconds_count"))

        end_process_groups([double])
        procs.remove(double)
        stopped = time.time()

        def firing():
            alerts = get_json(base + "/api/v1/alerts")["data"]["alerts"]
            return [a for a in alerts if a["labels"]["alertname"] == "SGLangServerDown" and a["state"] == "firing"]

        alert = wait_for("SGLangServerDown firing", firing)[0]
        print("firing %.1f s after the double stopped: %s %s" % (
            time.time() - stopped, alert["labels"]["alertname"], json.dumps(alert["labels"], sort_keys=True)))
        print("summary: %s" % alert["annotations"]["summary"])
        assert alert["labels"]["host"] == "127.0.0.1" and alert["labels"]["severity"] == "critical"
    finally:
        end_process_groups(procs)
        shutil.rmtree(tmp, ignore_errors=True)
