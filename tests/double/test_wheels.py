"""The SGLang test double as installable versions (tests/double/build_wheels.py).

The wheels are built once into a temporary wheelhouse, installed offline into
fresh venvs side by side (one with the venv's own pip, the others with this
interpreter's ``pip --python``, which is faster), and each build is checked
from its venv only: version, parser, SGLANG_ENABLE_SPEC_V2, health.
"""

import base64
import csv
import hashlib
import io
import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from test_double import Server, make_model, subreaper, wait_for  # noqa: F401  pylint: disable=unused-import

HERE = Path(__file__).resolve().parent
BUILDS = ("0.5.9", "0.5.10", "0.5.10.post1", "0.5.23")
BASE_PYTHON = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable
# nothing of the source tree or the caller's environment may leak into the venvs
CLEAN_ENV = {k: v for k, v in os.environ.items()
             if k not in ("PYTHONPATH", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS")
             and not k.lower().endswith("_proxy") and not k.startswith("SGLANG_")}


def run(argv, env=None, cwd=None, **kw):
    return subprocess.run([str(a) for a in argv], env=dict(CLEAN_ENV, **(env or {})), cwd=cwd,
                          capture_output=True, text=True, check=False, **kw)


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheelhouse")
    built = run([sys.executable, HERE / "build_wheels.py", "--out", out])
    assert built.returncode == 0, built.stderr
    return out


@pytest.fixture(scope="module")
def venvs(wheelhouse, tmp_path_factory):
    """One venv per build (python -m venv --without-pip), filled by this interpreter's pip, offline."""
    root = tmp_path_factory.mktemp("venvs")
    made = {}
    for version in BUILDS:
        venv = root / version
        assert run([BASE_PYTHON, "-m", "venv", "--without-pip", venv]).returncode == 0
        done = run([sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install", "--quiet",
                    "--no-index", "--find-links", wheelhouse, "sglang==%s" % version])
        assert done.returncode == 0, done.stderr
        made[version] = venv
    return made


def in_venv(venv, code, env=None, cwd=None):
    return run([venv / "bin" / "python", "-c", code], env=env, cwd=cwd)


def test_wheels_are_valid_reproducible_and_carry_their_version(wheelhouse, tmp_path):
    """Issue 15: each wheel holds the package, version.py with its version, and a RECORD pip can verify."""
    assert sorted(p.name for p in wheelhouse.iterdir()) == sorted(
        ["sglang-%s-py3-none-any.whl" % v for v in BUILDS] + ["ninja-1.11.1.4-py3-none-any.whl"])
    for version in BUILDS:
        data = (wheelhouse / ("sglang-%s-py3-none-any.whl" % version)).read_bytes()
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            names = zf.namelist()
            info = "sglang-%s.dist-info/" % version
            assert {info + n for n in ("METADATA", "WHEEL", "RECORD", "entry_points.txt", "top_level.txt")} <= set(names)
            assert "Version: %s\n" % version in zf.read(info + "METADATA").decode()
            assert "Requires-Dist: ninja\n" in zf.read(info + "METADATA").decode()
            # The spec v2 switch's reader is only in the builds before 0.5.10; after, its name is nowhere.
            mentions = [n for n in names if n.endswith(".py") and b"SGLANG_ENABLE_SPEC_V2" in zf.read(n)]
            assert mentions == (["sglang/srt/spec_v2.py"] if version == "0.5.9" else []), (version, mentions)
            assert "sglang = sglang.cli:main" in zf.read(info + "entry_points.txt").decode()
            assert '__version__ = "%s"' % version in zf.read("sglang/version.py").decode()
            assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
            rows = list(csv.reader(io.StringIO(zf.read(info + "RECORD").decode())))
            assert sorted(r[0] for r in rows) == sorted(names)
            for path, digest, size in rows:
                if path == info + "RECORD":
                    assert digest == size == ""
                    continue
                content = zf.read(path)
                expected = base64.urlsafe_b64encode(hashlib.sha256(content).digest()).rstrip(b"=").decode()
                assert (digest, int(size)) == ("sha256=" + expected, len(content)), path
    again = run([sys.executable, HERE / "build_wheels.py", "--out", wheelhouse])
    assert again.returncode == 0 and '"changed": false' in again.stdout.splitlines()[-1]  # same bytes
    bad = run([sys.executable, HERE / "build_wheels.py", "--out", tmp_path, "--versions", "0.6"])
    assert bad.returncode == 2 and "unsupported version '0.6'" in bad.stderr


def test_real_pip_installs_a_build_offline_into_a_fresh_venv(wheelhouse, tmp_path):
    """Issue 15: python3 -m venv, then the venv's own pip, --no-index --find-links; upgrade in place works too."""
    venv = tmp_path / "venv"
    assert run([BASE_PYTHON, "-m", "venv", venv]).returncode == 0
    pip = [venv / "bin" / "python", "-m", "pip", "install", "--quiet", "--no-index", "--find-links", wheelhouse]
    done = run(pip + ["sglang==0.5.10"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert run([venv / "bin" / "sglang", "version"], cwd=tmp_path).stdout.splitlines()[0] == "sglang version: 0.5.10"
    helped = run([venv / "bin" / "python", "-m", "sglang.launch_server", "--help"], cwd=tmp_path)
    assert helped.returncode == 0 and "--model-path" in helped.stdout and "--cuda-graph-max-bs " not in helped.stdout
    assert run([venv / "bin" / "python", "-m", "pip", "check"], cwd=tmp_path).returncode == 0
    done = run(pip + ["sglang==0.5.9"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    shown = in_venv(venv, "import importlib.metadata as m, sglang; print(m.version('sglang'), sglang.__version__)", cwd=tmp_path)
    assert shown.stdout.split() == ["0.5.9", "0.5.9"]


def test_builds_side_by_side_each_report_their_version(venvs, tmp_path):
    """Issue 15: one venv per version; importlib.metadata, sglang.__version__ and `sglang version` agree."""
    for version, venv in venvs.items():
        shown = in_venv(venv, "import importlib.metadata as m, sglang; print(m.version('sglang'), sglang.__version__, sglang.__file__)",
                        cwd=tmp_path)
        assert shown.stdout.split()[:2] == [version, version], shown.stderr
        assert shown.stdout.split()[2].startswith(str(venv))
        assert run([venv / "bin" / "sglang", "version"], cwd=tmp_path).stdout.startswith("sglang version: %s\n" % version)


@pytest.mark.parametrize("version, accepted", [("0.5.9", True), ("0.5.10", False), ("0.5.10.post1", False)])
def test_cuda_graph_max_bs_is_gone_from_0_5_10_as_an_unknown_flag(venvs, tmp_path, version, accepted):
    """Issue 15: 0.5.10's parser rejects --cuda-graph-max-bs as argparse rejects any unknown flag (exit 2),
    on the command line and as a --config key; 0.5.9 takes both."""
    model = make_model(tmp_path / "model")
    config = tmp_path / "server.yaml"
    config.write_text("cuda-graph-max-bs: 64\n")
    parse = ("import sys; from sglang.srt.server_args import prepare_server_args; "
             "print(prepare_server_args(sys.argv[1:]).cuda_graph_max_bs)")
    venv = venvs[version]
    for argv, value in ((["--cuda-graph-max-bs", "128"], "128"), (["--config", str(config)], "64")):
        got = run([venv / "bin" / "python", "-c", parse, "--model-path", model] + argv, cwd=tmp_path)
        if accepted:
            assert (got.returncode, got.stdout.strip()) == (0, value), got.stderr
        else:
            assert got.returncode == 2
            assert got.stderr.splitlines()[-1] == "-c: error: unrecognized arguments: --cuda-graph-max-bs %s" % value
    if not accepted:  # the launcher too: argparse's usage and error, exit 2, nothing started
        launched = run([venv / "bin" / "python", "-m", "sglang.launch_server", "--model-path", model,
                        "--cuda-graph-max-bs", "128"], cwd=tmp_path, timeout=30)
        assert launched.returncode == 2
        assert launched.stderr.splitlines()[-1] == "launch_server.py: error: unrecognized arguments: --cuda-graph-max-bs 128"


SPEC_ARGS = ("import sys; from sglang.srt.server_args import prepare_server_args; "
             "print(prepare_server_args(sys.argv[1:]).disable_overlap_schedule)")


@pytest.mark.parametrize("version, env, topk, disabled, message", [
    ("0.5.9", {}, "1", "True", "Overlap scheduler is disabled when spec v2 is off"),
    ("0.5.9", {"SGLANG_ENABLE_SPEC_V2": "1"}, "1", "False", "Spec v2 is enabled for eagle/eagle3 speculative decoding"),
    ("0.5.9", {"SGLANG_ENABLE_SPEC_V2": "True"}, "1", "False", "overlap schedule is turned on"),
    ("0.5.9", {"SGLANG_ENABLE_SPEC_V2": "no"}, "1", "True", "You can set env SGLANG_ENABLE_SPEC_V2=True"),
    ("0.5.9", {"SGLANG_ENABLE_SPEC_V2": "on"}, "1", "True", 'Invalid value for SGLANG_ENABLE_SPEC_V2: "on" is not a valid boolean'),
    ("0.5.9", {"SGLANG_ENABLE_SPEC_V2": "1"}, "2", None, "ValueError: Spec v2 currently only supports topk = 1"),
    ("0.5.10", {}, "1", "False", None),
    ("0.5.10", {"SGLANG_ENABLE_SPEC_V2": "0"}, "2", "False", None),
])
def test_spec_v2_switch_is_read_by_0_5_9_only(venvs, tmp_path, version, env, topk, disabled, message):
    """Issue 15 (reference environment): 0.5.9 reads SGLANG_ENABLE_SPEC_V2 as its
    _handle_speculative_decoding does (overlap scheduling of EAGLE3 only with it on); 0.5.10 ignores it."""
    model = make_model(tmp_path / "model")
    got = run([venvs[version] / "bin" / "python", "-c", SPEC_ARGS, "--model-path", model, "--speculative-algorithm", "EAGLE3",
               "--speculative-eagle-topk", topk], env=env, cwd=tmp_path)
    if disabled is None:
        assert got.returncode == 1 and got.stderr.splitlines()[-1].startswith(message), got.stderr
        return
    assert (got.returncode, got.stdout.strip()) == (0, disabled), got.stderr
    if message:
        assert message in got.stderr
    else:
        assert "SPEC_V2" not in got.stderr and "pec v2" not in got.stderr


def test_only_the_post1_build_never_gets_healthy(venvs, tmp_path, subreaper):  # noqa: F811  pylint: disable=redefined-outer-name
    """Issue 15 (rollback acceptance): 0.5.10.post1 starts, loads and opens its port, but /health stays 503
    with no SGLANG_DOUBLE_FAIL set; 0.5.10 from the same wheelhouse gets healthy."""
    started = []
    try:
        for version in ("0.5.10", "0.5.10.post1"):
            root = tmp_path / version
            root.mkdir()
            started.append(Server(root, launcher=[str(venvs[version] / "bin" / "python"), "-m", "sglang.launch_server"],
                                  env={"PYTHONPATH": None, "SGLANG_DOUBLE_FAIL": None}))
        healthy, broken = started
        healthy.wait_ready()
        wait_for(broken.port_open, 10, what="port open")
        assert broken.get("/v1/models")[0] == 200
        time.sleep(1.0)  # well past load + warm-up (0.5 s + 0.25 s)
        assert broken.get("/health")[0] == 503 and broken.proc.poll() is None
        assert broken.state("main")["fail_modes"] == ["never_healthy"]
        assert "fired up" not in broken.log() and "fired up" in healthy.log()
        assert healthy.state("main")["fail_modes"] == []
    finally:
        for server in started:
            server.kill_all()


CONFIG_MODULES = ("sglang.srt.server_args_config_parser", "sglang.srt.utils.server_args_config_parser")


@pytest.mark.parametrize("version, present", [
    ("0.5.9", "sglang.srt.server_args_config_parser"),       # 0.5.9: sglang/srt/server_args_config_parser.py
    ("0.5.10", "sglang.srt.server_args_config_parser"),
    ("0.5.23", "sglang.srt.utils.server_args_config_parser"),  # 0.5.19 on: sglang/srt/utils/...
])
def test_config_parser_module_path_per_version(venvs, tmp_path, version, present):
    """C35: the --config parser is importable at the path the version has, and only there; --config works end to
    end through prepare_server_args and through ConfigArgumentMerger (what the collection's pre-flight calls)."""
    venv = venvs[version]
    for module in CONFIG_MODULES:
        found = in_venv(venv, "import importlib.util as u; print(u.find_spec(%r) is not None)" % module, cwd=tmp_path)
        assert found.stdout.strip() == str(module == present), (version, module, found.stderr)
    model = make_model(tmp_path / "m")
    config = tmp_path / "server.yaml"
    config.write_text("tp-size: 2\nport: 31000\n")
    code = ("import argparse; from sglang.srt.server_args import prepare_server_args, ServerArgs; "
            "from %s import ConfigArgumentMerger; "
            "a = prepare_server_args(['--model-path', %r, '--config', %r]); "
            "p = argparse.ArgumentParser(); ServerArgs.add_cli_args(p); "
            "m = ConfigArgumentMerger(p).merge_config_with_args(['--model-path', 'x', '--config', %r]); "
            "print(a.tp_size, a.port, ' '.join(m))" % (present, str(model), str(config), str(config)))
    got = in_venv(venv, code, cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    assert got.stdout.split("\n")[-2] == "2 31000 --tp-size 2 --port 31000 --model-path x"


def test_0_5_23_answers_v1_loads_and_no_longer_get_load(venvs, tmp_path, subreaper):  # noqa: F811  pylint: disable=redefined-outer-name
    """0.5.23 (sglang/srt/entrypoints/v1_loads.py, no /get_load route in http_server.py): /v1/loads per dp rank
    with num_running_reqs/num_waiting_reqs; /get_load is 404. 0.5.9 answers both."""
    started = []
    try:
        for version in ("0.5.9", "0.5.23"):
            root = tmp_path / version
            root.mkdir()
            started.append(Server(root, args=("--dp-size", "2"),
                                  launcher=[str(venvs[version] / "bin" / "python"), "-m", "sglang.launch_server"],
                                  env={"PYTHONPATH": None, "SGLANG_DOUBLE_FAIL": None}))
        old, new = started
        for server in started:
            server.wait_ready()
        status, body = new.get("/v1/loads")
        assert status == 200
        answer = json.loads(body)
        assert answer["version"] == "0.5.23"
        assert [(x["dp_rank"], x["num_running_reqs"], x["num_waiting_reqs"]) for x in answer["loads"]] == [(0, 0, 0), (1, 0, 0)]
        assert [x["dp_rank"] for x in json.loads(new.get("/v1/loads?dp_rank=1")[1])["loads"]] == [1]
        assert new.get("/get_load")[0] == 404
        assert old.get("/get_load")[0] == 200 and old.get("/v1/loads")[0] == 200
    finally:
        for server in started:
            server.kill_all()
