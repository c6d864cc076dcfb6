"""The launcher (main process) and HTTP server of the SGLang test double.

``launch_server(server_args)`` is what ``python -m sglang.launch_server`` and
``sglang serve`` run: check the model path, start the schedulers (or the data
parallel controller) and the detokenizer with multiprocessing "spawn", wait
for the simulated model load, then serve SGLang's HTTP API with
``http.server.ThreadingHTTPServer`` and make SGLang's warm-up request to
itself (through the environment's proxy, as ``requests`` would). See the
package docstring of ``sglang`` for the knobs.
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import multiprocessing as mp
import os
import hmac
import http.client
import signal
import socket
import ssl
import struct
import sys
import threading
import time
import traceback
import urllib.error
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import unquote, urlsplit

from sglang.srt.distributed_rendezvous import RendezvousAborted, RendezvousTimeout, rendezvous
from sglang.srt.managers.data_parallel_controller import run_data_parallel_controller_process
from sglang.srt.managers.detokenizer_manager import run_detokenizer_process
from sglang.srt.managers.scheduler import (
    LaunchAbortedError,
    SchedulerDeadError,
    plan_tp_group,
    run_scheduler_process,
    wait_for_scheduler_ready,
)
from sglang.srt.utils.common import (
    KNOWN_FAIL_MODES,
    access_logger,
    configure_logger,
    descendants,
    env_float,
    fail_modes,
    kill_pids,
    pid_alive,
    read_cmdline,
    reap_children,
    terminate_pids,
    uvicorn_logger,
    write_state,
)
from sglang import version as _version
from sglang.version import __version__

logger = logging.getLogger(__name__)

CANNED_TOKENS = ["Hello", " from", " the", " SG", "Lang", " test", " double", "."]
CANNED_TEXT = "".join(CANNED_TOKENS)  # "Hello from the SGLang test double."
# What a thinking model generates before its answer (the reference model family, Kimi-K2.5: SGLang's page requires
# --reasoning-parser kimi_k2, whose KimiK2Detector has reasoning_default="thinking": thinking is on unless the request's
# chat_template_kwargs turn it off). The chat endpoint splits it as SGLang's serving_chat._build_chat_response does
# with separate_reasoning (default true): the text between <think> and </think> (to the end when the budget ran out
# inside it) is reasoning_content, the rest is content; an empty content is null (field case C36).
THINKING_TOKENS = ["<think>", "The", " user", " wants", " a", " short", " greeting", ".", " I", " will", " answer",
                   " in", " one", " line", ".", "</think>"]

# (path, method) of the double's endpoints marked @auth_level(AuthLevel.ADMIN_OPTIONAL)
# in 0.5.9's http_server.py (/flush_cache is GET and POST there).
ADMIN_ROUTES = {("/flush_cache", "GET"), ("/flush_cache", "POST"), ("/hicache/storage-backend", "GET")}
# 0.5.9 http_server._admin_api_key_missing_response
ADMIN_KEY_MISSING = ("This endpoint requires admin API key, but this server was started without one "
                     "(admin-api-key). Restart with --admin-api-key to enable.")


def _compact(obj: Any) -> bytes:
    """JSON as FastAPI's ORJSONResponse writes it (no blanks)."""
    return json.dumps(obj, separators=(",", ":")).encode()


class SimulatedCrash(RuntimeError):
    """Raised by SGLANG_DOUBLE_FAIL=crash_during_load."""


# --------------------------------------------------------------------------- model check
def check_model_dir(path: str, what: str = "model") -> Dict[str, Any]:
    """Load ``config.json`` like transformers' AutoConfig would, with its errors."""
    if not os.path.isdir(path):
        raise OSError(
            "Incorrect path_or_model_id: '%s'. Please provide either the path to a local folder "
            "or the repo_id of a model on the Hub. (%s path of the SGLang test double; it cannot "
            "download models)" % (path, what)
        )
    config_path = os.path.join(path, "config.json")
    if not os.path.isfile(config_path):
        raise OSError(
            "%s does not appear to have a file named config.json. Checkout "
            "'https://huggingface.co/%s/tree/None' for available files." % (path, path)
        )
    try:
        with open(config_path) as f:
            config = json.load(f)
    except ValueError as exc:
        raise OSError(
            "It looks like the config file at '%s' is not a valid JSON file. (%s)" % (config_path, exc)
        )
    if not isinstance(config, dict):
        raise OSError("The config file at '%s' does not hold a JSON object." % config_path)
    return config


# --------------------------------------------------------------------------- shared state
class ServerState:
    """What the HTTP threads and the main thread share."""

    def __init__(self, server_args, model_config: Dict[str, Any], scheduler_infos: List[Dict[str, Any]]):
        self.server_args = server_args
        self.model_config = model_config
        self.scheduler_infos = scheduler_infos
        self.lock = threading.Lock()
        self.ready = False
        # generations are served from the moment the port opens (SGLang's warm-up request is one;
        # its TokenizerManager does not check server_status), only /health waits for ready
        self.accepting = False
        self.draining = False
        self.dead_schedulers: List[int] = []
        self.inflight = [0] * max(server_args.dp_size, 1)
        self.inflight_tokens = [0] * max(server_args.dp_size, 1)
        self._next_dp = itertools.cycle(range(max(server_args.dp_size, 1)))
        self.created = int(time.time())
        self.modes = fail_modes()
        self.health_delay = env_float("SGLANG_DOUBLE_HEALTH_DELAY", 0.05)
        self.health_timeout = env_float("SGLANG_DOUBLE_HEALTH_TIMEOUT", 20.0)
        self.generate_seconds = env_float("SGLANG_DOUBLE_GENERATE_SECONDS", 0.05)
        # Decoding: one forward step per SGLANG_DOUBLE_DECODE_SECONDS; with speculative decoding a step yields
        # accept_length tokens (see spec_accept_length), so throughput follows the flags as on a GPU.
        self.decode_seconds = env_float("SGLANG_DOUBLE_DECODE_SECONDS", 0.01)
        self.accept_length = spec_accept_length(server_args, env_float("SGLANG_DOUBLE_ACCEPT_RATE", 0.8))
        # SGLang's metrics reporter counters (spec_total_num_accept_tokens / spec_total_num_forward_ct).
        self.spec_accept_tokens = 0
        self.spec_forward_ct = 0
        # /metrics (--enable-metrics): the tokenizer's counters and time-to-first-token histogram, the scheduler's
        # last generation throughput (see Handler.metrics).
        self.prompt_tokens_total = 0
        self.generation_tokens_total = 0
        self.num_requests_total = 0
        self.ttft_counts = [0] * len(TTFT_BUCKETS)
        self.ttft_sum = 0.0
        self.gen_throughput = 0.0
        self.context_len = (
            server_args.context_length
            or model_config.get("max_position_embeddings")
            or 131072
        )

    def begin_request(self, tokens: int) -> Optional[int]:
        with self.lock:
            if self.draining or not (self.ready or self.accepting):
                return None
            dp = next(self._next_dp)
            self.inflight[dp] += 1
            self.inflight_tokens[dp] += tokens
            return dp

    def end_request(self, dp: int, tokens: int) -> None:
        with self.lock:
            self.inflight[dp] -= 1
            self.inflight_tokens[dp] -= tokens

    def decode(self, tokens: int) -> float:
        """Seconds the decoding of TOKENS takes, counted into the speculative counters."""
        steps = int(math.ceil(tokens / self.accept_length)) if tokens > 0 else 0
        if self.accept_length > 1.0 or getattr(self.server_args, "speculative_algorithm", None):
            with self.lock:
                self.spec_accept_tokens += tokens
                self.spec_forward_ct += steps
        return steps * self.decode_seconds

    def avg_spec_accept_length(self) -> Optional[float]:
        """SGLang 0.5.23 InternalStateCollector._average_accept_length: None without speculative decoding or before
        the first verify step, else accepted tokens / forward steps since the start."""
        if not getattr(self.server_args, "speculative_algorithm", None) or self.spec_forward_ct <= 0:
            return None
        with self.lock:
            return self.spec_accept_tokens / self.spec_forward_ct

    def count_request(self, prompt_tokens: int, generation_tokens: int, ttft: float, decode_seconds: float) -> None:
        """Counts one finished request into the /metrics figures: PROMPT_TOKENS and GENERATION_TOKENS (tokens),
        TTFT (seconds, into the histogram), and the generation throughput of its decode (tokens/s; SGLang's
        scheduler reports the last logging interval's, the double the last request's)."""
        with self.lock:
            self.num_requests_total += 1
            self.prompt_tokens_total += max(int(prompt_tokens), 0)
            self.generation_tokens_total += max(int(generation_tokens), 0)
            self.ttft_sum += ttft
            for i, bound in enumerate(TTFT_BUCKETS):
                if ttft <= bound:
                    self.ttft_counts[i] += 1
            if generation_tokens > 0 and decode_seconds > 0:
                self.gen_throughput = generation_tokens / decode_seconds

    def total_inflight(self) -> int:
        with self.lock:
            return sum(self.inflight)

    def loads(self) -> List[Dict[str, Any]]:
        cap = self.server_args.max_running_requests or 2048
        with self.lock:
            return [
                {
                    "dp_rank": dp,
                    "num_reqs": min(n, cap),
                    "num_waiting_reqs": max(n - cap, 0),
                    "num_tokens": self.inflight_tokens[dp],
                }
                for dp, n in enumerate(self.inflight)
            ]


# SGLang 0.5.23 srt/observability/metrics_collector.py, TokenizerMetricsCollector: bucket_time_to_first_token.
TTFT_BUCKETS = (0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 20.0, 40.0, 60.0, 80.0, 100.0, 200.0, 400.0)


def _num(value: float) -> str:
    """A sample value as prometheus_client writes it (floats: 1.0, 0.25)."""
    return repr(float(value))


def _label_value(value: Any) -> str:
    """A label value escaped as the Prometheus text format wants it (backslash, double quote, newline)."""
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def spec_accept_length(server_args, accept_rate: float) -> float:
    """The double's tokens per decode step: 1.0 without --speculative-algorithm, else 1 + ACCEPT_RATE x
    --speculative-num-steps (default 3), at most --speculative-num-draft-tokens (EAGLE with topk 1 verifies
    num-steps + 1 tokens per step: SGLang's accept length counts the bonus token). The reference configuration
    (EAGLE3, 2 steps) gives 2.6; 1 step gives 1.8. SGLANG_DOUBLE_ACCEPT_RATE (default 0.8) plays a draft model that
    fits the target better or worse."""
    if not getattr(server_args, "speculative_algorithm", None):
        return 1.0
    steps = getattr(server_args, "speculative_num_steps", None) or 3
    length = 1.0 + max(0.0, min(1.0, accept_rate)) * steps
    draft = getattr(server_args, "speculative_num_draft_tokens", None)
    return min(length, float(draft)) if draft else length


# --------------------------------------------------------------------------- HTTP
def _count_tokens(text: Any) -> int:
    if isinstance(text, list):
        return sum(_count_tokens(t) for t in text)
    if isinstance(text, dict):
        return _count_tokens(text.get("text") or text.get("content") or "")
    return max(len(str(text).split()), 1)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "uvicorn"
    sys_version = ""

    # ---- plumbing
    @property
    def st(self) -> ServerState:
        return self.server.double_state  # type: ignore[attr-defined]

    def log_request(self, code: Any = "-", size: Any = "-") -> None:
        if not getattr(self.server, "access_log", True):
            return
        try:
            phrase = self.responses[int(code)][0]
        except (KeyError, ValueError, TypeError):
            phrase = ""
        access_logger().info(
            '%s:%s - "%s" %s %s', self.client_address[0], self.client_address[1],
            self.requestline, code, phrase,
        )

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        uvicorn_logger().warning(format, *args)

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _send(self, status: int, body: bytes = b"", content_type: Optional[str] = None,
              extra_headers: Optional[Dict[str, str]] = None) -> None:
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (extra_headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, obj: Any) -> None:
        self._send(status, json.dumps(obj).encode(), "application/json")

    def _openai_error(self, status: int, message: str, kind: str) -> None:
        self._json(status, {"object": "error", "message": message, "type": kind, "param": None, "code": status})

    # ---- dispatch
    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def do_OPTIONS(self) -> None:
        self._dispatch("OPTIONS")

    def _routes(self) -> Dict[str, Tuple[Tuple[str, ...], Any]]:
        routes = self._all_routes()
        if _version.at_least(_version.GET_LOAD_GONE):  # 0.5.23's http_server.py has no /get_load
            del routes["/get_load"]
        return routes

    def _all_routes(self) -> Dict[str, Tuple[Tuple[str, ...], Any]]:
        return {
            "/health": (("GET",), self.health),
            "/health_generate": (("GET",), self.health),
            "/v1/models": (("GET",), self.models),
            "/get_server_info": (("GET",), self.server_info),
            "/server_info": (("GET",), self.server_info),
            "/get_model_info": (("GET",), self.model_info),
            "/model_info": (("GET",), self.model_info),
            "/get_load": (("GET",), self.get_load),
            "/v1/loads": (("GET",), self.v1_loads),
            "/metrics": (("GET",), self.metrics),
            "/generate": (("POST",), self.generate),
            "/encode": (("POST", "PUT"), self.encode),
            "/v1/chat/completions": (("POST",), self.chat_completions),
            "/v1/completions": (("POST",), self.completions),
            # admin endpoints (AuthLevel.ADMIN_OPTIONAL in 0.5.9, see ADMIN_ROUTES)
            "/flush_cache": (("GET", "POST"), self.flush_cache),
            "/hicache/storage-backend": (("GET",), self.hicache_storage_backend),
        }

    def _dispatch(self, method: str) -> None:
        path = urlsplit(self.path).path
        body = self._read_body()
        refused = self._auth_refusal(method, path)
        if refused:
            self._send(refused, _compact({"error": "Unauthorized" if refused == 401 else "Forbidden"}),
                       "application/json")
            return
        if method == "OPTIONS" and self.headers.get("Origin") is not None \
                and self.headers.get("Access-Control-Request-Method") is not None:
            self._cors_preflight()
            return
        routes = self._routes()
        if path in routes and not (path == "/metrics" and not self.st.server_args.enable_metrics):
            allowed, handler = routes[path]
            if method not in allowed:
                self._json(405, {"detail": "Method Not Allowed"})
                return
            handler(body)
            return
        if path.startswith("/v1/models/") and method == "GET":
            self.retrieve_model(unquote(path[len("/v1/models/"):]))
            return
        self._json(404, {"detail": "Not Found"})

    def _auth_refusal(self, method: str, path: str) -> int:
        """0 when the request may pass, else the status (401/403) SGLang 0.5.9 answers.

        Follows 0.5.9's sglang/srt/utils/auth.py (decide_request_auth, used by
        add_api_key_middleware, which http_server.launch_server installs when
        --api-key or --admin-api-key is set): OPTIONS and every path starting
        with /health or /metrics pass; an ADMIN_OPTIONAL endpoint (the route
        matched with its method) needs the admin key when one is set (the api
        key is then refused), else the api key when one is set; every other
        request (NORMAL, also unknown paths and wrong methods) needs the api key
        when one is set (the admin key does not open it) and passes when only
        the admin key is set. The token is the text after "Bearer " ("bearer"
        in any case), compared exactly. 0.5.9 has no ADMIN_FORCE endpoint, so
        403 is never given.
        """
        sa = self.st.server_args
        api_key, admin_key = sa.api_key, sa.admin_api_key
        if not (api_key or admin_key):
            return 0
        if method == "OPTIONS" or path.startswith("/health") or path.startswith("/metrics"):
            return 0
        if (path, method) in ADMIN_ROUTES:
            expected = admin_key or api_key
        else:
            expected = api_key
        if not expected:
            return 0
        scheme, sep, token = (self.headers.get("Authorization") or "").partition(" ")
        ok = bool(sep) and scheme.lower() == "bearer" and hmac.compare_digest(token.encode(), expected.encode())
        return 0 if ok else 401

    def _cors_preflight(self) -> None:
        # Starlette's CORSMiddleware as 0.5.9 configures it (allow_origins=["*"],
        # allow_credentials=True, allow_methods=["*"], allow_headers=["*"]).
        headers = {
            "Vary": "Origin",
            "Access-Control-Allow-Methods": "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT",
            "Access-Control-Max-Age": "600",
            "Access-Control-Allow-Credentials": "true",
            "Access-Control-Allow-Origin": self.headers.get("Origin") or "",
        }
        requested = self.headers.get("Access-Control-Request-Headers")
        if requested:
            headers["Access-Control-Allow-Headers"] = requested
        self._send(200, b"OK", "text/plain; charset=utf-8", headers)

    # ---- endpoints
    def health(self, _body: bytes) -> None:
        st = self.st
        if st.draining or not st.ready:
            self._send(503)
            return
        if st.dead_schedulers:
            time.sleep(st.health_timeout)
            logger.error(
                "Health check failed. Server couldn't get a response from detokenizer for last "
                "%d seconds.", int(st.health_timeout)
            )
            self._send(503)
            return
        time.sleep(st.health_delay)
        self._send(500 if "health_500" in st.modes else 200)

    def _model_card(self, name: str) -> Dict[str, Any]:
        return {"id": name, "object": "model", "created": self.st.created, "owned_by": "sglang",
                "root": name, "parent": None, "max_model_len": self.st.context_len}

    def models(self, _body: bytes) -> None:
        self._json(200, {"object": "list", "data": [self._model_card(self.st.server_args.served_model_name)]})

    def retrieve_model(self, name: str) -> None:
        if name != self.st.server_args.served_model_name:
            self._json(404, {"error": {"message": "The model '%s' does not exist" % name,
                                       "type": "invalid_request_error", "param": "model",
                                       "code": "model_not_found"}})
            return
        self._json(200, self._model_card(name))

    def server_info(self, _body: bytes) -> None:
        st = self.st
        info = dict(st.server_args.asdict())
        first = st.scheduler_infos[0] if st.scheduler_infos else {}
        info["max_total_num_tokens"] = first.get("max_total_num_tokens")
        info["max_req_input_len"] = first.get("max_req_input_len")
        info["internal_states"] = [
            {"dp_rank": load["dp_rank"], "last_gen_throughput": 0.0, "num_running_reqs": load["num_reqs"]}
            for load in st.loads()
        ]
        accept_length = st.avg_spec_accept_length()
        if accept_length is not None:
            # internal_state.py _add_speculative (0.5.23): only when a speculative algorithm runs and has verified
            for state in info["internal_states"]:
                state["avg_spec_accept_length"] = accept_length
        info["version"] = __version__
        self._json(200, info)

    def model_info(self, _body: bytes) -> None:
        sa, cfg = self.st.server_args, self.st.model_config
        self._json(200, {
            "model_path": sa.model_path,
            "tokenizer_path": sa.tokenizer_path,
            "is_generation": not sa.is_embedding,
            "preferred_sampling_params": sa.preferred_sampling_params,
            "weight_version": sa.weight_version,
            "has_image_understanding": False,
            "has_audio_understanding": False,
            "model_type": cfg.get("model_type"),
            "architectures": cfg.get("architectures"),
        })

    def get_load(self, _body: bytes) -> None:
        self._json(200, self.st.loads())

    def v1_loads(self, _body: bytes) -> None:
        """``GET /v1/loads[?dp_rank=N]`` as SGLang 0.5.23 answers it (``sglang/srt/entrypoints/v1_loads.py``
        ``get_loads``; each entry ``LoadSnapshot.to_dict`` of ``sglang/srt/managers/load_snapshot.py``, core keys):
        ``{"timestamp": ISO 8601, "version", "accelerator", "num_accelerators", "loads": [{"dp_rank",
        "num_running_reqs", "num_waiting_reqs", "num_used_tokens", "num_total_tokens", "max_running_requests",
        "token_usage", ...}, ...]}``, one entry per data-parallel rank. Unlike 0.5.9's ``/get_load`` (``num_reqs``:
        running, ``num_waiting_reqs``, ``num_tokens``), the counts are ``num_running_reqs`` and ``num_waiting_reqs``.
        A ``dp_rank`` that is not an integer is 422 (FastAPI), one no rank has gives an empty list."""
        query = urlsplit(self.path).query
        params = dict(p.partition("=")[::2] for p in query.split("&") if p)
        cap = self.st.server_args.max_running_requests or 2048
        want = params.get("dp_rank")
        if want is not None and not want.lstrip("-").isdigit():
            self._json(422, {"detail": [{"type": "int_parsing", "loc": ["query", "dp_rank"],
                                         "msg": "Input should be a valid integer, unable to parse string as an integer"}]})
            return
        loads = []
        for load in self.st.loads():
            if want is not None and load["dp_rank"] != int(want):
                continue
            used = load["num_tokens"]
            total = max(cap * 1024, 1)
            loads.append({
                "timestamp": time.time(), "dp_rank": load["dp_rank"],
                "num_running_reqs": load["num_reqs"], "num_waiting_reqs": load["num_waiting_reqs"],
                "num_waiting_uncached_tokens": 0, "num_used_tokens": used, "num_total_tokens": total,
                "num_active_tokens": total, "num_prealloc_ready_tokens": 0, "max_total_num_tokens": total,
                "max_running_requests": cap, "token_usage": round(used / float(total), 4),
                "gen_throughput": 0.0, "cache_hit_rate": 0.0, "utilization": 0.0,
                "total_prefill_uncached_tokens": 0, "total_prefill_busy_us": 0, "decode_moments": None,
            })
        self._json(200, {
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()), "version": __version__,
            "accelerator": None, "num_accelerators": self.st.server_args.tp_size,
            "loads": loads,
        })

    def metrics(self, _body: bytes) -> None:
        """GET /metrics (only with --enable-metrics; else 404 as on a real server, which mounts the route only then:
        SGLang 0.5.23 ``entrypoints/http_server.py`` ``if get_observability().enable_metrics: add_prometheus_middleware``).

        Prometheus text format with SGLang 0.5.23's names, types and labels (``srt/observability/metrics_collector.py``;
        the file was ``srt/metrics/collector.py`` in earlier releases):

        - scheduler gauges (``SchedulerMetricsCollector``), labels ``model_name`` (``--served-model-name``, else the
          model path), ``engine_type`` (``unified`` without disaggregation), ``tp_rank``, ``pp_rank``,
          ``moe_ep_rank``, and ``dp_rank`` with data parallelism: ``sglang:num_running_reqs``,
          ``sglang:num_queue_reqs``, ``sglang:gen_throughput`` (token/s), ``sglang:spec_accept_length`` (mean
          accepted tokens per verify step, bonus token included; 0 before the first step or without speculative
          decoding - the double leaves it out then), ``sglang:token_usage``;
        - tokenizer counters and a histogram (``TokenizerMetricsCollector``), labels ``model_name``, ``engine_type``
          (and ``is_streaming`` where SGLang has it): ``sglang:prompt_tokens_total``,
          ``sglang:generation_tokens_total``, ``sglang:num_requests_total``, ``sglang:time_to_first_token_seconds``
          (SGLang's default buckets, 0.1 s to 400 s).

        What the double does not do: one series per scheduler rank of a tp/pp group (it reports rank 0, the one
        SGLang reports unless ``--enable-metrics-for-all-schedulers``), the ``_created`` samples of prometheus_client,
        and the other hundred-odd metrics of the file.
        """
        st = self.st
        args = st.server_args
        base = 'model_name="%s",engine_type="unified"' % _label_value(args.served_model_name)
        lines = []

        def family(name, kind, doc):
            lines.append("# HELP %s %s" % (name, doc))
            lines.append("# TYPE %s %s" % (name, kind))

        loads = st.loads()
        usage = sum(load["num_tokens"] for load in loads) / float(max(st.context_len, 1))
        sched = []
        for load in loads:
            labels = base + ',tp_rank="0",pp_rank="0",moe_ep_rank="0"'
            if args.dp_size > 1:
                labels += ',dp_rank="%d"' % load["dp_rank"]
            sched.append((labels, load))
        family("sglang:num_running_reqs", "gauge", "The number of running requests.")
        lines.extend("sglang:num_running_reqs{%s} %d" % (lab, load["num_reqs"]) for lab, load in sched)
        family("sglang:num_queue_reqs", "gauge", "The number of requests in the waiting queue.")
        lines.extend("sglang:num_queue_reqs{%s} %d" % (lab, load["num_waiting_reqs"]) for lab, load in sched)
        family("sglang:gen_throughput", "gauge", "The generation throughput (token/s).")
        lines.extend("sglang:gen_throughput{%s} %s" % (lab, _num(st.gen_throughput)) for lab, _load in sched)
        family("sglang:token_usage", "gauge", "The token usage.")
        lines.extend("sglang:token_usage{%s} %s" % (lab, _num(usage)) for lab, _load in sched)
        accept = st.avg_spec_accept_length()
        if accept is not None:
            family("sglang:spec_accept_length", "gauge",
                   "Mean acceptance length of speculative decoding (accepted drafts + bonus token per forward).")
            lines.extend("sglang:spec_accept_length{%s} %s" % (lab, _num(accept)) for lab, _load in sched)
        with st.lock:
            prompt, generated, requests = st.prompt_tokens_total, st.generation_tokens_total, st.num_requests_total
            counts, total = list(st.ttft_counts), st.ttft_sum
        streaming = base + ',is_streaming="false"'
        family("sglang:prompt_tokens_total", "counter", "Number of prefill tokens processed.")
        lines.append("sglang:prompt_tokens_total{%s} %s" % (streaming, _num(prompt)))
        family("sglang:generation_tokens_total", "counter", "Number of generation tokens processed.")
        lines.append("sglang:generation_tokens_total{%s} %s" % (streaming, _num(generated)))
        family("sglang:num_requests_total", "counter", "The number of requests.")
        lines.append("sglang:num_requests_total{%s} %s" % (base, _num(requests)))
        family("sglang:time_to_first_token_seconds", "histogram", "Histogram of time to first token in seconds.")
        for bound, count in zip(TTFT_BUCKETS, counts):
            lines.append('sglang:time_to_first_token_seconds_bucket{%s,le="%s"} %s' % (streaming, _num(bound), _num(count)))
        lines.append('sglang:time_to_first_token_seconds_bucket{%s,le="+Inf"} %s' % (streaming, _num(requests)))
        lines.append("sglang:time_to_first_token_seconds_count{%s} %s" % (streaming, _num(requests)))
        lines.append("sglang:time_to_first_token_seconds_sum{%s} %s" % (streaming, _num(total)))
        self._send(200, ("\n".join(lines) + "\n").encode(), "text/plain; version=0.0.4; charset=utf-8")

    def flush_cache(self, _body: bytes) -> None:
        # 0.5.9 http_server.flush_cache: refused (400) while requests are running or waiting.
        busy = self.st.total_inflight() > 0
        self._send(400 if busy else 200, (
            "Cache flushed.\nPlease check backend logs for more details. (When there are running or "
            "waiting requests, the operation will not be performed.)\n").encode())

    def hicache_storage_backend(self, _body: bytes) -> None:
        # 0.5.9 http_server.hicache_storage_backend_status: 400 when no admin key was set.
        sa = self.st.server_args
        if not sa.admin_api_key:
            self._send(400, _compact({"error": ADMIN_KEY_MISSING}), "application/json")
            return
        self._send(200, _compact({
            "hicache_storage_backend": sa.hicache_storage_backend,
            "hicache_storage_backend_extra_config": sa.hicache_storage_backend_extra_config,
            "hicache_storage_prefetch_policy": sa.hicache_storage_prefetch_policy,
            "hicache_write_policy": sa.hicache_write_policy,
        }), "application/json")

    # ---- generation
    def _parse_json(self, body: bytes) -> Optional[Dict[str, Any]]:
        try:
            data = json.loads(body.decode("utf-8") or "null")
        except ValueError:
            data = None
        if not isinstance(data, dict):
            self._openai_error(400, "The request body must be a JSON object.", "BadRequestError")
            return None
        return data

    def _run_generation(self, prompt_tokens: int, decode_tokens: int = 0) -> bool:
        dp = self.st.begin_request(prompt_tokens)
        if dp is None:
            msg = "The server is shutting down." if self.st.draining else "The server is not ready yet (still warming up)."
            self._openai_error(503, msg, "ServiceUnavailableError")
            return False
        decode_seconds = self.st.decode(decode_tokens)
        try:
            time.sleep(self.st.generate_seconds + decode_seconds)
        finally:
            self.st.end_request(dp, prompt_tokens)
        self.st.count_request(prompt_tokens, decode_tokens, self.st.generate_seconds, decode_seconds)
        return True

    @staticmethod
    def _answer(max_tokens: Any, tokens: Optional[List[str]] = None, ignore_eos: bool = False) -> Tuple[str, int, str]:
        tokens = CANNED_TOKENS if tokens is None else tokens
        if ignore_eos and isinstance(max_tokens, int) and max_tokens > len(tokens):
            # SamplingParams.ignore_eos: generation goes on past the end of the answer, to max_tokens
            tokens = (tokens * (max_tokens // len(tokens) + 1))[:max_tokens]
            return "".join(tokens), max_tokens, "length"
        limit = len(tokens)
        if isinstance(max_tokens, int) and max_tokens >= 0:
            limit = min(limit, max_tokens)
        finish = "stop" if limit == len(tokens) else "length"
        return "".join(tokens[:limit]), limit, finish

    @staticmethod
    def _prompts(req: dict) -> Tuple[bool, List[int]]:
        """(batch, prompt token counts) of a /generate or /encode body: text or input_ids, one or a list."""
        texts = req.get("text", req.get("input_ids", ""))
        batch = bool(isinstance(texts, list) and texts and not isinstance(texts[0], int))
        items = texts if batch else [texts]
        return batch, [len(t) if isinstance(t, list) else _count_tokens(t) for t in items]

    def generate(self, body: bytes) -> None:
        req = self._parse_json(body)
        if req is None:
            return
        batch, prompt_tokens = self._prompts(req)
        params = req.get("sampling_params") or {}
        if isinstance(params, list):
            params = params[0] if params else {}
        started = time.time()
        if not self._run_generation(sum(prompt_tokens)):
            return
        text, n, finish = self._answer(params.get("max_new_tokens", 128))
        finish_reason = {"type": "stop", "matched": 151645} if finish == "stop" else {"type": "length", "length": n}
        results = [
            {
                "text": text,
                "output_ids": list(range(1000, 1000 + n)),
                "meta_info": {
                    "id": uuid.uuid4().hex,
                    "finish_reason": finish_reason,
                    "prompt_tokens": p,
                    "weight_version": self.st.server_args.weight_version,
                    "completion_tokens": n,
                    "cached_tokens": 0,
                    "e2e_latency": round(time.time() - started, 4),
                },
            }
            for p in prompt_tokens
        ]
        self._json(200, results if batch else results[0])

    def encode(self, body: bytes) -> None:
        """POST /encode (the warm-up request of an --is-embedding server): a fixed 8-float embedding."""
        req = self._parse_json(body)
        if req is None:
            return
        batch, prompt_tokens = self._prompts(req)
        if not self._run_generation(sum(prompt_tokens)):
            return
        results = [{"embedding": [round(0.125 * (i + 1), 3) for i in range(8)],
                    "meta_info": {"id": uuid.uuid4().hex, "prompt_tokens": p, "cached_tokens": 0,
                                  "weight_version": self.st.server_args.weight_version}}
                   for p in prompt_tokens]
        self._json(200, results if batch else results[0])

    def chat_completions(self, body: bytes) -> None:
        req = self._parse_json(body)
        if req is None:
            return
        messages = req.get("messages")
        if not isinstance(messages, list) or not messages:
            self._openai_error(400, "messages must be a non-empty list", "BadRequestError")
            return
        prompt = sum(_count_tokens(m.get("content", "") if isinstance(m, dict) else m) + 4 for m in messages)
        self._complete(req, prompt, chat=True)

    def completions(self, body: bytes) -> None:
        req = self._parse_json(body)
        if req is None:
            return
        if "prompt" not in req:
            self._openai_error(400, "prompt is required", "BadRequestError")
            return
        self._complete(req, _count_tokens(req["prompt"]), chat=False)

    def _complete(self, req: Dict[str, Any], prompt_tokens: int, chat: bool) -> None:
        if "chat_hangs" in self.st.modes:
            self._hang()
            return
        max_tokens = req.get("max_completion_tokens", req.get("max_tokens"))
        ignore_eos = req.get("ignore_eos") is True
        text, n, finish = self._answer(max_tokens, ignore_eos=ignore_eos)
        thinks = chat and self._thinks(req)
        thought = self._answer(max_tokens, THINKING_TOKENS + CANNED_TOKENS, ignore_eos) if thinks else None
        if not self._run_generation(prompt_tokens, thought[1] if thought else n):
            return
        rid = uuid.uuid4().hex
        model = req.get("model") or self.st.server_args.served_model_name
        usage = {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens + n,
                 "completion_tokens": n, "prompt_tokens_details": None}
        obj = "chat.completion" if chat else "text_completion"
        reasoning = None
        if thought:
            text, n, finish = thought
            usage.update(total_tokens=prompt_tokens + n, completion_tokens=n)
            if req.get("separate_reasoning", True):
                reasoning, text = _split_reasoning(text)
        if req.get("stream"):
            self._stream(rid, model, text, n, finish, usage, chat,
                         bool((req.get("stream_options") or {}).get("include_usage")), reasoning)
            return
        if chat:
            choice = {"index": 0, "message": {"role": "assistant", "content": text or None,
                                              "reasoning_content": reasoning or None, "tool_calls": None},
                      "logprobs": None, "finish_reason": finish, "matched_stop": None}
        else:
            choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish, "matched_stop": None}
        self._json(200, {"id": rid, "object": obj, "created": int(time.time()), "model": model,
                         "choices": [choice], "usage": usage})

    def _hang(self) -> None:
        """SGLANG_DOUBLE_FAIL=chat_hangs: an OpenAI completion is taken and never answered (/health and /generate,
        hence the warm-up, work). Held until the server drains (SIGTERM), then 503; the client's timeout ends it first."""
        logger.warning("SGLANG_DOUBLE_FAIL=chat_hangs: holding an OpenAI completion request without an answer")
        while not self.st.draining:
            time.sleep(0.2)
        self._openai_error(503, "The server is shutting down.", "ServiceUnavailableError")

    def _thinks(self, req: Dict[str, Any]) -> bool:
        """Whether a chat request gets the thinking model's reasoning first: a --reasoning-parser server, thinking not
        turned off by the request's chat_template_kwargs (``thinking`` or ``enable_thinking`` false)."""
        if not getattr(self.st.server_args, "reasoning_parser", None):
            return False
        kwargs = req.get("chat_template_kwargs") or {}
        return kwargs.get("thinking", kwargs.get("enable_thinking", True)) is not False

    def _stream(self, rid: str, model: str, text: str, n: int, finish: str,
                usage: Dict[str, Any], chat: bool, include_usage: bool, reasoning: Optional[str] = None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        obj = "chat.completion.chunk" if chat else "text_completion"
        pieces = [text] if reasoning is not None else CANNED_TOKENS[:n]

        def emit(payload: Dict[str, Any]) -> None:
            base = {"id": rid, "object": obj, "created": int(time.time()), "model": model}
            base.update(payload)
            self.wfile.write(b"data: " + json.dumps(base).encode() + b"\n\n")

        if reasoning:
            emit({"choices": [{"index": 0, "delta": {"role": "assistant", "reasoning_content": reasoning},
                               "logprobs": None, "finish_reason": None}], "usage": None})
        if reasoning is not None and not text:
            pieces = []
            emit({"choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": finish}], "usage": None})
        for i, piece in enumerate(pieces):
            last = i == len(pieces) - 1
            if chat:
                delta = {"role": "assistant", "content": piece} if i == 0 else {"content": piece}
                choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish if last else None}
            else:
                choice = {"index": 0, "text": piece, "logprobs": None, "finish_reason": finish if last else None}
            emit({"choices": [choice], "usage": None})
        if include_usage:
            emit({"choices": [], "usage": usage})
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


def _split_reasoning(text: str) -> Tuple[str, str]:
    """(reasoning, content) of a thinking model's text, as SGLang's reasoning parser splits it (non-streaming):
    everything up to ``</think>`` (without ``<think>``) is reasoning; without ``</think>``, all of it."""
    body = text[len("<think>"):] if text.startswith("<think>") else text
    reasoning, sep, content = body.partition("</think>")
    return reasoning, content if sep else ""


class _DummyHealthHandler(_Handler):
    """Non-zero node ranks: /health and /health_generate answer 200, nothing else."""

    def _dispatch(self, method: str) -> None:
        path = urlsplit(self.path).path
        self._read_body()
        if path in ("/health", "/health_generate") and method == "GET":
            self._send(200)
            return
        self._json(404, {"detail": "Not Found"})


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 2048
    ssl_context: Optional[ssl.SSLContext] = None

    def get_request(self):
        sock, addr = super().get_request()
        if self.ssl_context is not None:
            # the handshake runs in the request's thread (finish_request), not in the accept loop
            sock = self.ssl_context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, addr

    def finish_request(self, request, client_address) -> None:
        if self.ssl_context is not None:
            try:
                request.settimeout(10.0)
                request.do_handshake()
                request.settimeout(None)
            except (ssl.SSLError, OSError):
                # plain HTTP (or a failed handshake) on the TLS port: the connection is
                # closed without an HTTP answer, as uvicorn's SSL transport does
                return
        super().finish_request(request, client_address)


def make_ssl_context(sa) -> ssl.SSLContext:
    """The server context uvicorn builds from 0.5.10's ssl_* arguments (uvicorn.config.create_ssl_context).

    TLS server, certificate chain from --ssl-certfile/--ssl-keyfile (key password
    --ssl-keyfile-password), no client certificate asked for (uvicorn's default
    ssl_cert_reqs CERT_NONE), --ssl-ca-certs loaded as verify locations.
    """
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    password = sa.ssl_keyfile_password
    ctx.load_cert_chain(sa.ssl_certfile, sa.ssl_keyfile, (lambda: password) if password else None)
    ctx.verify_mode = ssl.CERT_NONE
    if sa.ssl_ca_certs:
        ctx.load_verify_locations(sa.ssl_ca_certs)
    return ctx


class _SSLRefresher(threading.Thread):
    """--enable-ssl-refresh: reload the chain when the files change (0.5.10 entrypoints/ssl_utils.py
    SSLCertRefresher; it watches with watchfiles, the double polls mtimes every 0.5 s).
    As there, the reload passes no key password and a failed reload keeps the old chain."""

    def __init__(self, ctx: ssl.SSLContext, key: str, cert: str, ca: Optional[str]):
        super().__init__(name="ssl-refresh", daemon=True)
        self.ctx, self.key, self.cert, self.ca = ctx, key, cert, ca
        self.stamps = self._stamps()

    def _stamp(self, path: Optional[str]):
        try:
            st = os.stat(path) if path else None
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino) if st else None

    def _stamps(self):
        return [self._stamp(self.cert), self._stamp(self.key), self._stamp(self.ca)]

    def run(self) -> None:
        while True:
            time.sleep(0.5)
            now = self._stamps()
            if now[:2] != self.stamps[:2]:
                logger.info("SSL cert/key file change detected, reloading: cert=%s key=%s", self.cert, self.key)
                try:
                    self.ctx.load_cert_chain(self.cert, self.key)
                    logger.info("SSL cert/key reloaded successfully.")
                except Exception:  # noqa: BLE001
                    logger.exception("Failed to reload SSL cert/key \u2014 continuing with previous certificates.")
            if self.ca and now[2] != self.stamps[2]:
                logger.info("SSL CA file change detected, reloading: ca=%s", self.ca)
                try:
                    self.ctx.load_verify_locations(self.ca)
                    logger.info("SSL CA certificates reloaded successfully.")
                except Exception:  # noqa: BLE001
                    logger.exception("Failed to reload SSL CA certificates \u2014 continuing with previous CA bundle.")
            self.stamps = now


def _make_httpd(host: str, port: int, handler, state: ServerState,
                ssl_context: Optional[ssl.SSLContext] = None) -> _HTTPServer:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET

    class _Server(_HTTPServer):
        address_family = family

    httpd = _Server((host, port), handler)
    httpd.ssl_context = ssl_context
    httpd.double_state = state  # type: ignore[attr-defined]
    level = (state.server_args.log_level_http or state.server_args.log_level or "info").lower()
    httpd.access_log = level in ("debug", "info", "trace")  # type: ignore[attr-defined]
    return httpd


# --------------------------------------------------------------------------- warm-up client
# SGLang's warm-up thread uses ``requests``; the double has only urllib. urllib's default opener
# does not choose the proxy as requests does (it ignores ALL_PROXY, CIDR entries in NO_PROXY and
# an empty no_proxy that should give way to NO_PROXY, and it snapshots the environment the first
# time it is used), so the choice is made here as requests 2.x does it and urllib only carries
# the request, through exactly that proxy or none. Errors are raised as requests' exceptions
# (same names and message shapes), so that the warm-up error line reads like SGLang's.
class RequestException(IOError):
    """requests.exceptions.RequestException, for the warm-up error line."""


class RequestsConnectionError(RequestException):
    pass


class ProxyError(RequestsConnectionError):
    pass


class RequestsSSLError(RequestsConnectionError):
    pass


class ConnectTimeout(RequestsConnectionError):
    pass


class ReadTimeout(RequestException):
    pass


class InvalidSchema(RequestException, ValueError):
    pass


for _cls, _name in ((RequestException, "RequestException"), (RequestsConnectionError, "ConnectionError"),
                    (ProxyError, "ProxyError"), (RequestsSSLError, "SSLError"), (ConnectTimeout, "ConnectTimeout"),
                    (ReadTimeout, "ReadTimeout"), (InvalidSchema, "InvalidSchema")):
    _cls.__module__, _cls.__name__, _cls.__qualname__ = "requests.exceptions", _name, _name


def nccl_port(sa) -> int:
    """The port of the schedulers' NCCL rendezvous: ``--nccl-port``, else a free port above ``--port`` (SGLang's
    ``PortArgs.init_new`` takes ``port + random.randint(100, 1000)`` and probes it; the double takes the first free
    one from ``port + 100`` so that runs are repeatable)."""
    if sa.nccl_port:
        return int(sa.nccl_port)
    for candidate in range(sa.port + 100, sa.port + 1000):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", candidate))
            except OSError:
                continue
            return candidate
    raise RuntimeError("no free port between %d and %d for NCCL" % (sa.port + 100, sa.port + 1000))


def _is_ipv4(text: str) -> bool:
    try:
        socket.inet_aton(text)
    except OSError:
        return False
    return True


def _in_cidr(ip: str, net: str) -> Optional[bool]:
    """None when ``net`` is no CIDR by requests' rules (one "/", mask 1..32, inet_aton address)."""
    if net.count("/") != 1:
        return None
    addr, bits = net.split("/")
    try:
        mask_bits = int(bits)
    except ValueError:
        return None
    if not 1 <= mask_bits <= 32 or not _is_ipv4(addr):
        return None
    mask = (0xFFFFFFFF << (32 - mask_bits)) & 0xFFFFFFFF
    ip_n = struct.unpack(">L", socket.inet_aton(ip))[0]
    net_n = struct.unpack(">L", socket.inet_aton(addr))[0]
    return (ip_n & mask) == (net_n & mask)


def proxy_for(url: str) -> Optional[str]:
    """The proxy ``requests.get(url)`` goes through with this process's environment, or None.

    requests 2.x (trust_env): utils.should_bypass_proxies (no_proxy, else NO_PROXY; an IPv4 host
    matches an entry equal to it or a CIDR holding it, another host one it ends with, with or
    without :port; then urllib's proxy_bypass, which also knows ``*``), else urllib's getproxies
    (``<scheme>_proxy`` of either case, lower case first) and utils.select_proxy (scheme, then
    ``all``); a proxy without scheme gets http://.
    """
    parts = urlsplit(url)
    host = parts.hostname
    if host is None:
        return None
    no_proxy = os.environ.get("no_proxy") or os.environ.get("NO_PROXY")
    if no_proxy:
        entries = [e for e in no_proxy.replace(" ", "").split(",") if e]
        if _is_ipv4(host):
            for entry in entries:
                inside = _in_cidr(host, entry)
                if inside or (inside is None and host == entry):
                    return None
        else:
            host_port = host + (":%d" % parts.port if parts.port else "")
            if any(host.endswith(e) or host_port.endswith(e) for e in entries):
                return None
    try:
        if urllib.request.proxy_bypass(host):
            return None
    except (TypeError, socket.gaierror):
        pass
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if proxy and "://" not in proxy:
        proxy = "http://" + proxy
    return proxy or None


def _pool(scheme: str, host: Optional[str], port: Optional[int]) -> str:
    return "%sConnectionPool(host=%r, port=%s)" % ("HTTPS" if scheme == "https" else "HTTP", host,
                                                   port or (443 if scheme == "https" else 80))


def _conn(scheme: str, host: Optional[str], port: Optional[int]) -> str:
    return "%sConnection(host=%r, port=%s)" % ("HTTPS" if scheme == "https" else "HTTP", host,
                                               port or (443 if scheme == "https" else 80))


def _conn_error(conn: str, host: Optional[str], reason: BaseException) -> str:
    """urllib3's NameResolutionError/NewConnectionError text for a failed connect, else the error's repr."""
    if isinstance(reason, socket.gaierror):
        return "NameResolutionError(\"%s: Failed to resolve '%s' (%s)\")" % (conn, host, reason)
    if getattr(reason, "errno", None) is not None:
        return "NewConnectionError(\"%s: Failed to establish a new connection: %s\")" % (conn, reason)
    return repr(reason)


def warmup_request(method: str, url: str, headers: Dict[str, str], timeout: float,
                   json_body: Any = None, ca_certs: Optional[str] = None) -> Tuple[int, bytes]:
    """(status, body) of one request as ``requests`` would make it, or a requests-named exception.

    https: verified against ``ca_certs`` (file or directory, host name checked) when given, else
    not verified (0.5.10's ServerArgs.ssl_verify()).
    """
    parts = urlsplit(url)
    proxy = proxy_for(url)
    if proxy and proxy.lower().startswith("socks"):
        raise InvalidSchema("Missing dependencies for SOCKS support.")
    handlers: List[Any] = [urllib.request.ProxyHandler({parts.scheme: proxy} if proxy else {})]
    if parts.scheme == "https":
        if ca_certs:
            ctx = ssl.create_default_context(**({"capath": ca_certs} if os.path.isdir(ca_certs)
                                                else {"cafile": ca_certs}))
        else:
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        handlers.append(urllib.request.HTTPSHandler(context=ctx))
    opener = urllib.request.build_opener(*handlers)
    data = None
    hdrs = {"Accept": "*/*", **headers}
    if json_body is not None:
        data = json.dumps(json_body).encode()
        hdrs["Content-Type"] = "application/json"
    req = urllib.request.Request(url, data=data, headers=hdrs, method=method)
    target = urlsplit(proxy) if proxy and parts.scheme == "http" else parts
    where = url if target is not parts else (parts.path or "/")
    try:
        with opener.open(req, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
    except urllib.error.URLError as exc:
        reason = exc.reason if isinstance(exc.reason, BaseException) else OSError(str(exc.reason))
        pool = _pool(target.scheme, target.hostname, target.port)
        if isinstance(reason, ssl.SSLError):
            raise RequestsSSLError("%s: Max retries exceeded with url: %s (Caused by SSLError(%r))"
                                   % (pool, where, reason)) from exc
        if proxy:
            proxied = urlsplit(proxy)
            cause = _conn_error(_conn(parts.scheme, proxied.hostname, proxied.port), proxied.hostname, reason)
            raise ProxyError("%s: Max retries exceeded with url: %s (Caused by ProxyError('Unable to connect "
                             "to proxy', %s))" % (pool, where, cause)) from exc
        conn = _conn(parts.scheme, parts.hostname, parts.port)
        if isinstance(reason, (socket.timeout, TimeoutError)):
            raise ConnectTimeout("%s: Max retries exceeded with url: %s (Caused by ConnectTimeoutError(%s, "
                                 "'Connection to %s timed out. (connect timeout=%s)'))"
                                 % (pool, where, conn, parts.hostname, timeout)) from exc
        raise RequestsConnectionError("%s: Max retries exceeded with url: %s (Caused by %s)"
                                      % (pool, where, _conn_error(conn, parts.hostname, reason))) from exc
    except (socket.timeout, TimeoutError) as exc:
        raise ReadTimeout("%s: Read timed out. (read timeout=%s)"
                          % (_pool(target.scheme, target.hostname, target.port), timeout)) from exc
    except (http.client.HTTPException, ConnectionError, OSError) as exc:
        raise RequestsConnectionError("('Connection aborted.', %r)" % exc) from exc


# --------------------------------------------------------------------------- launcher
class _Launcher:
    def __init__(self, server_args):
        self.sa = server_args
        self.t0 = time.time()
        self.argv = read_cmdline()
        self.modes = fail_modes()
        self.exit_style = (os.environ.get("SGLANG_DOUBLE_EXIT_STYLE") or "clean").strip().lower()
        self.stop_signal: Optional[int] = None
        self.quit_received = False
        self.procs: List[Any] = []
        self.known_pids: List[int] = []
        self.scheduler_pids: List[int] = []
        self.state_extra: Dict[str, Any] = {}
        # set by the warm-up thread: None while it runs, then ("ok"|"skipped"|"failed", traceback)
        self.warmup_result: Optional[Tuple[str, Optional[str]]] = None
        self.warmup_info: Dict[str, Any] = {}

    # ---- helpers
    def _on_stop(self, signum, _frame) -> None:
        if self.stop_signal is None:
            self.stop_signal = signum

    def _on_quit(self, _signum, _frame) -> None:
        self.quit_received = True

    def record(self, **extra: Any) -> None:
        self.state_extra.update(extra)
        write_state(self.sa.port, "main", self.state_extra, argv=self.argv)

    def tree(self) -> List[int]:
        pids = descendants(os.getpid())
        for pid in self.known_pids + self.scheduler_pids:
            if pid not in pids and pid_alive(pid):
                pids.append(pid)
        return pids

    @staticmethod
    def terminate_tree(pids: List[int]) -> List[int]:
        """SIGTERM, 2 s grace, SIGKILL; returns the pids that needed SIGKILL.

        multiprocessing's resource tracker ignores SIGTERM by design, so it is
        SIGKILLed at once (as SGLang's kill_process_tree does with everything).
        """
        trackers = [p for p in pids if "multiprocessing.resource_tracker" in " ".join(read_cmdline(p))]
        killed = terminate_pids([p for p in pids if p not in trackers], grace=2.0)
        kill_pids(trackers)
        return killed

    def exit(self, code: int, kill_self: bool = False) -> None:
        """Leave without multiprocessing's atexit joins; SIGKILL self in sglang exit style."""
        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        if kill_self and self.exit_style == "sglang":
            os.kill(os.getpid(), signal.SIGKILL)
        os._exit(code)

    def fail(self, code: int = 1) -> None:
        """A child failed or the load crashed: kill the whole tree (SGLang's kill_process_tree)."""
        kill_pids(self.tree())
        self.record(phase="failed")
        self.exit(code, kill_self=self.quit_received)

    def warmup_failed(self) -> None:
        """0.5.9 _execute_server_warmup after its error line: kill_process_tree(os.getpid()), i.e.
        SIGKILL to every descendant, then to the launcher itself (SGLANG_DOUBLE_EXIT_STYLE=sglang;
        the clean style exits 1 instead)."""
        kill_pids(self.tree())
        self.record(phase="failed", warmup=dict(self.warmup_info))
        self.exit(1, kill_self=True)

    def _wait_and_warmup(self) -> None:
        """SGLang's warm-up thread (http_server._wait_and_warmup / _execute_server_warmup, 0.5.9;
        https and its verification as 0.5.10), run once the port is open.

        Up to SGLANG_DOUBLE_WARMUP_TRIES (SGLang: 120) times: sleep, then GET <url>/get_model_info
        (timeout 5 s, the api key as Bearer token) until it answers 200; then POST /generate (/encode
        for --is-embedding) with "The capital city of France is" (one per dp rank when dp > 1),
        temperature 0, max_new_tokens 8 (1 for /encode), timeout 600 s. <url> is ServerArgs.url(),
        e.g. http://0.0.0.0:30000 for --host 0.0.0.0, and the requests honour the proxy variables
        as ``requests`` does (see proxy_for): with http_proxy set and no no_proxy entry for the
        host, the warm-up goes to the proxy. A failure is logged as "Initialization failed. warmup
        error: <traceback>" and the main loop ends the server. A /get_model_info answer that is
        not SGLang's JSON ends this thread with an uncaught exception, as in SGLang (logged by
        threading's excepthook): the server then never becomes ready.
        """
        sa = self.sa
        url = sa.url()
        headers = {"Authorization": "Bearer %s" % sa.api_key} if sa.api_key else {}
        ca_certs = getattr(sa, "ssl_ca_certs", None)
        tries = max(int(env_float("SGLANG_DOUBLE_WARMUP_TRIES", 120.0)), 1)
        # SGLang sleeps 1 s before every try. The double sleeps min(1 s, SGLANG_DOUBLE_WARMUP_SECONDS)
        # (at least 0.05 s) so that tests, which set a short warm-up to start servers quickly, are
        # not slowed down to 1 s per start and a failing warm-up (SGLANG_DOUBLE_WARMUP_TRIES=2)
        # ends in well under a second; with the default warm-up of 1 s it is SGLang's 1 s.
        interval = max(0.05, min(1.0, env_float("SGLANG_DOUBLE_WARMUP_SECONDS", 1.0)))
        self.warmup_info = {"url": url, "proxy": proxy_for(url + "/get_model_info"), "tries": 0,
                            "max_tries": tries, "interval": interval, "result": "running"}
        last_traceback = None
        model_info_body = None
        for dummy in range(tries):
            time.sleep(interval)
            self.warmup_info["tries"] += 1
            try:
                status, body = warmup_request("GET", url + "/get_model_info", headers, 5, ca_certs=ca_certs)
                assert status == 200, "res=<Response [%d]>, res.text=%r" % (status, body.decode("utf-8", "replace"))
                model_info_body = body
                break
            except (AssertionError, RequestException):
                last_traceback = traceback.format_exc()
        if model_info_body is None:
            self._warmup_error(last_traceback)
            return

        model_info = json.loads(model_info_body)  # requests' res.json(); not caught there either
        is_generation = model_info["is_generation"]
        request_name = "/generate" if is_generation else "/encode"
        dp = max(sa.dp_size, 1)
        json_data: Dict[str, Any] = {"sampling_params": {"temperature": 0,
                                                         "max_new_tokens": 8 if is_generation else 1}}
        if getattr(sa, "skip_tokenizer_init", False):
            json_data["input_ids"] = [[10, 11, 12] for dummy in range(dp)] if dp > 1 else [10, 11, 12]
        else:
            json_data["text"] = ["The capital city of France is"] * dp if dp > 1 else "The capital city of France is"
        if "never_healthy" in self.modes:
            # SGLANG_DOUBLE_FAIL=never_healthy: the warm-up generation never comes back, so the
            # server never goes Up and never logs "fired up" (nor does it die).
            self.warmup_info["result"] = "hung"
            return
        pd = (getattr(sa, "disaggregation_mode", None) or "null") != "null"
        try:
            if not pd:
                status, body = warmup_request("POST", url + request_name, headers, 600, json_body=json_data,
                                              ca_certs=ca_certs)
                assert status == 200, "<Response [%d]>" % status
            else:
                logger.info("Start of pd disaggregation warmup ...")
                tp = max(sa.tp_size, 1)
                json_data = {
                    "sampling_params": {"temperature": 0.0, "max_new_tokens": 8, "ignore_eos": True},
                    "bootstrap_host": ["2.2.2.2"] * dp,  # FAKE_BOOTSTRAP_HOST
                    "bootstrap_room": [i * (2 ** 63 // dp) + (i % tp) for i in range(dp)],
                    "input_ids": [[0, 1, 2, 3]] * dp,
                }
                status, body = warmup_request("POST", url + request_name, headers, 1800, json_body=json_data,
                                              ca_certs=ca_certs)
                if status == 200:
                    logger.info("End of prefill disaggregation mode warmup with status %d, resp: %s",
                                status, json.loads(body))
                else:
                    logger.info("Prefill disaggregation mode warm Up Failed, status code: %d", status)
        except Exception:  # noqa: BLE001 - as SGLang
            self._warmup_error(traceback.format_exc())
            return
        self.warmup_info["result"] = "ok"
        self.warmup_result = ("ok", None)

    def _warmup_error(self, last_traceback: Optional[str]) -> None:
        logger.error("Initialization failed. warmup error: %s", last_traceback)
        self.warmup_info["result"] = "failed"
        self.warmup_info["error"] = ((last_traceback or "").rstrip().splitlines() or [""])[-1]
        self.warmup_result = ("failed", last_traceback)

    # ---- phases
    def run(self) -> None:
        sa = self.sa
        configure_logger(sa.log_level)
        unknown = sorted(self.modes - set(KNOWN_FAIL_MODES))
        if unknown:
            logger.warning("Unknown SGLANG_DOUBLE_FAIL mode(s) ignored: %s", ", ".join(unknown))
        model_config = check_model_dir(sa.model_path)
        if sa.speculative_draft_model_path:
            check_model_dir(sa.speculative_draft_model_path, what="speculative draft model")
        # 0.5.9 entrypoints/engine.py _launch_subprocesses (run by http_server.launch_server):
        # logger.info(f"{server_args=}") at INFO right after configure_logger, i.e.
        # "[<time>] server_args=ServerArgs(model_path='...', ..., api_key='...', ...)" with every
        # field's repr, secrets (api_key, admin_api_key, ssl_keyfile_password) in clear text.
        # (A bad model path fails in 0.5.9's prepare_server_args, before this line.)
        logger.info("server_args=%r", sa)
        signal.signal(signal.SIGTERM, self._on_stop)
        signal.signal(signal.SIGINT, self._on_stop)
        signal.signal(signal.SIGQUIT, self._on_quit)
        self.record(phase="loading", port=sa.port, host=sa.host, version=__version__,
                    fail_modes=sorted(self.modes), exit_style=self.exit_style,
                    server_args=sa.asdict())

        if sa.nnodes > 1 and sa.dist_init_addr:
            self.join_ranks()
        elif sa.nnodes > 1:
            logger.warning("--nnodes %d without --dist-init-addr: no rendezvous.", sa.nnodes)
        infos = self.launch_children()
        tool_checks = {i["role"]: i.get("tool_checks") for i in infos}
        first = infos[0].get("tool_checks") if infos else None
        self.scheduler_pids = [i["pid"] for i in infos]
        self.record(phase="loaded", tool_checks=first, tool_checks_by_role=tool_checks,
                    schedulers=[{"role": i["role"], "pid": i["pid"], "gpu_id": i["gpu_id"]} for i in infos])
        state = ServerState(sa, model_config, infos)
        if sa.node_rank >= 1:
            self.serve(state, _DummyHealthHandler, dummy=True)
        else:
            self.serve(state, _Handler, dummy=False)

    def join_ranks(self) -> None:
        sa = self.sa
        logger.info("Init torch distributed begin. nnodes=%d node_rank=%d dist_init_addr=%s",
                    sa.nnodes, sa.node_rank, sa.dist_init_addr)
        try:
            info = rendezvous(sa.dist_init_addr, sa.nnodes, sa.node_rank,
                              env_float("SGLANG_DOUBLE_RENDEZVOUS_TIMEOUT", 60.0), self._abort_reason)
        except RendezvousAborted as exc:
            self.stop_during_load(str(exc))
            return
        except (RendezvousTimeout, ValueError, OSError) as exc:
            logger.error("%s", exc)
            self.fail(1)
            return
        logger.info("Init torch distributed ends. %d/%d ranks joined in %.1f s.",
                    len(info["peers"]) + 1 if sa.node_rank == 0 else sa.nnodes, sa.nnodes, info["seconds"])
        self.record(rendezvous=info)

    def launch_children(self) -> List[Dict[str, Any]]:
        sa = self.sa
        ctx = mp.get_context("spawn")
        readers = []
        if sa.dp_size == 1:
            opts = {"pdeathsig": True, "nccl_port": nccl_port(sa)}
            for rank in plan_tp_group(sa, 0, None):
                reader, writer = ctx.Pipe(duplex=False)
                proc = ctx.Process(target=run_scheduler_process,
                                   args=(sa, rank, self.t0, writer, opts))
                proc.start()
                writer.close()
                self.procs.append(proc)
                readers.append(reader)
        else:
            reader, writer = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=run_data_parallel_controller_process, args=(sa, self.t0, writer))
            proc.start()
            writer.close()
            self.procs.append(proc)
            readers.append(reader)
            self.state_extra["controller_pid"] = proc.pid
        waiting_procs = list(self.procs)
        if sa.node_rank == 0:
            detok = ctx.Process(target=run_detokenizer_process, args=(sa,))
            detok.start()
            self.procs.append(detok)
            self.state_extra["detokenizer_pid"] = detok.pid
        self.known_pids = [p.pid for p in self.procs]
        self.record(children=self.known_pids)

        crash_at = self.t0 + env_float("SGLANG_DOUBLE_LOAD_SECONDS", 3.0) / 2
        try:
            if "crash_during_load" in self.modes:
                def abort_check() -> Optional[str]:
                    if time.time() >= crash_at:
                        raise SimulatedCrash(
                            "SGLANG_DOUBLE_FAIL=crash_during_load: simulated crash while loading "
                            "the model weights"
                        )
                    return self._abort_reason()
            else:
                abort_check = self._abort_reason
            infos = wait_for_scheduler_ready(readers, waiting_procs, abort_check)
        except LaunchAbortedError as exc:
            if self.quit_received:
                logger.error("Received sigquit from a child process. It usually means the child failed.")
                self.fail(1)
            self.stop_during_load(str(exc))
        except SchedulerDeadError as exc:
            if self.quit_received:
                logger.error("Received sigquit from a child process. It usually means the child failed.")
            logger.error("Rank %d scheduler is dead. Please check if there are relevant logs.", exc.index)
            logger.error("Exit code: %s", exc.exitcode)
            logger.error("%s", traceback.format_exc().rstrip())
            self.fail(1)
        except SimulatedCrash:
            logger.error("%s", traceback.format_exc().rstrip())
            self.fail(1)
        infos_flat: List[Dict[str, Any]] = []
        for info in infos:
            infos_flat.extend(info.get("schedulers", [info]))
        return infos_flat

    def _abort_reason(self) -> Optional[str]:
        if self.quit_received:
            return "SIGQUIT from a child process"
        if self.stop_signal is not None:
            return "signal %d" % self.stop_signal
        return None

    def stop_during_load(self, reason: str) -> None:
        logger.info("Received %s while loading; stopping.", reason)
        self.terminate_tree(self.tree())
        self.record(phase="stopped")
        if self.exit_style == "sglang" and self.stop_signal is not None:
            logging.shutdown()
            signal.signal(self.stop_signal, signal.SIG_DFL)
            os.kill(os.getpid(), self.stop_signal)
            time.sleep(1)
        self.exit(0)

    def serve(self, state: ServerState, handler, dummy: bool) -> None:
        sa = self.sa
        ulog = uvicorn_logger()
        ssl_context = None
        if getattr(sa, "ssl_certfile", None):
            # 0.5.10 http_server.launch_server: this line, then uvicorn.run(..., ssl_*=...),
            # which builds the context before it binds the port.
            logger.info("SSL enabled: certfile=%s, keyfile=%s", sa.ssl_certfile, sa.ssl_keyfile)
            try:
                ssl_context = make_ssl_context(sa)
            except (ssl.SSLError, OSError, ValueError):
                logger.error("%s", traceback.format_exc().rstrip())
                self.fail(1)
                return
            if sa.enable_ssl_refresh:
                _SSLRefresher(ssl_context, sa.ssl_keyfile, sa.ssl_certfile, sa.ssl_ca_certs).start()
                logger.info("SSL certificate auto-refresh enabled.")
        try:
            httpd = _make_httpd(sa.host, sa.port, handler, state, ssl_context)
        except OSError as exc:
            ulog.error("[Errno %s] error while attempting to bind on address (%r, %d): %s",
                       exc.errno, sa.host, sa.port, (exc.strerror or str(exc)).lower())
            self.fail(3)
            return
        except (OverflowError, ValueError) as exc:
            ulog.error("error while attempting to bind on address (%r, %d): %s", sa.host, sa.port, exc)
            self.fail(3)
            return
        thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                  name="http", daemon=True)
        thread.start()
        ulog.info("Started server process [%d]", os.getpid())
        ulog.info("Waiting for application startup.")
        ulog.info("Application startup complete.")
        ulog.info("Uvicorn running on %s (Press CTRL+C to quit)", sa.url())
        ready_at = time.time() + env_float("SGLANG_DOUBLE_WARMUP_SECONDS", 1.0)
        if ssl_context is not None and not sa.ssl_ca_certs and not sa.skip_server_warmup and not dummy:
            # 0.5.10 ServerArgs.ssl_verify, called by the warm-up requests
            logging.getLogger("sglang.srt.server_args").warning(
                "SSL is enabled but --ssl-ca-certs was not provided. Certificate verification is "
                "DISABLED for internal health checks. For production deployments, provide "
                "--ssl-ca-certs or use CA-signed certificates.")
        if dummy:
            state.ready = True
            self.record(phase="ready")
        else:
            state.accepting = "never_healthy" not in self.modes
            if sa.skip_server_warmup:
                self.warmup_info = {"result": "skipped"}
                self.warmup_result = ("skipped", None)
            else:
                threading.Thread(target=self._wait_and_warmup, daemon=True).start()
            self.record(phase="warmup")
        next_check = 0.0
        while self.stop_signal is None:
            if self.quit_received:
                logger.error("SIGQUIT received. It usually means one child failed.")
                self.fail(1)
            if self.warmup_result is not None and self.warmup_result[0] == "failed":
                self.warmup_failed()
            now = time.time()
            if not state.ready and now >= ready_at and self.warmup_result is not None \
                    and "never_healthy" not in self.modes:
                state.ready = True
                self.record(phase="ready", warmup=dict(self.warmup_info))
                logger.info("The server is fired up and ready to roll!")
            if now >= next_check:
                next_check = now + 0.2
                reap_children()
                dead = [p for p in self.scheduler_pids if not pid_alive(p)]
                if dead != state.dead_schedulers:
                    state.dead_schedulers = dead
                    self.record(dead_schedulers=dead)
            time.sleep(0.05)
        self.shutdown(httpd, state)

    def shutdown(self, httpd: _HTTPServer, state: ServerState) -> None:
        with state.lock:
            state.draining = True
        self.record(phase="draining")
        drain = env_float("SGLANG_DOUBLE_DRAIN_SECONDS", 5.0)
        deadline = time.time() + drain
        remaining = state.total_inflight()
        logger.info("Gracefully exiting... Remaining number of requests %d.", remaining)
        last_log = time.time()
        while remaining and time.time() < deadline:
            time.sleep(0.02)
            remaining = state.total_inflight()
            if time.time() - last_log >= 1.0:
                logger.info("Gracefully exiting... Remaining number of requests %d.", remaining)
                last_log = time.time()
        if remaining:
            logger.warning("Drain timeout (%.1f s) reached with %d request(s) in flight.", drain, remaining)
        httpd.shutdown()
        httpd.server_close()
        pids = self.tree()
        if self.exit_style == "sglang":
            kill_pids(pids)
            self.record(phase="stopped")
            self.exit(0, kill_self=True)
        killed = self.terminate_tree(pids)
        if killed:
            logger.warning("Child process(es) %s ignored SIGTERM and were killed.", killed)
        self.record(phase="stopped")
        logger.info("Shutdown complete.")
        self.exit(0)


def launch_server(server_args) -> None:
    """Run the server until SIGTERM/SIGINT; exits the process.

    Whatever goes wrong, the children are killed before the launcher exits
    (SGLang's launch_server does the same with kill_process_tree in a finally).
    """
    launcher = _Launcher(server_args)
    try:
        launcher.run()
    except BaseException:  # noqa: BLE001 - includes KeyboardInterrupt before handlers exist
        logger.error("%s", traceback.format_exc().rstrip())
        launcher.fail(1)
