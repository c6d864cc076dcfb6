"""SGLang test double: a standard-library impersonation of an SGLang 0.5.9 server.

The version is ``sglang.version.__version__``; the builds 0.5.10 and
0.5.10.post1 (tests/double/build_wheels.py) differ as ``sglang.version`` says.

Entry points, as in SGLang: ``python -m sglang.launch_server [flags]`` and
``sglang serve [flags]`` (console script calling ``sglang.cli:main``). The
flags come from ``sglang.srt.server_args.ServerArgs.add_cli_args`` (spelled,
typed and defaulted as in 0.5.9; an unknown flag is an argparse error, exit 2).

Process tree (multiprocessing "spawn"; children retitle their argv area so
``/proc/<pid>/cmdline`` reads the title, and set ``/proc/<pid>/comm``):

* the launcher keeps its own command line and serves HTTP;
* ``sglang::scheduler[_DP<d>][_PP<p>][_TP<t>][_EP<e>]`` one per GPU rank, a part
  only when that size is > 1 (SGLang's rule: tp=1 gives ``sglang::scheduler``,
  tp=2 ``sglang::scheduler_TP0``/``_TP1``, dp=2 tp=2 with dp attention and
  ep=2 ``sglang::scheduler_DP0_TP0_EP0``/``sglang::scheduler_DP1_TP1_EP1``);
* ``sglang::data_parallel_controller`` between the launcher and the schedulers
  when dp > 1;
* ``sglang::detokenizer`` (not on nodes with --node-rank >= 1);
* multiprocessing's resource tracker (also present under real SGLang).

With dp == 1 the schedulers die with the launcher (PR_SET_PDEATHSIG SIGKILL);
with dp > 1 they do not (field case C01; ``SGLANG_DOUBLE_DP_PDEATHSIG=1``
restores the death signal). The controller and the detokenizer always have it.

Each scheduler holds ``flock(LOCK_EX|LOCK_NB)`` on
``$SGLANG_DOUBLE_GPU_DIR/nvidia<gpu id>`` for its life (creating the file if
missing): a second server on the same GPUs fails with
``torch.OutOfMemoryError: CUDA out of memory. ... GPU <id> ...``. While loading,
every scheduler runs ``ninja --version`` (through PATH) and
``$CUDA_HOME/bin/nvcc --version`` (CUDA home found as torch does: CUDA_HOME,
CUDA_PATH, nvcc on PATH, /usr/local/cuda); a missing or failing tool fails the
load. Schedulers report their tool results to the launcher, which records them.

Environment knobs:

=================================  ==========  =================================================
SGLANG_DOUBLE_LOAD_SECONDS         3           model load; the port stays closed meanwhile
                                               (at least this long; reading the weights may take longer)
SGLANG_DOUBLE_LOAD_WEIGHTS         1           the load reads the model directory's *.safetensors
                                               (index-filtered) from disk; 0 reads nothing
SGLANG_DOUBLE_LOAD_TO_GPU          auto        copy the read bytes to GPU memory: auto = where torch
                                               with CUDA is importable; 0 never; 1 always
SGLANG_DOUBLE_WARMUP_SECONDS       1           port open, /health 503; ready no earlier than this
                                               (and only once the warm-up request succeeded);
                                               also the pause before each warm-up try, at most 1 s
SGLANG_DOUBLE_WARMUP_TRIES         120         GET /get_model_info tries of the warm-up (SGLang: 120)
SGLANG_DOUBLE_HEALTH_DELAY         0.05        time /health takes once ready (C04 uses 1.2)
SGLANG_DOUBLE_HEALTH_TIMEOUT       20          /health wait before 503 when a scheduler died
SGLANG_DOUBLE_GENERATE_SECONDS     0.05        time one completion takes
SGLANG_DOUBLE_DRAIN_SECONDS        5           SIGTERM: longest wait for in-flight requests
SGLANG_DOUBLE_REQUIRE_TOOLS        1           0 skips the ninja/nvcc checks
SGLANG_DOUBLE_STATE_DIR            /run/sglang-double   state files <dir>/<port>/<role>.json
SGLANG_DOUBLE_GPU_DIR              /dev        where nvidia<N> stand-in device files live
SGLANG_DOUBLE_GPU_MEM_GIB          95.59       GPU size quoted in the OOM message
SGLANG_DOUBLE_DP_PDEATHSIG         0           1: dp schedulers die with their controller
SGLANG_DOUBLE_EXIT_STYLE           clean       "sglang": end as 0.5.9 does, with SIGKILL to
                                               the tree and to the launcher itself
SGLANG_DOUBLE_SSL                  0           1: add 0.5.10's --ssl-* flags to 0.5.9 (0.5.10 has them)
SGLANG_DOUBLE_FAIL                 (none)      comma-separated failure modes, below
=================================  ==========  =================================================

Warm-up request (SGLang's ``_wait_and_warmup``/``_execute_server_warmup``; skipped with
``--skip-server-warmup`` and on nodes with --node-rank >= 1): once the port is open, a thread
sleeps (1 s in SGLang; here min(1 s, SGLANG_DOUBLE_WARMUP_SECONDS), so that tests stay fast) and
requests ``GET <ServerArgs.url()>/get_model_info`` (e.g. ``http://0.0.0.0:30000`` for --host
0.0.0.0; https with 0.5.10's --ssl-certfile, verified against --ssl-ca-certs or not at all),
timeout 5 s, ``Authorization: Bearer <api key>`` when --api-key is set, up to
SGLANG_DOUBLE_WARMUP_TRIES times until it answers 200; then ``POST /generate`` (``/encode`` with
--is-embedding) "The capital city of France is", max_new_tokens 8. The requests go through the
proxy that ``requests`` would pick from the environment (http_proxy/HTTP_PROXY, https_proxy,
all_proxy, no_proxy/NO_PROXY with requests' matching; urllib carries them), field case C21. When
every try failed or the generation did: ``Initialization failed. warmup error: <traceback>``
(ending in a ``requests.exceptions.ProxyError``/``ConnectionError``/``SSLError`` or
``AssertionError: res=<Response [502]>, ...`` line), the tree is killed and the launcher exits 1
(SIGKILLs itself with SGLANG_DOUBLE_EXIT_STYLE=sglang, as kill_process_tree(os.getpid()) does).
Only then: ready, "The server is fired up and ready to roll!". Generations are served from the
moment the port opens (SGLang's warm-up is one of them); /health answers 503 until ready.
``main.json`` has ``warmup`` (url, proxy, tries, result, error).

Failure modes (``SGLANG_DOUBLE_FAIL``):

``crash_during_load``
    halfway through the load the launcher logs a traceback
    (``SimulatedCrash: ...``), kills its children and exits 1; the port never opens.
``never_healthy``
    the port opens and /v1/models answers, but /health stays 503 forever and
    "The server is fired up and ready to roll!" is never logged: the warm-up's
    /get_model_info tries run (and can fail), its generation never returns, and
    generations answer 503. Always on in the build 0.5.10.post1
    (``sglang.version.BAKED_FAIL_MODES``).
``child_ignores_sigterm``
    the first scheduler (TP0 of DP0) ignores SIGTERM and has no parent-death
    signal: only SIGKILL ends it (the launcher's shutdown does so after 2 s;
    killing the launcher with SIGKILL leaves it running).
``health_500``
    once ready, /health and /health_generate answer 500.
``chat_hangs``
    /v1/chat/completions and /v1/completions take the request and never answer
    (until the server drains, then 503), while /health and /generate work - the
    warm-up passes and /health answers 200, yet a real completion hangs (a
    server that "answered healthy" and is broken).

Signals: SIGTERM or SIGINT to the launcher stops new work (/health and new
generations answer 503), waits for in-flight requests (at most
SGLANG_DOUBLE_DRAIN_SECONDS), closes the port, sends SIGTERM to every
descendant, SIGKILL after 2 s, and exits 0. A child that fails sends SIGQUIT to
its parent (as SGLang's do); the launcher then kills the tree and exits 1.

State files: every process writes ``<state dir>/<port>/<role>.json`` (roles
``main``, ``data_parallel_controller``, ``scheduler_TP0``, ``scheduler_DP1_TP1``,
``detokenizer``, ...) with pid, ppid, title, comm, argv (as exec'd), environ,
cwd, started_at and role details; ``main.json`` also has ``phase`` and
``tool_checks`` (what ninja/nvcc ran and printed).
"""

from sglang.version import __version__

__all__ = ["__version__"]
