# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The shipped Grafana dashboard and Prometheus alert rules (roles/fleet/files/monitoring, issue 30 item 5) name only
metrics the test double serves - SGLang 0.5.23's names (srt/observability/metrics_collector.py) - and Prometheus's
own ``up``; their labels are the ones the targets carry (filter prometheus_targets). promtool and a real Prometheus
check the rules in tests/integration/test_prometheus.py."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import re

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
MONITORING = os.path.join(ROOT, "roles", "fleet", "files", "monitoring")
DOUBLE = os.path.join(ROOT, "tests", "double", "sglang", "srt", "entrypoints", "http_server.py")
METRIC = re.compile(r"sglang:[a-z_]+")
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")
# Labels a series has: the targets' (host, model, version, role), Prometheus's (instance, job), SGLang's.
LABELS = {"host", "model", "version", "role", "instance", "job", "model_name", "engine_type", "tp_rank", "pp_rank",
          "moe_ep_rank", "dp_rank", "is_streaming", "le"}


def served_metrics():
    """The metric families the double's /metrics declares (its ``# TYPE`` lines are written by ``family``)."""
    with open(DOUBLE) as f:
        source = f.read()
    body = source[source.index("    def metrics(self"):source.index("    def flush_cache(")]
    return set(re.findall(r'family\("(sglang:[a-z_]+)"', body))


def base_name(metric):
    for suffix in HISTOGRAM_SUFFIXES:
        if metric.endswith(suffix) and metric[:-len(suffix)] in served_metrics():
            return metric[:-len(suffix)]
    return metric


def dashboard():
    with open(os.path.join(MONITORING, "sglang-dashboard.json")) as f:
        return json.load(f)


def rules():
    with open(os.path.join(MONITORING, "sglang-alerts.yml")) as f:
        return [rule for group in yaml.safe_load(f)["groups"] for rule in group["rules"]]


def test_the_double_serves_the_metrics_the_issue_names():
    assert {"sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:gen_throughput", "sglang:spec_accept_length",
            "sglang:prompt_tokens_total", "sglang:generation_tokens_total",
            "sglang:time_to_first_token_seconds"} <= served_metrics()


def dashboard_exprs():
    return [(panel["title"], target["expr"]) for panel in dashboard()["panels"] for target in panel["targets"]]


def test_the_dashboard_parses_and_every_panel_has_a_query():
    board = dashboard()
    assert board["uid"] and board["panels"]
    assert all(panel["targets"] for panel in board["panels"])
    assert len(set(panel["id"] for panel in board["panels"])) == len(board["panels"])


@pytest.mark.parametrize("where, expr", dashboard_exprs() + [(rule["alert"], rule["expr"]) for rule in rules()])
def test_every_query_names_served_metrics_and_known_labels(where, expr):
    names = set(base_name(m) for m in METRIC.findall(expr))
    assert names <= served_metrics(), "%s: not served by the double: %s" % (where, sorted(names - served_metrics()))
    assert names or re.search(r"\bup\{", expr), "%s names no metric" % where
    used = set(re.findall(r"\b([a-z_]+)=~?\"", expr)) | set(
        label.strip() for group in re.findall(r"\bby \(([^)]*)\)", expr) for label in group.split(","))
    assert used <= LABELS, "%s: labels no series has: %s" % (where, sorted(used - LABELS))


def test_every_alert_says_what_to_do():
    for rule in rules():
        assert rule["labels"]["severity"] in ("critical", "warning")
        assert rule["annotations"]["summary"] and rule["annotations"]["description"]
    assert "SGLangServerDown" in [rule["alert"] for rule in rules()]
