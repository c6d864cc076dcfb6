"""The router role keeps its keys off every command line: the keys are declared no_log, the unit's launcher and the
argument check compose argv the same way, and the check's error never shows a key (run with the real
sglang-router 0.3.2 when scripts/setup.sh installed it in .cache/router-venv)."""

import json
import os
import subprocess

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
ROUTER_PYTHON = os.path.join(ROOT, ".cache", "router-venv", "bin", "python")
COMPOSE = "sys.argv[2:]+json.load(open(sys.argv[1]))"


def load(*parts):
    with open(os.path.join(ROOT, "roles", "router", *parts)) as handle:
        return yaml.safe_load(handle)


def test_every_key_is_no_log():
    options = load("meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    assert options["router_api_key"]["no_log"] is True
    assert options["router_worker_api_key"]["no_log"] is True
    assert options["router_control_plane_api_keys"]["options"]["key"]["no_log"] is True


def test_the_launcher_and_the_check_compose_argv_alike():
    variables = load("vars", "main.yml")
    assert COMPOSE in variables["_router_launcher"].replace(" ", "")
    assert "parse_router_args(sys.argv[2:] + secrets)" in variables["_router_check_code"]
    assert "launch_router" not in variables["_router_check_code"].replace("sglang_router.launch_router", "")


def test_directives_newer_than_232_name_their_version():
    versions = dict((name, since) for name, dummy, since in load("vars", "main.yml")["_router_hardening"])
    assert versions["SystemCallFilter"] == 231
    assert versions["ProcSubset"] == 247
    # RestrictNamespaces, ProtectProc, capabilities and address families come from the filter sandbox_directives.
    assert not set(versions) & {"RestrictNamespaces", "ProtectProc", "CapabilityBoundingSet", "RestrictAddressFamilies"}
    assert "PrivateUsers" not in versions   # fails in the test containers (217/USER): left out


def run_check(secrets, args=()):
    code = load("vars", "main.yml")["_router_check_code"]
    return subprocess.run([ROUTER_PYTHON, "-c", code, "/dev/stdin"] + list(args), input=json.dumps(secrets),
                          capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.skipif(not os.path.exists(ROUTER_PYTHON), reason="sglang-router is not in .cache/router-venv")
@pytest.mark.parametrize("secrets, args, expected", [
    (["--api-key=rk-Secret-1", "--control-plane-api-keys", "cp1:ansible:root:cp-Secret-2"], [], "Invalid role"),
    (["--api-key=rk-Secret-1", "--control-plane-api-keys", "cp-Secret-2"], [], "Invalid API key format: '********'"),
    (["--api-key=rk-Secret-1"], ["--retry-max-retries", "x"], "invalid int value"),
])
def test_the_check_fails_without_showing_a_key(secrets, args, expected):
    result = run_check(secrets, args)
    assert result.returncode != 0
    assert expected in result.stderr
    assert "Secret" not in result.stderr + result.stdout
    assert "usage:" not in result.stderr   # only argparse's error line


@pytest.mark.skipif(not os.path.exists(ROUTER_PYTHON), reason="sglang-router is not in .cache/router-venv")
def test_the_check_accepts_good_keys_even_one_starting_with_a_dash():
    result = run_check(["--api-key=-rk-Secret-1", "--control-plane-api-keys", "cp1:ansible:admin:cp:Secret:2"],
                       ["--host", "0.0.0.0", "--port", "30000", "--worker-urls"])
    assert result.returncode == 0, result.stderr
