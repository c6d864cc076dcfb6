"""Tests of the SGLang test double and the GPU-host stand-ins (tests/double).

Every server runs as a real process tree in its own session; the fixtures kill
each tree's process group at the end, whatever the test did.
"""

import argparse
import ctypes
import fcntl
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import ssl
import sys
import threading
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
NVIDIA_SMI = HERE / "bin" / "nvidia-smi"
PY = sys.executable


def _import_from_double(module, *names):
    """Import ``names`` from the double's ``module`` without leaving its ``sglang`` in sys.modules/sys.path."""
    saved = {k: v for k, v in sys.modules.items() if k == "sglang" or k.startswith("sglang.")}
    for key in saved:
        del sys.modules[key]
    sys.path.insert(0, str(HERE))
    try:
        loaded = __import__(module, fromlist=list(names))
        return tuple(getattr(loaded, name) for name in names)
    finally:
        sys.path.remove(str(HERE))
        for key in [k for k in sys.modules if k == "sglang" or k.startswith("sglang.")]:
            del sys.modules[key]
        sys.modules.update(saved)


ServerArgs, prepare_server_args = _import_from_double("sglang.srt.server_args", "ServerArgs", "prepare_server_args")
config_parser = _import_from_double("sglang.srt", "server_args_config_parser")[0]


double_proxy_for = _import_from_double("sglang.srt.entrypoints.http_server", "proxy_for")[0]

REFERENCE_ARGV = (
    "--model-path /shared/kimi-k2.5-int4 --tp 8 --trust-remote-code --cuda-graph-max-bs 128 "
    "--disable-custom-all-reduce --attention-backend flashinfer --enable-flashinfer-allreduce-fusion "
    "--speculative-algorithm EAGLE3 --speculative-draft-model-path /data/eagle3/output_100k_sglang/4 "
    "--speculative-num-steps 2 --speculative-eagle-topk 1 --mem-fraction-static 0.88"
).split()


# --------------------------------------------------------------------------- helpers
def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stat_fields(pid):
    try:
        raw = Path("/proc/%d/stat" % pid).read_bytes()
    except OSError:
        return None
    return raw[raw.rfind(b")") + 2:].decode().split()


def alive(pid):
    fields = stat_fields(pid)
    return bool(fields) and fields[0] not in ("Z", "X")


def ppid_of(pid):
    return int(stat_fields(pid)[1])


def group_members(pgid):
    """Living processes of a process group (zombies do not count)."""
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = stat_fields(int(entry))
            if fields and int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
                members.append(int(entry))
    return members


def cmdline(pid):
    raw = Path("/proc/%d/cmdline" % pid).read_bytes()
    return raw[:-1].split(b"\0") if raw.endswith(b"\0") else raw.split(b"\0")


def wait_for(predicate, timeout, interval=0.03, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("timed out after %.1f s waiting for %s" % (timeout, what))


def locked_by_someone(path):
    fd = os.open(str(path), os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def smi(*args, config=None, check=True):
    env = dict(os.environ)
    if config is not None:
        env["INFEROPS_NVIDIA_SMI_CONFIG"] = str(config)
    proc = subprocess.run([PY, str(NVIDIA_SMI), *args], capture_output=True, text=True, env=env, check=False)
    if check:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def parse_csv(text):
    return [[cell.strip() for cell in line.split(", ")] for line in text.splitlines() if line.strip()]


class Server:
    """One launcher process tree of the double."""

    def __init__(self, root, args=(), env=None, port=None, model=None, gpu_dir=None, launcher=None):
        self.root = Path(root)
        self.port = port or free_port()
        self.model = model or make_model(self.root / "model")
        self.state_dir = self.root / "state"
        self.gpu_dir = Path(gpu_dir) if gpu_dir else self.root / "gpu"
        self.gpu_dir.mkdir(parents=True, exist_ok=True)
        # the double's warm-up request honours proxy variables as SGLang's does: none from the
        # environment of whoever runs the tests, only what a test sets
        self.env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
        self.env.update({
            "PYTHONPATH": os.pathsep.join([str(HERE)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])),
            "SGLANG_DOUBLE_STATE_DIR": str(self.state_dir),
            "SGLANG_DOUBLE_GPU_DIR": str(self.gpu_dir),
            "SGLANG_DOUBLE_REQUIRE_TOOLS": "0",
            "SGLANG_DOUBLE_LOAD_SECONDS": "0.5",
            "SGLANG_DOUBLE_WARMUP_SECONDS": "0.25",
            "SGLANG_DOUBLE_HEALTH_DELAY": "0.01",
            "SGLANG_DOUBLE_GENERATE_SECONDS": "0.05",
        })
        for key, value in (env or {}).items():
            if value is None:
                self.env.pop(key, None)
            else:
                self.env[key] = value
        launcher = launcher or [PY, "-m", "sglang.launch_server"]
        self.argv = [*launcher, "--model-path", str(self.model), "--port", str(self.port), *args]
        self.log_path = self.root / ("server-%d.log" % self.port)
        self.log_file = open(self.log_path, "wb")
        self.started = time.monotonic()
        self.proc = subprocess.Popen(self.argv, env=self.env, cwd=str(self.root), stdout=self.log_file,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        self.pid = self.proc.pid

    # ---- HTTP
    def request(self, method, path, body=None, headers=None, timeout=10):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            data = json.dumps(body).encode() if body is not None else None
            hdrs = {"Content-Type": "application/json"} if data else {}
            hdrs.update(headers or {})
            conn.request(method, path, body=data, headers=hdrs)
            resp = conn.getresponse()
            return resp.status, resp.read()
        except (ConnectionRefusedError, ConnectionResetError):
            return None, b""
        finally:
            conn.close()

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def port_open(self):
        with socket.socket() as s:
            s.settimeout(0.2)
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def wait_ready(self, timeout=15):
        wait_for(lambda: self.get("/health")[0] == 200 or self.proc.poll() is not None, timeout, what="ready")
        assert self.proc.poll() is None, self.log()

    # ---- introspection
    def log(self):
        self.log_file.flush()
        return self.log_path.read_text(errors="replace")

    def state(self, role):
        return json.loads((self.state_dir / str(self.port) / ("%s.json" % role)).read_text())

    def roles(self):
        return sorted(p.stem for p in (self.state_dir / str(self.port)).glob("*.json"))

    def members(self):
        return group_members(self.pid)

    def by_title(self):
        titles = {}
        for pid in self.members():
            try:
                titles[b" ".join(cmdline(pid)).decode()] = pid
            except OSError:
                pass
        return titles

    def wait_exit(self, timeout):
        return self.proc.wait(timeout=timeout)

    def kill_all(self):
        before = all_group_pids(self.pid)
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        _reap([p for p in set(before + all_group_pids(self.pid)) if p != self.pid])
        self.log_file.close()


def _reap(pids, timeout=2.0):
    """Collect zombies of processes re-parented to this (subreaper) process."""
    deadline = time.monotonic() + timeout
    for pid in pids:
        while True:
            try:
                done, dummy = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                break  # not ours (re-parented elsewhere) or already reaped
            if done == pid or time.monotonic() >= deadline:
                break
            time.sleep(0.01)


def all_group_pids(pgid):
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = stat_fields(int(entry))
            if fields and int(fields[2]) == pgid:
                pids.append(int(entry))
    return pids


@pytest.fixture(scope="module", autouse=True)
def subreaper():
    """Orphans of the trees under test re-parent to pytest, which reaps them.

    Without this they would go to PID 1, which does not reap in every sandbox.
    """
    PR_SET_CHILD_SUBREAPER = 36
    libc = ctypes.CDLL(None, use_errno=True)
    enabled = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    yield enabled
    if enabled:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


def make_model(path, config=True):
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    if config:
        (path / "config.json").write_text(json.dumps({
            "model_type": "kimi_k2", "architectures": ["DeepseekV3ForCausalLM"],
            "max_position_embeddings": 262144,
        }))
    return path


@pytest.fixture
def servers(tmp_path):
    started = []

    def start(*args, env=None, subdir=None, **kw):
        root = tmp_path / (subdir or "s%d" % len(started))
        root.mkdir(parents=True, exist_ok=True)
        server = Server(root, args=args, env=env, **kw)
        started.append(server)
        return server

    yield start
    for server in started:
        server.kill_all()


# --------------------------------------------------------------------------- argument parsing
def test_parser_accepts_reference_command_line():
    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    args = ServerArgs.from_cli_args(parser.parse_args(REFERENCE_ARGV))
    assert args.tp_size == 8  # "--tp" resolves to --tp-size by prefix, as in SGLang
    assert args.cuda_graph_max_bs == 128
    assert args.disable_custom_all_reduce and args.enable_flashinfer_allreduce_fusion
    assert args.speculative_algorithm == "EAGLE3" and args.speculative_eagle_topk == 1
    assert args.mem_fraction_static == 0.88
    assert (args.host, args.port, args.dp_size, args.pp_size) == ("127.0.0.1", 30000, 1, 1)
    assert args.served_model_name == "/shared/kimi-k2.5-int4"
    cuda_bs = prepare_server_args(["--model-path", "m", "--cuda-graph-bs", "1", "2", "4", "--dp", "2"])
    assert cuda_bs.cuda_graph_bs == [1, 2, 4] and cuda_bs.dp_size == 2


@pytest.mark.parametrize("argv, message", [
    (["--model-path", "m", "--no-such-flag"], "unrecognized arguments: --no-such-flag"),
    (["--model-path", "m", "--pp", "2"], "ambiguous option: --pp"),  # as in SGLang 0.5.9
    (["--model-path", "m", "--attention-backend", "nope"], "invalid choice: 'nope'"),
    (["--tp", "2"], "the following arguments are required: --model-path/--model"),
])
def test_parser_rejects_like_argparse(argv, message, capsys):
    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    with pytest.raises(SystemExit) as exc:
        parser.parse_args(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_cli_errors_exit_like_sglang(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(HERE))

    def run(*argv):
        return subprocess.run([PY, *argv], capture_output=True, text=True, env=env, cwd=str(tmp_path), check=False)

    bad_flag = run("-m", "sglang.launch_server", "--model-path", str(tmp_path), "--bogus")
    assert bad_flag.returncode == 2 and "launch_server.py: error: unrecognized arguments: --bogus" in bad_flag.stderr
    serve_bad = run("-c", "import sys; from sglang.cli import main; sys.exit(main())", "serve", "--model-path", "m", "--bogus")
    assert serve_bad.returncode == 2 and "unrecognized arguments" in serve_bad.stderr
    no_config = run("-m", "sglang.launch_server", "--model-path", str(tmp_path))
    assert no_config.returncode == 1
    assert "does not appear to have a file named config.json" in no_config.stderr
    missing = run("-m", "sglang.launch_server", "--model-path", str(tmp_path / "absent"))
    assert missing.returncode == 1 and "Incorrect path_or_model_id" in missing.stderr
    make_model(tmp_path / "m")
    draft = run("-m", "sglang.launch_server", "--model-path", str(tmp_path / "m"),
                "--speculative-draft-model-path", str(tmp_path / "nodraft"))
    assert draft.returncode == 1 and "nodraft" in draft.stderr
    version = run("-c", "import sys; from sglang.cli import main; sys.exit(main())", "version")
    assert version.returncode == 0 and "sglang version: 0.5.9" in version.stdout


# --------------------------------------------------------------------------- --config FILE
def write(path, text):
    path = Path(path)
    path.write_text(text)
    return str(path)


def test_config_file_is_merged_under_the_command_line(tmp_path):
    cfg = write(tmp_path / "server.yaml", """\
---
# server arguments, dash spelling as on the command line
model-path: /models/from-file     # comment after a value
tp: 2                             # prefix of --tensor-parallel-size, as on the command line
mem-fraction-static: 0.8
trust-remote-code: true           # store_true + true  -> the bare flag
enable-metrics: false             # store_true + false -> left out
served-model-name: "kimi #2"      # '#' inside quotes is not a comment
api-key: 'it''s-a-key'
cuda-graph-bs:
  - 1
  - 2
numa-node: [0, 1]
json-model-override-args: '{"a": 1}'
chat-template: null               # null -> "None", as SGLang's str(value)
lora-backend: triton
""")
    args = prepare_server_args(["--config", cfg, "--tp-size", "4", "--lora-backend", "csgmv"])
    assert args.model_path == "/models/from-file"
    assert args.tp_size == 4 and args.lora_backend == "csgmv"  # the command line wins
    assert args.mem_fraction_static == 0.8 and args.trust_remote_code is True
    assert args.enable_metrics is False
    assert args.served_model_name == "kimi #2" and args.api_key == "it's-a-key"
    assert args.cuda_graph_bs == [1, 2] and args.numa_node == [0, 1]
    assert args.json_model_override_args == '{"a": 1}' and args.chat_template == "None"
    assert "config" not in args.asdict()  # 0.5.9's ServerArgs has no config field
    # what SGLang's merger builds: file arguments first, then argv without "--config FILE"
    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    merged = config_parser.merge_config_with_args(["--port", "1", "--config", cfg, "--tp-size", "4"], parser)
    assert merged[:4] == ["--model-path", "/models/from-file", "--tp", "2"]
    assert merged[-4:] == ["--port", "1", "--tp-size", "4"] and "--enable-metrics" not in merged
    assert merged[merged.index("--trust-remote-code") + 1].startswith("--")  # bare flag
    # a command line without the exact token "--config" is not merged (SGLang checks `"--config" in argv`)
    assert prepare_server_args(["--model-path", "m", "--config=" + cfg]).model_path == "m"
    # an empty file (or only comments) adds nothing
    assert prepare_server_args(["--config", write(tmp_path / "empty.yml", "# nothing\n"),
                                "--model-path", "m"]).tp_size == 1


@pytest.mark.parametrize("text, message", [
    ("model_path: /m\n", "the following arguments are required: --model-path/--model"),  # --model_path is no option
    ("model-path: /m\nskip-server-warmup: 1\n", "unrecognized arguments: 1"),
    ("model-path: /m\nserved-model-name: false\ntp: two\n", "argument --tensor-parallel-size/--tp-size: invalid int value: 'two'"),
])
def test_config_values_go_through_argparse(tmp_path, capsys, text, message):
    with pytest.raises(SystemExit) as exc:
        prepare_server_args(["--config", write(tmp_path / "c.yaml", text)])
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_config_underscore_spelling_of_a_flag_is_rejected_as_in_sglang(tmp_path, capsys):
    # SGLang's merger normalizes dashes only to look up store_true flags; the option it
    # writes keeps the key as spelled, and argparse has no --trust_remote_code.
    with pytest.raises(SystemExit):
        prepare_server_args(["--config", write(tmp_path / "c.yaml", "model-path: /m\ntrust_remote_code: true\n")])
    assert "unrecognized arguments: --trust_remote_code" in capsys.readouterr().err
    falsy = prepare_server_args(["--config", write(tmp_path / "d.yaml", "model-path: /m\nserved-model-name: false\n")])
    assert falsy.served_model_name == "false"  # a bool for a non-flag option: "--key false"


@pytest.mark.parametrize("argv, name, text, error", [
    (["--config", "{a}", "--config", "{a}"], "a.yaml", "tp: 1\n", "Multiple config files specified! Only one allowed."),
    (["--model-path", "m", "--config"], None, None, "No config file specified after --config flag!"),
    (["--config", "{a}"], "a.json", "{}", "Config file must be YAML format, got: .json"),
    (["--config", "{a}"], "a.YML", "- a\n- b\n", "Config file must contain a dictionary at root level"),
    (["--config", "{a}"], "a.yaml", "just a string\n", "Config file must contain a dictionary at root level"),
    (["--config", "{missing}"], None, None, "Config file not found: {missing}"),
    (["--config", "{a}"], "a.yaml", "lora-paths: [x=/a]\n", "Unsupported config option 'lora_paths' with action 'LoRAPathAction'"),
])
def test_config_errors_are_sglangs_value_errors(tmp_path, argv, name, text, error):
    a = write(tmp_path / name, text) if name else None
    fill = {"a": a, "missing": str(tmp_path / "missing.yaml")}
    with pytest.raises(ValueError) as exc:
        prepare_server_args([arg.format(**fill) for arg in argv])
    assert str(exc.value) == error.format(**fill)


@pytest.mark.parametrize("text, fragment", [
    ("a:\n  b: 1\n", "nested mappings are not read"),
    ("a: {b: 1}\n", "flow mappings ({...}) are not read"),
    ("a: [1, [2]]\n", "nested lists are not read"),
    ("a: [1, 2\n", "must close on the same line"),
    ("a: &x 1\nb: *x\n", "anchors, aliases and tags are not read"),
    ("a: |\n  text\n", "block scalars (| and >) are not read"),
    ("a: 017\n", "leading zero"),
    ("a: 1_000\n", "underscores"),
    ("a: 0x1f\n", "hex/binary/octal"),
    ("a: 2026-01-02\n", "date/timestamp"),
    ("a: one\n  two\n", "multi-line values are not read"),
    ("a: 'open\n", "unterminated single-quoted string"),
    ("\ta: 1\n", "a tab in the indentation"),
    ("1: x\n", "is not a string in YAML"),
    ("a: 1\n---\nb: 2\n", "only one YAML document"),
    ("a: b: c\n", "nested mappings are not read"),
])
def test_config_outside_the_yaml_subset_is_a_clear_error_exit_2(tmp_path, capsys, text, fragment):
    path = write(tmp_path / "c.yaml", text)
    with pytest.raises(SystemExit) as exc:
        prepare_server_args(["--model-path", "m", "--config", path])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "--config %s: line " % path in err and fragment in err, err


def test_yaml_subset_reads_like_pyyaml_safe_load():
    yaml = pytest.importorskip("yaml")
    docs = [
        "---\na: 1\nb: -2\nc: 0.5\nd: .5\ne: 1.\nf: +3\ng: 1.0e+3\nh: 1e3\ni: -.inf\n",
        "t: [true, True, yes, On, false, no, OFF, null, ~, Null]\nu:\nv: ''\n",
        "s: 'it''s'\nd: \"tab\\there \\u00e9 \\x41 \\\"q\\\"\"\nurl: http://h:80/p#frag # comment\nx: a#b\n",
        "l:\n- 1\n- two\n- 'three'\nm:\n    - x   # c\n    - \"y\"\nn: [a, 'b, c', \"d\",]\no: []\n",
        "\ufeff# only a comment\n", "", "- a\n- b\n", "scalar\n", "[1, 2]\n",
        "'quoted key': v\n\"k2\": [ 1 , 2 ]\n--flag: --value\ndup: 1\ndup: 2\n",
    ]
    for doc in docs:
        ours = config_parser.load_yaml_subset(doc)
        assert repr(ours) == repr(yaml.safe_load(doc)), doc


def test_config_exit_codes_from_the_launchers(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(HERE))
    model = make_model(tmp_path / "m")

    def run(*argv):
        return subprocess.run([PY, *argv], capture_output=True, text=True, env=env, cwd=str(tmp_path), check=False)

    missing = run("-m", "sglang.launch_server", "--config", str(tmp_path / "nope.yaml"))
    assert missing.returncode == 1
    assert "ValueError: Config file not found: %s" % (tmp_path / "nope.yaml") in missing.stderr
    two = run("-m", "sglang.launch_server", "--config", "a.yaml", "--config", "b.yaml")
    assert two.returncode == 1 and "ValueError: Multiple config files specified! Only one allowed." in two.stderr
    subset = run("-m", "sglang.launch_server", "--config", write(tmp_path / "s.yaml", "a: {b: 1}\n"))
    assert subset.returncode == 2 and "launch_server.py: error: --config" in subset.stderr
    assert "Traceback" not in subset.stderr
    # sglang serve (0.5.9 cli/serve.py) wants "--model-path" itself on the command line
    in_file = write(tmp_path / "f.yaml", "model-path: %s\n" % model)
    serve = run("-c", "import sys; from sglang.cli import main; sys.exit(main())", "serve", "--config", in_file)
    assert serve.returncode == 1 and "Error: --model-path is required." in serve.stderr
    alias = run("-c", "import sys; from sglang.cli import main; sys.exit(main())", "serve", "--model", str(model))
    assert alias.returncode == 1 and "Error: --model-path is required." in alias.stderr


# --------------------------------------------------------------------------- tp=2 server, observed from its start
@pytest.fixture(scope="module")
def tp2(tmp_path_factory):
    root = tmp_path_factory.mktemp("tp2")
    site = root / "site"
    site.mkdir()
    # a sitecustomize like the reference host's: sets NCCL variables at interpreter start
    (site / "sitecustomize.py").write_text("import os\nos.environ.setdefault('NCCL_PROTO', 'LL')\n")
    server = Server(root, args=["--tp", "2", "--enable-metrics"], env={
        "SGLANG_DOUBLE_LOAD_SECONDS": "1.0",
        "SGLANG_DOUBLE_WARMUP_SECONDS": "0.5",
        "INFEROPS_ONLY_IN_LAUNCHER_ENV": "from-the-unit",
        "PYTHONPATH": "%s%s%s" % (HERE, os.pathsep, site),
    })
    phases = []  # (seconds since start, port open, /health status, /v1/models status)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and server.proc.poll() is None:
        t = time.monotonic() - server.started
        if not server.port_open():
            phases.append((t, False, None, None))
        else:
            phases.append((t, True, server.get("/health")[0], server.get("/v1/models")[0]))
            if phases[-1][2] == 200:
                break
        time.sleep(0.03)
    server.phases = phases
    yield server
    server.kill_all()


def test_port_closed_during_load_then_503_then_200(tp2):
    phases = tp2.phases  # (seconds since Popen, port open, /health, /v1/models)
    assert phases and phases[-1][2] == 200, (phases, tp2.log())
    closed = [p for p in phases if not p[1]]
    assert closed and closed[-1][0] >= 0.8, phases  # the load (1.0 s) kept the port closed
    warming = [p for p in phases if p[1] and p[2] == 503]
    assert warming, ("no /health 503 observed between port open and ready", phases)
    # C03: /v1/models answers 200 while /health still says 503
    assert all(p[3] == 200 for p in warming), phases
    assert phases[-1][0] - closed[-1][0] >= 0.4, phases  # warm-up of 0.5 s after the port opened
    assert "The server is fired up and ready to roll!" in tp2.log()


def test_process_titles_and_tree_shape(tp2):
    titles = tp2.by_title()
    assert "sglang::scheduler_TP0" in titles and "sglang::scheduler_TP1" in titles
    assert "sglang::detokenizer" in titles
    assert len([t for t in titles if t.startswith("sglang::scheduler")]) == 2
    main_cmd = cmdline(tp2.pid)
    assert main_cmd[1:3] == [b"-m", b"sglang.launch_server"] and b"--tp" in main_cmd
    for title in ("sglang::scheduler_TP0", "sglang::scheduler_TP1", "sglang::detokenizer"):
        pid = titles[title]
        assert cmdline(pid) == [title.encode()]  # exactly the title, read from another process
        assert Path("/proc/%d/comm" % pid).read_text().strip() == title[:15]
        assert ppid_of(pid) == tp2.pid


def test_state_files_and_environment_reach_schedulers(tp2):
    assert {"main", "scheduler_TP0", "scheduler_TP1", "detokenizer"} <= set(tp2.roles())
    main = tp2.state("main")
    assert main["pid"] == tp2.pid and main["phase"] == "ready"
    assert main["tool_checks"] == {"skipped": True, "reason": "SGLANG_DOUBLE_REQUIRE_TOOLS=0"}
    for role in ("scheduler_TP0", "scheduler_TP1"):
        st = tp2.state(role)
        assert st["ppid"] == tp2.pid and st["title"] == "sglang::" + role
        assert st["argv"][-1] == "--multiprocessing-fork"  # a fresh interpreter ("spawn")
        assert st["pdeathsig"] is True and st["gpu_id"] == int(role[-1])
        # C08: a variable set only in the launcher's environment, and one set by
        # sitecustomize.py, both reach the spawned scheduler ...
        assert st["environ"]["INFEROPS_ONLY_IN_LAUNCHER_ENV"] == "from-the-unit"
        assert st["environ"]["NCCL_PROTO"] == "LL"
        # ... and show in its /proc/<pid>/environ, not in the launcher's (set after exec)
        environ = Path("/proc/%d/environ" % st["pid"]).read_bytes().split(b"\0")
        assert b"NCCL_PROTO=LL" in environ
    assert b"NCCL_PROTO=LL" not in Path("/proc/%d/environ" % tp2.pid).read_bytes().split(b"\0")


def test_http_api(tp2):
    status, body = tp2.get("/v1/models")
    models = json.loads(body)
    assert status == 200 and models["object"] == "list"
    assert models["data"][0]["id"] == str(tp2.model) and models["data"][0]["max_model_len"] == 262144
    status, body = tp2.request("POST", "/v1/chat/completions", body={
        "model": "default", "messages": [{"role": "user", "content": "Say hello"}], "max_tokens": 64})
    chat = json.loads(body)
    assert status == 200 and chat["object"] == "chat.completion"
    assert chat["choices"][0]["message"]["content"] == "Hello from the SGLang test double."
    assert chat["choices"][0]["finish_reason"] == "stop"
    assert chat["usage"]["completion_tokens"] == 8 and chat["usage"]["prompt_tokens"] > 0
    status, body = tp2.request("POST", "/v1/chat/completions", body={
        "messages": [{"role": "user", "content": "x"}], "max_tokens": 2})
    assert json.loads(body)["choices"][0]["finish_reason"] == "length"
    status, body = tp2.request("POST", "/generate", body={"text": "Hi", "sampling_params": {"max_new_tokens": 8}})
    gen = json.loads(body)
    assert status == 200 and gen["text"] == "Hello from the SGLang test double."
    assert gen["meta_info"]["completion_tokens"] == 8
    info = json.loads(tp2.get("/get_server_info")[1])
    assert info["version"] == "0.5.9" and info["tp_size"] == 2 and info["port"] == tp2.port
    model_info = json.loads(tp2.get("/get_model_info")[1])
    assert model_info["architectures"] == ["DeepseekV3ForCausalLM"]
    assert tp2.get("/nope")[0] == 404
    assert tp2.request("POST", "/health")[0] == 405
    status, body = tp2.get("/metrics")
    metrics = body.decode()
    # SGLang 0.5.23 srt/observability/metrics_collector.py: names, types and labels
    assert status == 200 and "# TYPE sglang:num_running_reqs gauge" in metrics
    assert "# TYPE sglang:time_to_first_token_seconds histogram" in metrics
    assert ('sglang:num_queue_reqs{model_name="%s",engine_type="unified",tp_rank="0",pp_rank="0",moe_ep_rank="0"} 0'
            % info["served_model_name"]) in metrics
    generated = [line for line in metrics.splitlines() if line.startswith("sglang:generation_tokens_total{")]
    assert len(generated) == 1 and 'is_streaming="false"' in generated[0] and float(generated[0].split()[-1]) >= 2
    assert 'sglang:time_to_first_token_seconds_bucket{' in metrics and 'le="+Inf"} ' in metrics
    assert "sglang:gen_throughput{" in metrics and "sglang:prompt_tokens_total{" in metrics
    assert tp2.get("/health_generate")[0] == 200
    assert json.loads(tp2.get("/get_load")[1]) == [{"dp_rank": 0, "num_reqs": 0, "num_waiting_reqs": 0, "num_tokens": 0}]


def test_nvidia_smi_lists_running_schedulers(tp2, tmp_path):
    config = tmp_path / "smi.json"
    config.write_text(json.dumps({"gpu_count": 2, "device_dir": str(tp2.gpu_dir)}))
    apps = parse_csv(smi("--query-compute-apps=pid,process_name,used_gpu_memory,gpu_bus_id",
                         "--format=csv,noheader,nounits", config=config).stdout)
    titles = tp2.by_title()
    assert sorted(int(a[0]) for a in apps) == sorted([titles["sglang::scheduler_TP0"], titles["sglang::scheduler_TP1"]])
    assert {a[1] for a in apps} == {"sglang::scheduler_TP0", "sglang::scheduler_TP1"}
    assert all(int(a[2]) == int(97887 * 0.88) for a in apps)
    used = parse_csv(smi("--query-gpu=index,memory.used,memory.free", "--format=csv,noheader,nounits",
                         config=config).stdout)
    assert used == [["0", "86140", "11747"], ["1", "86140", "11747"]]
    assert "sglang::scheduler_TP0" in smi(config=config).stdout


def test_a_held_nccl_port_fails_the_load_as_torchs_tcpstore_does(servers):
    """Issue 28: rank 0 listens on --nccl-port for the server's life (torch's TCPStore); a second server given the same
    port fails its load with torch's EADDRINUSE error, the first keeps serving."""
    port = free_port()
    first = servers("--nccl-port", str(port))
    first.wait_ready()
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) == 0
    second = servers("--nccl-port", str(port))
    assert second.wait_exit(timeout=15) != 0
    assert ("The server socket has failed to listen on any local network address. port: %d, useIpv6: False, "
            "code: -98, name: EADDRINUSE, message: address already in use" % port) in second.log()
    assert first.get("/health")[0] == 200


def test_second_server_on_same_gpus_fails_with_cuda_oom(tp2, servers):
    second = servers("--tp", "2", gpu_dir=tp2.gpu_dir)
    rc = second.wait_exit(timeout=15)
    assert rc != 0
    log = second.log()
    # whichever rank fails first takes the tree down (as in SGLang)
    oom = re.search(r"torch\.OutOfMemoryError: CUDA out of memory\. Tried to allocate 2\.00 GiB\. "
                    r"GPU (\d) has a total capacity of 95\.59 GiB .*? Process (\d+) has", log)
    assert oom, log
    holder = tp2.by_title()["sglang::scheduler_TP%s" % oom.group(1)]
    assert int(oom.group(2)) == holder
    assert "Rank 0 scheduler is dead" in log or "Received sigquit from a child process" in log
    wait_for(lambda: not second.members(), 5, what="second tree gone")
    assert tp2.get("/health")[0] == 200  # the first server is untouched


# --------------------------------------------------------------------------- lifecycle
def test_sigterm_drains_in_flight_request_then_tree_is_gone(servers):
    server = servers(env={"SGLANG_DOUBLE_GENERATE_SECONDS": "0.8"})
    server.wait_ready()
    titles = server.by_title()
    assert "sglang::scheduler" in titles  # tp=1: SGLang adds no _TP suffix
    result = {}

    def slow_chat():
        result["chat"] = server.request("POST", "/v1/chat/completions",
                                        body={"messages": [{"role": "user", "content": "hi"}]})

    worker = threading.Thread(target=slow_chat)
    worker.start()
    load = wait_for(lambda: [x for x in json.loads(server.get("/get_load")[1]) if x["num_reqs"] == 1], 3,
                    what="request in flight")
    assert load[0]["num_waiting_reqs"] == 0 and load[0]["num_tokens"] > 0
    os.kill(server.pid, signal.SIGTERM)
    # draining: no longer healthy, port still open
    wait_for(lambda: server.get("/health")[0] == 503, 3, what="/health 503 while draining")
    worker.join(timeout=5)
    assert result["chat"][0] == 200 and b"Hello from the SGLang test double." in result["chat"][1]
    assert server.wait_exit(timeout=10) == 0
    wait_for(lambda: not server.members(), 5, what="whole tree gone")
    assert not server.port_open()
    assert "Gracefully exiting... Remaining number of requests 1." in server.log()


def test_exit_style_sglang_ends_with_sigkill(servers):
    server = servers("--tp", "2", env={"SGLANG_DOUBLE_EXIT_STYLE": "sglang"})
    server.wait_ready()
    os.kill(server.pid, signal.SIGTERM)
    assert server.wait_exit(timeout=10) == -signal.SIGKILL  # as 0.5.9's kill_process_tree(include_parent=True)
    wait_for(lambda: not server.members(), 5, what="whole tree gone")


def test_dp2_starts_controller_and_schedulers(servers):
    server = servers("--dp", "2")
    server.wait_ready()
    titles = server.by_title()
    controller = titles["sglang::data_parallel_controller"]
    assert ppid_of(controller) == server.pid
    for dp in (0, 1):
        pid = titles["sglang::scheduler_DP%d" % dp]
        assert ppid_of(pid) == controller
        assert server.state("scheduler_DP%d" % dp)["gpu_id"] == dp
        assert locked_by_someone(server.gpu_dir / ("nvidia%d" % dp))
    assert len([t for t in titles if t.startswith("sglang::scheduler")]) == 2
    assert json.loads(server.get("/get_load")[1])[1]["dp_rank"] == 1
    os.kill(server.pid, signal.SIGTERM)
    assert server.wait_exit(timeout=10) == 0
    wait_for(lambda: not server.members(), 5, what="whole tree gone")


def test_c01_dp_schedulers_survive_launcher_and_controller_kill(servers, tmp_path, subreaper):
    server = servers("--tp", "2", "--dp", "2", "--enable-dp-attention", "--ep", "2")
    server.wait_ready()
    titles = server.by_title()
    controller = titles["sglang::data_parallel_controller"]
    schedulers = {t: p for t, p in titles.items() if t.startswith("sglang::scheduler")}
    assert sorted(schedulers) == ["sglang::scheduler_DP0_TP0_EP0", "sglang::scheduler_DP1_TP1_EP1"]
    os.kill(server.pid, signal.SIGKILL)
    os.kill(controller, signal.SIGKILL)
    server.wait_exit(timeout=5)
    wait_for(lambda: not alive(controller), 5, what="controller gone")
    time.sleep(0.3)
    for title, pid in schedulers.items():
        assert alive(pid), title
        # re-parented to the nearest subreaper (this pytest process) or PID 1
        assert ppid_of(pid) == (os.getpid() if subreaper else 1)
        assert cmdline(pid) == [title.encode()]
    assert locked_by_someone(server.gpu_dir / "nvidia0") and locked_by_someone(server.gpu_dir / "nvidia1")
    config = tmp_path / "smi.json"
    config.write_text(json.dumps({"gpu_count": 2, "device_dir": str(server.gpu_dir)}))
    apps = parse_csv(smi("--query-compute-apps=pid,process_name", "--format=csv,noheader", config=config).stdout)
    assert sorted(int(a[0]) for a in apps) == sorted(schedulers.values())


# --------------------------------------------------------------------------- failure injection
def test_fail_crash_during_load(servers):
    server = servers(env={"SGLANG_DOUBLE_FAIL": "crash_during_load", "SGLANG_DOUBLE_LOAD_SECONDS": "1.0"})
    opened = False
    while server.proc.poll() is None:
        opened = opened or server.port_open()
        time.sleep(0.03)
    assert server.proc.returncode == 1 and not opened
    log = server.log()
    assert "Traceback (most recent call last)" in log and "SimulatedCrash" in log
    assert 0.4 <= time.monotonic() - server.started < 5
    wait_for(lambda: not server.members(), 5, what="whole tree gone")


def test_fail_never_healthy(servers):
    server = servers(env={"SGLANG_DOUBLE_FAIL": "never_healthy"})
    wait_for(server.port_open, 10, what="port open")
    time.sleep(1.0)  # well past load + warm-up
    assert server.get("/health")[0] == 503
    assert server.get("/v1/models")[0] == 200
    assert server.request("POST", "/generate", body={"text": "x"})[0] == 503
    assert "fired up" not in server.log()


def test_fail_health_500(servers):
    server = servers(env={"SGLANG_DOUBLE_FAIL": "health_500"})
    wait_for(lambda: server.get("/health")[0] == 500, 10, what="/health 500")
    assert server.get("/v1/models")[0] == 200


def test_fail_chat_hangs(servers):
    """Issue 27: /health answers 200 (the warm-up passed), yet an OpenAI completion never answers; SIGTERM ends it."""
    server = servers(env={"SGLANG_DOUBLE_FAIL": "chat_hangs"})
    server.wait_ready()
    assert server.get("/health")[0] == 200 and "fired up" in server.log()
    assert server.request("POST", "/generate", body={"text": "x"})[0] == 200
    began = time.monotonic()
    with pytest.raises(OSError):  # socket.timeout
        server.request("POST", "/v1/chat/completions", body={"messages": [{"role": "user", "content": "x"}]}, timeout=1)
    assert 0.9 <= time.monotonic() - began < 3
    assert server.get("/health")[0] == 200


# --------------------------------------------------------------------------- warm-up request (C21)
def dead_proxy_env(**extra):
    """http_proxy/HTTP_PROXY at a closed port, no NO_PROXY: every proxied request fails at once."""
    proxy = "http://127.0.0.1:%d" % free_port()
    env = {"http_proxy": proxy, "HTTP_PROXY": proxy, "SGLANG_DOUBLE_WARMUP_TRIES": "2"}
    env.update(extra)
    return env


def test_warmup_through_a_dead_proxy_ends_the_server_as_sglang(servers):
    clean = servers("--host", "0.0.0.0", env=dead_proxy_env())
    killed = servers("--host", "0.0.0.0", "--tp", "2", env=dead_proxy_env(SGLANG_DOUBLE_EXIT_STYLE="sglang"))
    assert clean.wait_exit(timeout=10) == 1
    assert killed.wait_exit(timeout=10) == -signal.SIGKILL  # 0.5.9: kill_process_tree(os.getpid())
    for server in (clean, killed):
        log = server.log()
        assert "Initialization failed. warmup error: Traceback (most recent call last):" in log, log
        assert "requests.exceptions.ProxyError: HTTPConnectionPool(host='127.0.0.1', port=" in log
        assert "Max retries exceeded with url: http://0.0.0.0:%d/get_model_info" % server.port in log
        assert "Unable to connect to proxy" in log
        assert "fired up" not in log and "/get_model_info HTTP/1.1" not in log  # never reached the server
        wait_for(lambda: not server.members(), 5, what="whole tree gone")
        assert not server.port_open()
        main = server.state("main")
        assert main["phase"] == "failed"
        warmup = main["warmup"]
        assert (warmup["url"], warmup["tries"], warmup["result"]) == ("http://0.0.0.0:%d" % server.port, 2, "failed")
        assert warmup["proxy"] == server.env["http_proxy"] and "ProxyError" in warmup["error"]


def test_warmup_bypasses_the_proxy_with_no_proxy_or_is_skipped(servers):
    no_proxy = "127.0.0.1,localhost,0.0.0.0,::1"
    direct = servers("--host", "0.0.0.0", env=dead_proxy_env(NO_PROXY=no_proxy))
    skipped = servers("--host", "0.0.0.0", "--skip-server-warmup", env=dead_proxy_env())
    direct.wait_ready(timeout=8)
    skipped.wait_ready(timeout=8)
    log = direct.log()
    assert '"GET /get_model_info HTTP/1.1" 200 OK' in log and '"POST /generate HTTP/1.1" 200 OK' in log
    assert log.index('"POST /generate HTTP/1.1" 200') < log.index("The server is fired up and ready to roll!")
    assert direct.state("main")["warmup"]["proxy"] is None
    assert direct.state("main")["warmup"]["result"] == "ok"
    assert "/get_model_info" not in skipped.log() and "fired up" in skipped.log()
    assert skipped.state("main")["warmup"]["result"] == "skipped"


def test_warmup_sends_the_api_key_and_generations_are_served_while_warming(servers):
    keyed = servers("--api-key", "sk-warm")
    slow = servers(env={"SGLANG_DOUBLE_WARMUP_SECONDS": "3"})
    keyed.wait_ready(timeout=8)
    log = keyed.log()
    assert '"GET /get_model_info HTTP/1.1" 200 OK' in log and '"POST /generate HTTP/1.1" 200 OK' in log
    assert " 401 " not in log  # the warm-up sent "Authorization: Bearer sk-warm"
    assert keyed.get("/get_model_info")[0] == 401  # and the key is required there, as in SGLang
    assert keyed.request("POST", "/generate", body={"text": "x"})[0] == 401
    # SGLang serves generations as soon as the port is open (its warm-up is one); only /health waits
    wait_for(lambda: '"POST /generate HTTP/1.1" 200' in slow.log(), 8, what="warm-up generation")
    assert slow.get("/health")[0] == 503 and "fired up" not in slow.log()
    status, body = slow.request("POST", "/generate", body={"text": "x", "sampling_params": {"max_new_tokens": 2}})
    assert status == 200 and json.loads(body)["text"] == "Hello from"
    assert json.loads(slow.get("/get_model_info")[1])["is_generation"] is True
    slow.wait_ready(timeout=8)


def test_warmup_of_an_embedding_server_posts_encode(servers):
    server = servers("--is-embedding")
    server.wait_ready(timeout=8)
    assert '"POST /encode HTTP/1.1" 200 OK' in server.log()
    status, body = server.request("POST", "/encode", body={"text": ["a", "b"]})
    assert status == 200 and [len(e["embedding"]) for e in json.loads(body)] == [8, 8]


PROXY_CASES = [
    {},
    {"http_proxy": "http://127.0.0.1:9"},
    {"HTTP_PROXY": "http://127.0.0.1:9"},
    {"HTTP_PROXY": "http://127.0.0.1:9", "NO_PROXY": "127.0.0.1,localhost,0.0.0.0,::1"},
    {"http_proxy": "http://127.0.0.1:9", "NO_PROXY": "localhost, 127.0.0.1 ,0.0.0.0"},
    {"http_proxy": "http://127.0.0.1:9", "no_proxy": "", "NO_PROXY": "127.0.0.1,0.0.0.0,localhost"},
    {"all_proxy": "http://127.0.0.1:9"},
    {"ALL_PROXY": "http://127.0.0.1:9", "no_proxy": "*"},
    {"https_proxy": "http://127.0.0.1:9"},
    {"http_proxy": "http://127.0.0.1:9", "no_proxy": "127.0.0.0/8"},
    {"http_proxy": "http://127.0.0.1:9", "no_proxy": "0.0.0.0/32"},
    {"http_proxy": "http://127.0.0.1:9", "no_proxy": ".localhost"},
    {"http_proxy": "http://127.0.0.1:9", "no_proxy": "127.0.0.1:30000,0.0.0.0:30000,localhost:30000"},
    {"HTTP_PROXY": "http://127.0.0.1:9", "http_proxy": ""},
    {"http_proxy": "127.0.0.1:9"},
]


@pytest.mark.parametrize("env", PROXY_CASES)
@pytest.mark.parametrize("url", ["http://0.0.0.0:30000", "http://127.0.0.1:30000", "http://localhost:30000",
                                 "http://[::1]:30000", "https://127.0.0.1:30000"])
def test_warmup_proxy_choice_is_requests_choice(env, url, monkeypatch):
    requests = pytest.importorskip("requests")
    for key in [k for k in os.environ if k.lower().endswith("_proxy")]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    full = url + "/get_model_info"
    expected = requests.utils.select_proxy(full, requests.utils.get_environ_proxies(full))
    if expected and "://" not in expected:
        expected = "http://" + expected  # requests.adapters: prepend_scheme_if_needed(proxy, "http")
    assert double_proxy_for(full) == expected


def test_fail_child_ignores_sigterm_needs_sigkill(servers):
    server = servers("--tp", "2", env={"SGLANG_DOUBLE_FAIL": "child_ignores_sigterm",
                                       "SGLANG_DOUBLE_HEALTH_TIMEOUT": "0.3"})
    server.wait_ready()
    titles = server.by_title()
    tp0, tp1 = titles["sglang::scheduler_TP0"], titles["sglang::scheduler_TP1"]
    assert server.state("scheduler_TP0")["ignores_sigterm"] is True
    assert server.state("scheduler_TP0")["pdeathsig"] is False
    os.kill(tp0, signal.SIGTERM)
    os.kill(tp1, signal.SIGTERM)
    wait_for(lambda: not alive(tp1), 2, what="TP1 to exit on SIGTERM")
    time.sleep(0.3)
    assert alive(tp0)
    # a scheduler died silently: /health times out (SGLang: 20 s) and answers 503
    assert server.get("/health")[0] == 503
    assert "Health check failed." in server.log()
    t = time.monotonic()
    os.kill(server.pid, signal.SIGTERM)
    assert server.wait_exit(timeout=10) == 0
    assert time.monotonic() - t >= 1.8  # the 2 s grace before SIGKILL
    assert "ignored SIGTERM and were killed" in server.log()
    wait_for(lambda: not server.members(), 5, what="whole tree gone")


def test_fail_child_ignores_sigterm_survives_launcher_sigkill(servers):
    server = servers("--tp", "2", env={"SGLANG_DOUBLE_FAIL": "child_ignores_sigterm"})
    server.wait_ready()
    titles = server.by_title()
    os.kill(server.pid, signal.SIGKILL)
    server.wait_exit(timeout=5)
    wait_for(lambda: not alive(titles["sglang::scheduler_TP1"]), 3, what="TP1 to die with its parent")
    wait_for(lambda: not alive(titles["sglang::detokenizer"]), 3, what="detokenizer to die with its parent")
    assert alive(titles["sglang::scheduler_TP0"])  # no death signal: a stray holding GPU 0
    assert locked_by_someone(server.gpu_dir / "nvidia0")


# --------------------------------------------------------------------------- tools, auth, multi-node
def _write_exe(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)


def test_tools_checked_at_load(servers, tmp_path):
    bin_dir, cuda = tmp_path / "venv-bin", tmp_path / "cuda-13.0"
    _write_exe(bin_dir / "ninja", "#!/bin/sh\necho 1.11.1\n")
    _write_exe(cuda / "bin" / "nvcc", "#!/bin/sh\necho 'Cuda compilation tools, release 13.0, V13.0.88'\n")
    tools_env = {"SGLANG_DOUBLE_REQUIRE_TOOLS": "1", "PATH": "%s:/usr/bin:/bin" % bin_dir, "CUDA_HOME": str(cuda)}
    good = servers(env=tools_env)
    good.wait_ready()
    checks = good.state("main")["tool_checks"]
    assert checks["ninja"]["path"] == str(bin_dir / "ninja") and checks["ninja"]["output"] == "1.11.1"
    assert checks["nvcc"]["path"] == str(cuda / "bin" / "nvcc") and "release 13.0" in checks["nvcc"]["output"]
    assert good.state("scheduler")["tool_checks"]["ninja"]["returncode"] == 0

    no_ninja = servers(env=dict(tools_env, PATH=str(tmp_path / "empty")))
    assert no_ninja.wait_exit(timeout=10) != 0
    assert "Ninja is required to load C++ extensions" in no_ninja.log()
    no_nvcc = servers(env=dict(tools_env, CUDA_HOME=str(tmp_path / "no-cuda")))
    assert no_nvcc.wait_exit(timeout=10) != 0
    assert "Could not find nvcc at %s" % (tmp_path / "no-cuda" / "bin" / "nvcc") in no_nvcc.log()
    for server in (no_ninja, no_nvcc):
        wait_for(lambda: not server.members(), 5, what="failed tree gone")


SERVER_ARGS_LINE = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] server_args=ServerArgs\(model_path='([^']*)', "
                              r"tokenizer_path='\1', .*\)$", re.M)


def test_logging_config_path_replaces_sglang_format_in_every_process(servers, tmp_path):
    """SGLANG_LOGGING_CONFIG_PATH: configure_logger loads that dictConfig JSON instead of its own format, in the
    launcher and in each scheduler (SGLang 0.5.9/0.5.23 utils/common.py); a missing file stops the server."""
    config = {"version": 1, "disable_existing_loggers": False,
              "formatters": {"f": {"format": "CUSTOM %(process)d %(message)s"}},
              "handlers": {"h": {"class": "logging.StreamHandler", "stream": "ext://sys.stderr", "formatter": "f"}},
              "root": {"level": "INFO", "handlers": ["h"]}}
    path = write(tmp_path / "logging.json", json.dumps(config))
    server = servers("--tp-size", "2", env={"SGLANG_LOGGING_CONFIG_PATH": path})
    server.wait_ready()
    log = server.log()
    assert re.search(r"^CUSTOM %d server_args=ServerArgs\(" % server.pid, log, re.M), log
    assert not re.search(r"^\[\d{4}-", log, re.M), log
    missing = servers(env={"SGLANG_LOGGING_CONFIG_PATH": str(tmp_path / "none.json")})
    assert missing.wait_exit(timeout=10) != 0
    assert "Setting SGLANG_LOGGING_CONFIG_PATH from env with %s but it does not exist!" % (tmp_path / "none.json") \
        in missing.log()


def test_api_keys_as_0_5_9_enforces_them_and_server_args_log_line(servers, tmp_path):
    # keys from a --config file, the port from the command line
    both_cfg = write(tmp_path / "both.yaml", "api-key: sk-user\nadmin-api-key: sk-admin\n")
    both = servers("--config", both_cfg)
    user_only = servers("--api-key", "sk-user")
    admin_only = servers("--admin-api-key", "sk-admin")
    for server in (both, user_only, admin_only):
        server.wait_ready()
    user, admin = {"Authorization": "Bearer sk-user"}, {"Authorization": "Bearer sk-admin"}

    # the launcher logs every server argument at INFO, keys in clear text (0.5.9 engine._launch_subprocesses)
    lines = SERVER_ARGS_LINE.findall(both.log())
    assert lines == [str(both.model)], both.log()
    line = next(l for l in both.log().splitlines() if "server_args=ServerArgs(" in l)
    assert "api_key='sk-user', admin_api_key='sk-admin'" in line and "port=%d," % both.port in line
    assert ", config=" not in line

    # both keys: normal endpoints take only the api key, admin endpoints only the admin key
    status, body = both.get("/v1/models")
    assert (status, body) == (401, b'{"error":"Unauthorized"}')
    assert both.get("/v1/models", headers=user)[0] == 200
    assert both.get("/v1/models", headers={"Authorization": "bearer sk-user"})[0] == 200
    assert both.get("/v1/models", headers=admin)[0] == 401
    assert both.get("/v1/models", headers={"Authorization": "Bearer  sk-user"})[0] == 401
    assert both.get("/v1/models", headers={"Authorization": "sk-user"})[0] == 401
    assert both.get("/flush_cache", headers=user) == (401, b'{"error":"Unauthorized"}')
    assert both.request("POST", "/flush_cache", headers=admin)[0] == 200
    status, body = both.get("/hicache/storage-backend", headers=admin)
    assert status == 200 and json.loads(body)["hicache_storage_prefetch_policy"] == "best_effort"
    # exempt: every path starting with /health or /metrics, and OPTIONS
    assert both.get("/health")[0] == 200 and both.get("/health_generate")[0] == 200
    assert both.get("/healthz")[0] == 404 and both.get("/metrics")[0] == 404  # no --enable-metrics
    status = both.request("OPTIONS", "/v1/models", headers={
        "Origin": "http://ui.example", "Access-Control-Request-Method": "GET"})[0]
    assert status == 200  # CORS preflight
    assert both.request("OPTIONS", "/v1/models")[0] == 405
    # unknown paths and wrong methods are NORMAL: the api key first, then 404/405
    assert both.get("/nope")[0] == 401 and both.get("/nope", headers=user)[0] == 404
    assert both.request("POST", "/v1/models")[0] == 401
    assert both.request("POST", "/v1/models", headers=user)[0] == 405
    assert both.request("PUT", "/flush_cache", headers=user)[0] == 405  # no route match: NORMAL level

    # api key only: it opens everything, admin endpoints included
    assert user_only.get("/v1/models")[0] == 401 and user_only.get("/get_server_info")[0] == 401
    assert user_only.get("/v1/models", headers={"Authorization": "Bearer wrong"})[0] == 401
    assert user_only.request("POST", "/v1/chat/completions", body={"messages": [{"role": "user", "content": "x"}]},
                             headers=user)[0] == 200
    assert user_only.get("/flush_cache")[0] == 401
    assert user_only.get("/flush_cache", headers=user)[0] == 200
    status, body = user_only.get("/hicache/storage-backend", headers=user)
    assert status == 400 and json.loads(body)["error"].startswith("This endpoint requires admin API key")
    assert user_only.get("/health")[0] == 200

    # admin key only: normal endpoints are open, admin endpoints need it
    assert admin_only.get("/v1/models")[0] == 200
    assert admin_only.get("/flush_cache")[0] == 401
    assert admin_only.get("/flush_cache", headers=admin)[0] == 200


def make_cert(directory, name, password=None):
    """A self-signed certificate for 127.0.0.1/localhost, made with the openssl command line."""
    key, cert = Path(directory) / ("%s.key" % name), Path(directory) / ("%s.crt" % name)
    cmd = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-days", "2", "-subj", "/CN=localhost",
           "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", str(key), "-out", str(cert)]
    cmd += ["-passout", "pass:%s" % password] if password else ["-nodes"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return str(key), str(cert)


def https_get(port, path, cafile, timeout=5):
    """(status, body, server certificate DER); status None when the port is closed."""
    ctx = ssl.create_default_context(cafile=cafile)
    conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=timeout, context=ctx)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read(), conn.sock.getpeercert(binary_form=True)
    except (ConnectionRefusedError, ConnectionResetError):
        return None, b"", None
    finally:
        conn.close()


def test_ssl_flags_are_0_5_10s_and_absent_by_default(tmp_path, capsys, monkeypatch):
    key, cert = tmp_path / "k.pem", tmp_path / "c.pem"
    key.write_text("x")
    cert.write_text("x")
    monkeypatch.delenv("SGLANG_DOUBLE_SSL", raising=False)
    with pytest.raises(SystemExit) as exc:  # 0.5.9 has no TLS flags
        prepare_server_args(["--model-path", "m", "--ssl-keyfile", str(key), "--ssl-certfile", str(cert)])
    assert exc.value.code == 2 and "unrecognized arguments: --ssl-keyfile" in capsys.readouterr().err
    assert "ssl_certfile" not in prepare_server_args(["--model-path", "m"]).asdict()
    monkeypatch.setenv("SGLANG_DOUBLE_SSL", "1")
    args = prepare_server_args(["--model-path", "m", "--ssl-keyfile", str(key), "--ssl-certfile", str(cert),
                                "--ssl-keyfile-password", "pw", "--port", "8443"])
    assert (args.ssl_keyfile, args.ssl_certfile, args.ssl_ca_certs) == (str(key), str(cert), None)
    assert args.ssl_keyfile_password == "pw" and args.enable_ssl_refresh is False
    assert args.url() == "https://127.0.0.1:8443"
    for argv, message in [
        (["--ssl-keyfile", str(key)], "--ssl-keyfile requires --ssl-certfile to be specified as well."),
        (["--ssl-certfile", str(cert)], "--ssl-certfile requires --ssl-keyfile to be specified as well."),
        (["--ssl-ca-certs", str(cert)], "--ssl-ca-certs has no effect without --ssl-certfile and --ssl-keyfile."),
        (["--ssl-keyfile-password", "pw"],
         "--ssl-keyfile-password has no effect without --ssl-certfile and --ssl-keyfile."),
        (["--ssl-keyfile", str(tmp_path / "no.key"), "--ssl-certfile", str(cert)],
         "SSL key file not found: '%s'. Please check the --ssl-keyfile path." % (tmp_path / "no.key")),
        (["--enable-ssl-refresh"], "--enable-ssl-refresh requires --ssl-certfile and --ssl-keyfile to be specified."),
    ]:
        with pytest.raises(ValueError) as err:
            prepare_server_args(["--model-path", "m", *argv])
        assert str(err.value) == message


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command line")
def test_tls_serves_https_only_with_the_same_timing(servers, tmp_path):
    key, cert = make_cert(tmp_path, "a")
    enc_key, enc_cert = make_cert(tmp_path, "enc", password="s3cret")
    tls_env = {"SGLANG_DOUBLE_SSL": "1", "SGLANG_DOUBLE_LOAD_SECONDS": "0.8", "SGLANG_DOUBLE_WARMUP_SECONDS": "0.4"}
    server = servers("--ssl-keyfile", key, "--ssl-certfile", cert, "--enable-ssl-refresh", env=tls_env)
    enc = servers("--ssl-keyfile", enc_key, "--ssl-certfile", enc_cert, "--ssl-keyfile-password", "s3cret",
                  "--ssl-ca-certs", enc_cert, env=tls_env)
    wrong = servers("--ssl-keyfile", enc_key, "--ssl-certfile", enc_cert, "--ssl-keyfile-password", "nope",
                    env=tls_env)
    phases = []  # (seconds since start, port open, https /health status)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and server.proc.poll() is None:
        opened = server.port_open()
        phases.append((time.monotonic() - server.started, opened,
                       https_get(server.port, "/health", cert)[0] if opened else None))
        if phases[-1][2] == 200:
            break
        time.sleep(0.03)
    assert phases[-1][2] == 200, (phases, server.log())
    closed = [p for p in phases if not p[1]]
    assert closed and closed[-1][0] >= 0.6, phases  # port closed for the load
    assert any(p[1] and p[2] == 503 for p in phases), phases  # warm-up answered over TLS
    status, body, der = https_get(server.port, "/v1/models", cert)
    assert status == 200 and json.loads(body)["object"] == "list"
    # plain HTTP on the TLS port gets no HTTP answer at all
    try:
        plain = server.get("/health", timeout=3)[0]
    except (http.client.HTTPException, OSError):
        plain = None
    assert plain != 200 and plain is None
    log = server.log()
    assert "SSL enabled: certfile=%s, keyfile=%s" % (cert, key) in log
    assert "Uvicorn running on https://127.0.0.1:%d (Press CTRL+C to quit)" % server.port in log
    assert "SSL is enabled but --ssl-ca-certs was not provided." in log
    assert "ssl_certfile='%s'" % cert in log and "enable_ssl_refresh=True" in log
    # encrypted key with its password (logged in clear in server_args=...)
    wait_for(lambda: https_get(enc.port, "/health", enc_cert)[0] == 200 or enc.proc.poll() is not None, 15,
             what="encrypted-key server ready")
    assert enc.proc.poll() is None, enc.log()
    assert "ssl_keyfile_password='s3cret'" in enc.log()
    assert "--ssl-ca-certs was not provided" not in enc.log()
    # a wrong key password fails after the load, before the port opens: exit 1
    assert wrong.wait_exit(timeout=15) == 1
    assert "SSLError" in wrong.log() and not wrong.port_open()
    # --enable-ssl-refresh: new files are served to new connections
    new_key, new_cert = make_cert(tmp_path, "b")
    shutil.copyfile(new_key, key)
    shutil.copyfile(new_cert, cert)
    wait_for(lambda: "SSL cert/key reloaded successfully." in server.log(), 10, what="certificate reload")
    status, dummy, new_der = https_get(server.port, "/health", new_cert)
    assert status == 200 and new_der != der


def test_two_node_replica_rendezvous_then_rank1_serves_dummy_health(servers):
    addr = "127.0.0.1:%d" % free_port()
    common = ("--tp", "2", "--nnodes", "2", "--dist-init-addr", addr)
    rank1 = servers(*common, "--node-rank", "1", subdir="rank1")
    time.sleep(0.5)   # rank 1 first: it keeps retrying until rank 0 listens
    assert not rank1.port_open()
    rank0 = servers(*common, "--node-rank", "0", subdir="rank0")
    rank0.wait_ready()
    rank1.wait_ready()
    assert rank0.state("main")["rendezvous"]["peers"] == [1]
    assert rank1.state("main")["rendezvous"]["node_rank"] == 1
    titles = rank1.by_title()
    assert "sglang::scheduler_TP1" in titles and "sglang::scheduler_TP0" not in titles
    assert "sglang::detokenizer" not in titles
    assert rank1.state("scheduler_TP1")["gpu_id"] == 0
    assert rank1.get("/v1/models")[0] == 404
    assert rank0.get("/v1/models")[0] == 200
    assert "sglang::scheduler_TP0" in rank0.by_title()


def test_rank0_alone_times_out_like_torch_distributed(servers):
    rank0 = servers("--tp", "2", "--nnodes", "2", "--node-rank", "0",
                    "--dist-init-addr", "127.0.0.1:%d" % free_port(),
                    env={"SGLANG_DOUBLE_RENDEZVOUS_TIMEOUT": "1"})
    assert rank0.wait_exit(10) == 1
    assert not rank0.port_open()
    assert "Timed out after 1 seconds waiting for clients. 1/2 clients joined." in rank0.log()


def test_sigterm_while_waiting_for_ranks_stops_cleanly(servers):
    rank1 = servers("--tp", "2", "--nnodes", "2", "--node-rank", "1",
                    "--dist-init-addr", "127.0.0.1:%d" % free_port())
    time.sleep(0.5)
    rank1.proc.send_signal(signal.SIGTERM)
    assert rank1.wait_exit(10) == 0


# --------------------------------------------------------------------------- nvidia-smi stand-in
def test_nvidia_smi_reference_profile_queries(tmp_path):
    absent = tmp_path / "absent.json"  # no file: the reference host's defaults
    assert smi("-L", config=absent).stdout.count("NVIDIA RTX PRO 6000 Blackwell Server Edition") == 8
    (tmp_path / "dev").mkdir()  # only the device dir set (/dev may be held by another double)
    config = tmp_path / "smi.json"
    config.write_text(json.dumps({"device_dir": str(tmp_path / "dev")}))
    rows = parse_csv(smi("--query-gpu=index,name,uuid,memory.total,memory.used,memory.free,compute_cap,"
                         "driver_version,pci.bus_id", "--format=csv", config=config).stdout)
    assert rows[0] == ["index", "name", "uuid", "memory.total [MiB]", "memory.used [MiB]", "memory.free [MiB]",
                       "compute_cap", "driver_version", "pci.bus_id"]
    assert len(rows) == 9
    for i, row in enumerate(rows[1:]):
        assert row[0] == str(i) and row[1] == "NVIDIA RTX PRO 6000 Blackwell Server Edition"
        assert row[2].startswith("GPU-") and len(row[2]) == 40
        assert row[3:6] == ["97887 MiB", "0 MiB", "97887 MiB"]
        assert row[6:8] == ["12.0", "580.95.05"] and row[8].startswith("00000000:")
    assert len({r[2] for r in rows[1:]}) == 8
    nounits = parse_csv(smi("--query-gpu=memory.total,compute_cap,index", "--format=csv,noheader,nounits",
                            config=config).stdout)
    assert nounits[0] == ["97887", "12.0", "0"] and len(nounits) == 8
    one = parse_csv(smi("-i", "3", "--query-gpu=index", "--format=csv,noheader", config=config).stdout)
    assert one == [["3"]]
    listing = smi("-L", config=config).stdout.splitlines()
    assert len(listing) == 8 and listing[0].startswith("GPU 0: NVIDIA RTX PRO 6000 Blackwell Server Edition (UUID: GPU-")
    assert smi("--query-compute-apps=gpu_uuid,pid,process_name,used_gpu_memory", "--format=csv",
               config=config).stdout == "gpu_uuid, pid, process_name, used_gpu_memory [MiB]\n"
    table = smi(config=config).stdout
    assert "| NVIDIA-SMI 580.95.05              Driver Version: 580.95.05      CUDA Version: 13.0     |" in table
    assert "|   0  NVIDIA RTX PRO 6000 Blac...    On  |" in table
    assert "|        0MiB / 97887MiB |" in table and "No running processes found" in table
    assert smi("--version", config=config).stdout.startswith("NVIDIA-SMI version  : 580.95.05")


def test_nvidia_smi_topology_pcie_and_nvlink(tmp_path):
    pcie = smi("topo", "-m", config=tmp_path / "absent.json").stdout
    lines = pcie.splitlines()
    assert lines[0] == "\t" + "\t".join("GPU%d" % i for i in range(8)) + "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID"
    matrix = [line.split("\t") for line in lines[1:9]]
    links = {cell for row in matrix for cell in row[1:9]} - {" X "}
    assert links == {"PIX", "PXB", "NODE", "SYS"}  # PCIe only: no NV#
    assert all(row[i + 1] == " X " for i, row in enumerate(matrix))
    assert all(matrix[i][j + 1] == matrix[j][i + 1] for i in range(8) for j in range(8))
    assert [row[10] for row in matrix] == ["0"] * 4 + ["1"] * 4
    assert "  NV#  = Connection traversing a bonded set of # NVLinks" in lines
    nv_config = tmp_path / "nv.json"
    nv_config.write_text(json.dumps({"profile": "h200-nvlink", "gpu_count": 2}))
    nvlink = smi("topo", "-m", config=nv_config).stdout
    fixture = Path("/work/shared/fixtures/nvidia-smi/h200x2/topo_m.txt")
    if fixture.exists():
        assert nvlink == fixture.read_text()
    assert "GPU0\t X \tNV18\t" in nvlink
    nv8 = tmp_path / "nv8.json"
    nv8.write_text(json.dumps({"profile": "h200-nvlink", "gpu_count": 8}))
    rows = [line.split("\t") for line in smi("topo", "-m", config=nv8).stdout.splitlines()[1:9]]
    assert {cell for row in rows for cell in row[1:9]} == {" X ", "NV18"}


def test_nvidia_smi_holders_and_errors(tmp_path):
    dev = tmp_path / "dev"
    dev.mkdir()
    for i in range(2):
        (dev / ("nvidia%d" % i)).touch()
    config = tmp_path / "smi.json"
    config.write_text(json.dumps({"profile": "h200-nvlink", "gpu_count": 2, "device_dir": str(dev)}))
    holder = subprocess.Popen([PY, "-c", "import sys, time; f = open(sys.argv[1]); print('ok', flush=True); "
                               "time.sleep(30)", str(dev / "nvidia1")], stdout=subprocess.PIPE)
    try:
        holder.stdout.readline()
        apps = parse_csv(smi("--query-compute-apps=gpu_uuid,pid,used_gpu_memory", "--format=csv",
                             config=config).stdout)
        assert apps[0] == ["gpu_uuid", "pid", "used_gpu_memory [MiB]"]
        assert apps[1] == ["GPU-4f3f9924-c31b-11ce-1a00-cd855da98952", str(holder.pid), "%d MiB" % int(143771 * 0.88)]
        mem = parse_csv(smi("--query-gpu=index,memory.used,memory.total", "--format=csv,noheader,nounits",
                            config=config).stdout)
        assert mem == [["0", "0", "143771"], ["1", str(int(143771 * 0.88)), "143771"]]
        table = smi(config=config).stdout
        assert "|    1   N/A  N/A %16d      C   " % holder.pid in table
    finally:
        holder.kill()
        holder.wait()
    direct = subprocess.run([str(NVIDIA_SMI), "-L"], capture_output=True, text=True,
                            env=dict(os.environ, INFEROPS_NVIDIA_SMI_CONFIG=str(config)), check=False)
    assert direct.returncode == 0 and direct.stdout.count("NVIDIA H200") == 2  # "#!/bin/sh" re-runs python3
    bad = smi("--no-such-option", config=config, check=False)
    assert bad.returncode == 2 and "Invalid combination of input arguments" in bad.stdout
    bad_field = smi("--query-gpu=index,bogus", "--format=csv", config=config, check=False)
    assert bad_field.returncode == 2 and 'Field "bogus" is not a valid field to query.' in bad_field.stdout
    no_format = smi("--query-gpu=index", config=config, check=False)
    assert no_format.returncode == 2


def test_nvidia_smi_fault_knobs(tmp_path):
    """C16/C17/C18: MIG mode and devices, a lost GPU (exit 15 or 0), an NVML that cannot start."""
    config = tmp_path / "smi.json"
    config.write_text(json.dumps({"profile": "h200-nvlink", "mig": [0, 1], "mig_devices": 2}))
    modes = parse_csv(smi("--query-gpu=index,mig.mode.current", "--format=csv,noheader", config=config).stdout)
    assert modes[:3] == [["0", "Enabled"], ["1", "Enabled"], ["2", "Disabled"]]
    listing = smi("-L", config=config).stdout.splitlines()
    assert listing[0].startswith("GPU 0: NVIDIA H200 (UUID: GPU-")
    assert listing[1].startswith("  MIG 3g.71gb     Device  0: (UUID: MIG-") and listing[2].startswith("  MIG 3g.71gb     Device  1:")
    assert listing[3].startswith("GPU 1: ") and listing[6].startswith("GPU 2: ") and len(listing) == 8 + 4
    assert smi(config=config).stdout.count("Enabled |") == 2

    bus_ids = ["00000000:%02X:00.0" % b for b in (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xBA, 0xCB, 0xDB)]
    for rc in (15, 0):
        config.write_text(json.dumps({"profile": "h200-nvlink", "bus_ids": bus_ids, "lost": [5], "lost_rc": rc}))
        out = smi("--query-gpu=index,pci.bus_id", "--format=csv,noheader", config=config, check=False)
        assert out.returncode == rc
        lines = out.stdout.splitlines()
        assert lines[5] == "Unable to determine the device handle for GPU 0000:BA:00.0: Unknown Error"
        assert [line.split(",")[0] for line in lines if "Unable" not in line] == ["0", "1", "2", "3", "4", "6", "7"]
        assert "GPU5" not in smi("topo", "-m", config=config, check=False).stdout

    config.write_text(json.dumps({"nvml_error": "Driver/library version mismatch", "nvml_library_version": "570.195"}))
    for args in ((), ("-L",), ("--query-gpu=index", "--format=csv")):
        out = smi(*args, config=config, check=False)
        assert out.returncode == 18
        assert out.stdout == "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 570.195\n"


# --------------------------------------------------------------------------- installer
def test_install_into_venv_then_serve_from_it(tmp_path, servers):
    venv = tmp_path / "ml-env"
    base_python = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable
    subprocess.run([base_python, "-m", "venv", "--without-pip", str(venv)], check=True)
    cuda, smi_path, smi_cfg, gpu_dir = tmp_path / "cuda-13.0", tmp_path / "sbin" / "nvidia-smi", \
        tmp_path / "smi.json", tmp_path / "dev"
    cmd = [PY, str(HERE / "install.py"), "--venv", str(venv), "--gpus", "2", "--cuda-root", str(cuda),
           "--nvidia-smi", str(smi_path), "--nvidia-smi-config", str(smi_cfg), "--gpu-dir", str(gpu_dir)]
    first = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout.splitlines()[-1])["changed"] is True
    again = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert json.loads(again.stdout.splitlines()[-1])["changed"] is False  # idempotent

    vpy = str(venv / "bin" / "python")
    clean_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    outside = dict(cwd=str(tmp_path), capture_output=True, text=True, env=clean_env)
    helped = subprocess.run([vpy, "-m", "sglang.launch_server", "--help"], **outside, check=False)
    assert helped.returncode == 0 and "--cuda-graph-max-bs" in helped.stdout
    ver = subprocess.run([vpy, "-c", "import importlib.metadata as m, sglang; "
                          "print(m.version('sglang'), sglang.__file__)"], **outside, check=False)
    assert ver.stdout.split()[0] == "0.5.9" and ver.stdout.split()[1].startswith(str(venv))
    assert subprocess.run([str(venv / "bin" / "sglang"), "version"], **outside, check=False).stdout.startswith("sglang version: 0.5.9")
    assert subprocess.run([str(venv / "bin" / "ninja"), "--version"], **outside, check=False).stdout.strip() == "1.11.1"
    assert "release 13.0, V13.0" in subprocess.run([str(cuda / "bin" / "nvcc"), "--version"], **outside, check=False).stdout
    assert "release 13.0" in subprocess.run([str(cuda / "bin" / "ptxas"), "--version"], **outside, check=False).stdout
    assert json.loads((cuda / "version.json").read_text())["cuda"]["version"].startswith("13.0.")
    assert (cuda / "lib64").is_dir()
    assert sorted(os.listdir(gpu_dir)) == ["nvidia0", "nvidia1", "nvidiactl"]
    assert all(os.stat(gpu_dir / n).st_mode & 0o777 == 0o666 for n in os.listdir(gpu_dir))
    cfg = json.loads(smi_cfg.read_text())
    assert (cfg["gpu_count"], cfg["device_dir"], cfg["topology"]) == (2, str(gpu_dir), "pcie")
    assert subprocess.run([str(smi_path), "-L"], env=dict(clean_env, INFEROPS_NVIDIA_SMI_CONFIG=str(smi_cfg)),
                          capture_output=True, text=True, check=False).stdout.count("GPU ") == 2

    # C05: started through the console script with the unit's literal PATH and CUDA_HOME
    server = servers("--tp", "2", launcher=[str(venv / "bin" / "sglang"), "serve"], gpu_dir=gpu_dir, env={
        "PYTHONPATH": None, "SGLANG_DOUBLE_REQUIRE_TOOLS": "1", "CUDA_HOME": str(cuda),
        "PATH": "%s:%s:/usr/bin:/bin" % (venv / "bin", cuda / "bin")})
    server.wait_ready()
    checks = server.state("main")["tool_checks"]
    assert checks["ninja"]["path"] == str(venv / "bin" / "ninja")
    assert checks["nvcc"]["path"] == str(cuda / "bin" / "nvcc")
    assert cmdline(server.pid)[1:3] == [str(venv / "bin" / "sglang").encode(), b"serve"]
    apps = subprocess.run([str(smi_path), "--query-compute-apps=process_name", "--format=csv,noheader"],
                          env=dict(clean_env, INFEROPS_NVIDIA_SMI_CONFIG=str(smi_cfg)),
                          capture_output=True, text=True, check=False).stdout.split()
    assert sorted(apps) == ["sglang::scheduler_TP0", "sglang::scheduler_TP1"]
    os.kill(server.pid, signal.SIGTERM)
    assert server.wait_exit(timeout=10) == 0


def test_install_torch_stand_in_tells_its_versions_without_torch(tmp_path):
    """Versions in the record: --torch installs only what tells torch's version (its metadata, torch/version.py in
    torch's 2.x format); importing it fails as without torch; a real torch is never replaced."""
    venv = tmp_path / "ml-env"
    base_python = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable
    subprocess.run([base_python, "-m", "venv", "--without-pip", str(venv)], check=True)
    cmd = [PY, str(HERE / "install.py"), "--venv", str(venv), "--torch", "2.9.1+cu130", "--torch-cuda", "13.0"]
    first = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert first.returncode == 0, first.stderr
    again = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert json.loads(again.stdout.splitlines()[-1])["changed"] is False  # idempotent
    vpy = str(venv / "bin" / "python")
    outside = dict(cwd=str(tmp_path), capture_output=True, text=True,
                   env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    ver = subprocess.run([vpy, "-c", "import importlib.metadata as m; d = m.distribution('torch'); "
                          "print(d.version, d.locate_file('torch/version.py'))"], **outside, check=False)
    version, version_py = ver.stdout.split()
    assert version == "2.9.1+cu130" and version_py.startswith(str(venv))
    text = Path(version_py).read_text()
    assert "__version__ = '2.9.1+cu130'\n" in text and "cuda: Optional[str] = '13.0'\n" in text
    imported = subprocess.run([vpy, "-c", "import torch"], **outside, check=False)
    assert imported.returncode == 1 and "ImportError: torch stand-in" in imported.stderr
    # a CPU build, replacing the previous stand-in
    cpu = subprocess.run(cmd[:5] + ["2.9.1+cpu"], capture_output=True, text=True, check=False)
    assert cpu.returncode == 0, cpu.stderr
    site = Path(version_py).parent.parent
    assert sorted(p.name for p in site.glob("torch-*.dist-info")) == ["torch-2.9.1+cpu.dist-info"]
    assert "cuda: Optional[str] = None\n" in (site / "torch" / "version.py").read_text()
    # a real torch (installed by pip) is left alone
    (site / "torch-2.9.1+cpu.dist-info" / "INSTALLER").write_text("pip\n")
    refused = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert refused.returncode != 0 and "holds a real torch" in refused.stderr


def test_thinking_model_splits_reasoning_as_sglang_serving_chat(servers):
    """--reasoning-parser kimi_k2 (thinking on by default): the budget of a small request ends inside the reasoning,
    content is null and reasoning_content holds the text after <think> (field case C36); a larger budget gets both;
    chat_template_kwargs thinking=false and separate_reasoning=false as SGLang."""
    server = servers("--reasoning-parser", "kimi_k2")
    plain = servers()
    server.wait_ready()
    plain.wait_ready()

    def chat(target, **extra):
        status, body = target.request("POST", "/v1/chat/completions",
                                      body=dict({"messages": [{"role": "user", "content": "Say hello."}]}, **extra))
        assert status == 200, body
        data = json.loads(body)
        return data["choices"][0], data["usage"]

    choice, usage = chat(server, max_tokens=8)
    assert choice["message"]["content"] is None and choice["finish_reason"] == "length"
    assert choice["message"]["reasoning_content"] == "The user wants a short greeting."
    assert usage["completion_tokens"] == 8
    choice, usage = chat(server, max_tokens=64)
    assert choice["message"]["content"] == "Hello from the SGLang test double." and choice["finish_reason"] == "stop"
    assert choice["message"]["reasoning_content"].startswith("The user wants")
    choice, dummy = chat(server, max_tokens=64, chat_template_kwargs={"thinking": False})
    assert choice["message"] == {"role": "assistant", "content": "Hello from the SGLang test double.",
                                 "reasoning_content": None, "tool_calls": None}
    choice, dummy = chat(server, max_tokens=3, separate_reasoning=False)
    assert choice["message"]["content"] == "<think>The user" and choice["message"]["reasoning_content"] is None
    choice, dummy = chat(plain, max_tokens=8)
    assert choice["message"]["content"] == "Hello from the SGLang test double." and choice["message"]["reasoning_content"] is None


def test_thinking_model_streams_reasoning_then_content(servers):
    server = servers("--reasoning-parser", "kimi_k2")
    server.wait_ready()
    for budget, content in ((8, ""), (64, "Hello from the SGLang test double.")):
        status, body = server.request("POST", "/v1/chat/completions", body={
            "messages": [{"role": "user", "content": "Say hello."}], "max_tokens": budget, "stream": True})
        assert status == 200, body
        chunks = [json.loads(line[len(b"data: "):]) for line in body.split(b"\n\n")
                  if line.startswith(b"data: {")]
        deltas = [chunk["choices"][0]["delta"] for chunk in chunks]
        assert deltas[0]["reasoning_content"].startswith("The user wants")
        assert "".join(d.get("content") or "" for d in deltas) == content
        assert chunks[-1]["choices"][0]["finish_reason"] == ("length" if budget == 8 else "stop")


def test_model_registry_names_as_sglang_0_5_9_registers_them():
    """The registry modules hold 0.5.9's EntryClass lines for the reference model and its EAGLE3 draft; importing them
    (as SGLang's import_model_classes does) gives the classes of those names."""
    import importlib
    names = {}
    for path in sorted((HERE / "sglang" / "srt" / "models").glob("*.py")):
        if path.name == "__init__.py":
            continue
        module = importlib.import_module("sglang.srt.models." + path.stem)
        names[path.stem] = [cls.__name__ for cls in module.EntryClass]
        assert re.search(r"^EntryClass = \[", path.read_text(), re.M), path
    assert names == {"deepseek_v2": ["DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM"],
                     "llama_eagle3": ["LlamaForCausalLMEagle3"]}


def test_speculative_accept_length_and_decode_time_follow_the_flags(servers, tmp_path):
    """Field case C38 (the double's side): ignore_eos generates exactly max_tokens; /server_info reports
    internal_states[*].avg_spec_accept_length (SGLang 0.5.23's _add_speculative) only with a speculative algorithm and
    after a generation; 2 EAGLE3 steps give 2.6 and decode faster than 1 step (1.8) or a plain server."""
    draft = make_model(tmp_path / "draft")
    spec = ("--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", str(draft),
            "--speculative-eagle-topk", "1")
    fast = servers(*spec, "--speculative-num-steps", "2", env={"SGLANG_DOUBLE_DECODE_SECONDS": "0.01"})
    slow = servers(*spec, "--speculative-num-steps", "1", env={"SGLANG_DOUBLE_DECODE_SECONDS": "0.01"})
    plain = servers(env={"SGLANG_DOUBLE_DECODE_SECONDS": "0.01"})
    for server in (fast, slow, plain):
        server.wait_ready()

    def info(target):
        status, body = target.request("GET", "/server_info")
        assert status == 200
        return [s.get("avg_spec_accept_length") for s in json.loads(body)["internal_states"]]

    def timed(target):
        started = time.time()
        status, body = target.request("POST", "/v1/chat/completions", body={
            "messages": [{"role": "user", "content": "Tell a story."}], "max_tokens": 100, "ignore_eos": True})
        assert status == 200, body
        data = json.loads(body)
        assert data["usage"]["completion_tokens"] == 100 and data["choices"][0]["finish_reason"] == "length"
        return time.time() - started

    assert info(fast) == [None]  # no verify step yet: SGLang's _average_accept_length is None
    seconds = {name: timed(target) for name, target in (("fast", fast), ("slow", slow), ("plain", plain))}
    assert info(fast) == [pytest.approx(100 / 39)]  # ceil(100 / 2.6) = 39 steps
    assert info(slow) == [pytest.approx(100 / 56)]  # ceil(100 / 1.8) = 56 steps
    assert info(plain) == [None]
    assert seconds["fast"] < seconds["slow"] < seconds["plain"], seconds


# --------------------------------------------------------------------------- weight load (issue 32)
def make_weights(model, sizes, index=True, extra=()):
    """Shards ``model-0000N-of-0000M.safetensors`` of ``sizes`` bytes (random), listed by an index when ``index``;
    ``extra`` names files present but not listed."""
    names = ["model-%05d-of-%05d.safetensors" % (i + 1, len(sizes)) for i in range(len(sizes))]
    for name, size in zip(names, sizes):
        (model / name).write_bytes(os.urandom(size))
    for name in extra:
        (model / name).write_bytes(b"x" * 10)
    if index:
        (model / "model.safetensors.index.json").write_text(json.dumps(
            {"metadata": {"total_size": sum(sizes)}, "weight_map": {"t%d" % i: n for i, n in enumerate(names)}}))
    return names


def test_weight_files_follow_the_index_like_sglang(tmp_path):
    weight_files, load_weights, gpu_copy_wanted = _import_from_double(
        "sglang.srt.model_loader.weight_utils", "weight_files", "load_weights", "gpu_copy_wanted")
    names = make_weights(tmp_path, [1000, 3000], extra=("consolidated.safetensors",))
    assert [os.path.basename(p) for p in weight_files(str(tmp_path))] == names  # the unlisted file is left out
    (tmp_path / "model.safetensors.index.json").unlink()
    assert len(weight_files(str(tmp_path))) == 3  # no index: every *.safetensors
    result = load_weights(weight_files(str(tmp_path)), to_gpu=False, chunk=512)
    assert result["bytes"] == 4010 and result["files"] == 3 and result["gpu"] is False
    assert gpu_copy_wanted("0") is False


def test_load_reads_the_weights_split_over_the_ranks(servers, tmp_path):
    model = make_model(tmp_path / "weights-model")
    make_weights(model, [300000, 200000, 100000])
    server = servers("--tp", "2", model=model, env={"SGLANG_DOUBLE_LOAD_TO_GPU": "0"})
    server.wait_ready()
    weights = [server.state(role)["weights"] for role in ("scheduler_TP0", "scheduler_TP1")]
    assert sum(w["bytes"] for w in weights) == 600000, weights
    assert [w["files"] for w in weights] == [2, 1] and not any(w["gpu"] for w in weights)
    assert "Read 400000 bytes of weights" in server.log()
