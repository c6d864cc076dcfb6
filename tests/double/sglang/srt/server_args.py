"""Server arguments of the SGLang test double.

The flags are spelled, typed and defaulted as in SGLang 0.5.9's
``sglang.srt.server_args`` so that a command line can be validated against
the double exactly as against real SGLang::

    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    parser.parse_args(argv)        # unknown flag -> argparse error, exit 2

Like SGLang, the primary spelling of the parallelism sizes is the long one
(``--tensor-parallel-size``) with the short one as alias (``--tp-size``), so
``--tp`` is accepted only through argparse's prefix matching, exactly as in
SGLang. The table below is a large subset of 0.5.9's ~330 flags; prefix
matching can therefore accept an abbreviation that real SGLang finds
ambiguous (see README.md).

``--config FILE`` is merged as 0.5.9's ``prepare_server_args`` does (see
``server_args_config_parser``). A flag marked ``since=V`` exists from version
V of the double on (``sglang.version.__version__``), one marked ``until=V``
only before V: the build 0.5.10 lacks ``--cuda-graph-max-bs`` (an unknown
flag there: argparse error, exit 2, also as a ``--config`` key) and has
0.5.10's TLS flags, which 0.5.9 gets only with ``SGLANG_DOUBLE_SSL=1``.

The spec v2 environment switch is read by ``sglang/srt/spec_v2.py``, which the
builds from 0.5.10 on do not have (``sglang.version.DROPPED_MODULES``).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shlex
import warnings
from typing import Any, Dict, List, Optional

from sglang import version as _version
if _version.at_least("0.5.19"):  # SGLang 0.5.19 moved it under sglang/srt/utils/ (0.5.23's prepare_server_args)
    from sglang.srt.utils.server_args_config_parser import ConfigSubsetError, merge_config_with_args
else:  # SGLang 0.5.9's prepare_server_args: from sglang.srt.server_args_config_parser import ...
    from sglang.srt.server_args_config_parser import ConfigSubsetError, merge_config_with_args

try:  # the reader of the spec v2 environment switch; not in the builds from 0.5.10 on
    from sglang.srt import spec_v2 as _spec_v2
except ImportError:
    _spec_v2 = None

# Choice lists as SGLang 0.5.9 has them.
_CHOICES: Dict[str, List[Any]] = {
    "LOAD_FORMAT": [
        "auto", "pt", "safetensors", "npcache", "dummy", "sharded_state", "gguf",
        "bitsandbytes", "layered", "flash_rl", "remote", "remote_instance",
        "fastsafetensors", "private",
    ],
    "QUANTIZATION": [
        "awq", "fp8", "mxfp8", "gptq", "marlin", "gptq_marlin", "awq_marlin",
        "bitsandbytes", "gguf", "modelopt", "modelopt_fp8", "modelopt_fp4",
        "petit_nvfp4", "w8a8_int8", "w8a8_fp8", "moe_wna16", "qoq", "w4afp8",
        "mxfp4", "auto-round", "compressed-tensors", "modelslim",
        "quark_int4fp8_moe",
    ],
    "ATTENTION": [
        "triton", "torch_native", "flex_attention", "nsa", "cutlass_mla", "fa3",
        "fa4", "flashinfer", "flashmla", "trtllm_mla", "trtllm_mha",
        "dual_chunk_flash_attn", "aiter", "wave", "intel_amx", "ascend",
        "intel_xpu",
    ],
    "SAMPLING": ["flashinfer", "pytorch", "ascend"],
    "GRAMMAR": ["xgrammar", "outlines", "llguidance", "none"],
    "MOE_RUNNER": [
        "auto", "deep_gemm", "triton", "triton_kernel", "flashinfer_trtllm",
        "flashinfer_cutlass", "flashinfer_mxfp4", "flashinfer_cutedsl", "cutlass",
    ],
    "MOE_A2A": ["none", "deepep", "mooncake", "mori", "ascend_fuseep", "flashinfer"],
    "FP8_GEMM": [
        "auto", "deep_gemm", "flashinfer_trtllm", "flashinfer_deepgemm", "cutlass",
        "triton", "aiter",
    ],
    "FP4_GEMM": ["auto", "flashinfer_cudnn", "flashinfer_cutlass", "flashinfer_trtllm"],
    "NSA": ["flashmla_sparse", "flashmla_kv", "flashmla_auto", "fa3", "tilelang", "aiter", "trtllm"],
    "DISAGG_TRANSFER": ["mooncake", "nixl", "ascend", "fake", "mori"],
    "LORA_BACKEND": ["triton", "csgmv", "ascend", "torch_native"],
    "REASONING_PARSER": [
        "deepseek-r1", "deepseek-v3", "glm45", "gpt-oss", "kimi", "kimi_k2",
        "qwen3", "qwen3-thinking", "minimax", "minimax-append-think", "step3",
        "step3p5", "nano_v3", "interns1",
    ],
    "TOOL_CALL_PARSER": [
        "deepseekv3", "deepseekv31", "deepseekv32", "glm", "glm45", "glm47",
        "gpt-oss", "kimi_k2", "lfm2", "llama3", "mimo", "mistral", "pythonic",
        "qwen", "qwen25", "qwen3_coder", "step3", "step3p5", "minimax-m2",
        "trinity", "interns1", "hermes", "gigachat3",
    ],
    "SPEC_ALGORITHM": ["EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"],
    "DTYPE": ["auto", "half", "float16", "bfloat16", "float", "float32"],
    "KV_CACHE_DTYPE": ["auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16", "fp4_e2m1"],
    "SCHEDULE_POLICY": ["lpm", "random", "fcfs", "dfs-weight", "lof", "priority", "routing-key"],
    "LOAD_BALANCE": ["auto", "round_robin", "follow_bootstrap_room", "total_requests", "total_tokens"],
    "MM_ATTENTION": ["sdpa", "fa3", "fa4", "triton_attn", "ascend_attn", "aiter_attn"],
    "HICACHE_WRITE": ["write_back", "write_through", "write_through_selective"],
    "HICACHE_IO": ["direct", "kernel", "kernel_ascend"],
    "HICACHE_LAYOUT": ["layer_first", "page_first", "page_first_direct", "page_first_kv_split", "page_head"],
    "HICACHE_STORAGE": ["file", "mooncake", "hf3fs", "nixl", "aibrix", "dynamic", "eic"],
}
_CHOICES["DRAFT_QUANTIZATION"] = _CHOICES["QUANTIZATION"] + ["unquant"]

# One flag per line: option strings, then a kind, then key=value options.
# since=V / until=V: the flag exists from version V on / only before V.
# kinds: str int float flag json (json.loads) nstr (nullable str);
#        a trailing + * ? gives nargs.  "default" absent -> None.
#        choices=@NAME uses _CHOICES[NAME]; choices=a|b|c lists literals.
_SPEC = r"""
# Model and tokenizer
--model-path --model                              str   required
--tokenizer-path                                  str
--tokenizer-mode                                  str   default=auto choices=auto|slow
--tokenizer-worker-num                            int   default=1
--skip-tokenizer-init                             flag
--load-format                                     str   default=auto choices=@LOAD_FORMAT
--model-loader-extra-config                       str   default={}
--trust-remote-code                               flag
--context-length                                  int
--is-embedding                                    flag
--enable-multimodal                               flag  default=None
--revision                                        str
--model-impl                                      str   default=auto
# HTTP server
--host                                            str   default=127.0.0.1
--port                                            int   default=30000
--fastapi-root-path                               str   default=""
--grpc-mode                                       flag
--skip-server-warmup                              flag
--warmups                                         str
--nccl-port                                       int
# SSL/TLS: not in 0.5.9; added by 0.5.10 (on 0.5.9 only with SGLANG_DOUBLE_SSL=1)
--ssl-keyfile                                     str   since=0.5.10
--ssl-certfile                                    str   since=0.5.10
--ssl-ca-certs                                    str   since=0.5.10
--ssl-keyfile-password                            str   since=0.5.10
--enable-ssl-refresh                              flag  since=0.5.10
# Quantization and data type
--dtype                                           str   default=auto choices=@DTYPE
--quantization                                    str   choices=@QUANTIZATION
--quantization-param-path                         nstr
--kv-cache-dtype                                  str   default=auto choices=@KV_CACHE_DTYPE
--enable-fp32-lm-head                             flag
# Memory and scheduling
--mem-fraction-static                             float
--max-running-requests                            int
--max-queued-requests                             int
--max-total-tokens                                int
--chunked-prefill-size                            int
--prefill-max-requests                            int
--enable-dynamic-chunking                         flag
--max-prefill-tokens                              int   default=16384
--schedule-policy                                 str   default=fcfs choices=@SCHEDULE_POLICY
--enable-priority-scheduling                      flag
--schedule-conservativeness                       float default=1.0
--page-size                                       int
--swa-full-tokens-ratio                           float default=0.8
--disable-hybrid-swa-memory                       flag
--radix-eviction-policy                           str   default=lru choices=lru|lfu
# Runtime options
--device                                          str
--tensor-parallel-size --tp-size                  int   default=1
--attention-context-parallel-size --attn-cp-size  int   default=1
--moe-data-parallel-size --moe-dp-size            int   default=1
--pipeline-parallel-size --pp-size                int   default=1
--pp-max-micro-batch-size                         int
--pp-async-batch-depth                            int   default=0
--stream-interval                                 int   default=1
--stream-output                                   flag
--random-seed                                     int
--constrained-json-whitespace-pattern             str
--constrained-json-disable-any-whitespace         flag
--watchdog-timeout                                float default=300
--soft-watchdog-timeout                           float
--dist-timeout                                    int
--download-dir                                    str
--base-gpu-id                                     int   default=0
--gpu-id-step                                     int   default=1
--sleep-on-idle                                   flag
# Logging
--log-level                                       str   default=info
--log-level-http                                  str
--log-requests                                    flag
--log-requests-level                              int   default=2 choices=0|1|2|3
--log-requests-format                             str   default=text choices=text|json
--crash-dump-folder                               str
--show-time-cost                                  flag
--enable-metrics                                  flag
--enable-metrics-for-all-schedulers               flag
--extra-metric-labels                             json
--collect-tokens-histogram                        flag
--decode-log-interval                             int   default=40
--enable-request-time-stats-logging               flag
--kv-events-config                                str
--enable-trace                                    flag
--otlp-traces-endpoint                            str   default=localhost:4317
# API related
--api-key                                         str
--admin-api-key                                   str
--served-model-name                               str
--weight-version                                  str   default=default
--chat-template                                   str
--hf-chat-template-name                           str
--completion-template                             str
--file-storage-path                               str   default=sglang_storage
--enable-cache-report                             flag
--reasoning-parser                                str   choices=@REASONING_PARSER
--tool-call-parser                                str   choices=@TOOL_CALL_PARSER
--tool-server                                     str
--sampling-defaults                               str   default=model choices=openai|model
# Data parallelism
--data-parallel-size --dp-size                    int   default=1
--load-balance-method                             str   default=auto choices=@LOAD_BALANCE
# Multi-node distributed serving
--dist-init-addr --nccl-init-addr                 str
--nnodes                                          int   default=1
--node-rank                                       int   default=0
# Model override args
--json-model-override-args                        str   default={}
--preferred-sampling-params                       json
# LoRA
--enable-lora                                     flag  default=None
--max-lora-rank                                   int
--lora-paths                                      str*
--max-loras-per-batch                             int   default=8
--max-loaded-loras                                int
--lora-backend                                    str   default=csgmv choices=@LORA_BACKEND
# Kernel backends
--attention-backend                               str   choices=@ATTENTION
--prefill-attention-backend                       str   choices=@ATTENTION
--decode-attention-backend                        str   choices=@ATTENTION
--sampling-backend                                str   choices=@SAMPLING
--grammar-backend                                 str   choices=@GRAMMAR
--mm-attention-backend                            str   choices=@MM_ATTENTION
--nsa-prefill-backend                             str   choices=@NSA
--nsa-decode-backend                              str   choices=@NSA
--fp8-gemm-backend                                str   default=auto choices=@FP8_GEMM dest=fp8_gemm_runner_backend
--fp4-gemm-backend                                str   default=flashinfer_cutlass choices=@FP4_GEMM dest=fp4_gemm_runner_backend
--disable-flashinfer-autotune                     flag
# Speculative decoding
--speculative-algorithm                           str   choices=@SPEC_ALGORITHM
--speculative-draft-model-path --speculative-draft-model str
--speculative-draft-model-revision                str
--speculative-draft-load-format                   str   choices=@LOAD_FORMAT
--speculative-num-steps                           int
--speculative-eagle-topk                          int
--speculative-num-draft-tokens                    int
--speculative-accept-threshold-single             float default=1.0
--speculative-accept-threshold-acc                float default=1.0
--speculative-token-map                           str
--speculative-attention-mode                      str   default=prefill choices=prefill|decode
--speculative-draft-attention-backend             str
--speculative-moe-runner-backend                  str   choices=@MOE_RUNNER
--speculative-moe-a2a-backend                     str   choices=@MOE_A2A
--speculative-draft-model-quantization            str   choices=@DRAFT_QUANTIZATION
--speculative-ngram-min-match-window-size         int   default=1
--speculative-ngram-max-match-window-size         int   default=12
--speculative-ngram-min-bfs-breadth               int   default=1
--speculative-ngram-max-bfs-breadth               int   default=10
--speculative-ngram-match-type                    str   default=BFS choices=BFS|PROB
--speculative-ngram-branch-length                 int   default=18
--speculative-ngram-capacity                      int   default=10000000
--enable-multi-layer-eagle                        flag
# Expert parallelism
--expert-parallel-size --ep-size --ep             int   default=1
--moe-a2a-backend                                 str   default=none choices=@MOE_A2A
--moe-runner-backend                              str   default=auto choices=@MOE_RUNNER
--flashinfer-mxfp4-moe-precision                  str   default=default choices=default|bf16
--enable-flashinfer-allreduce-fusion              flag
--deepep-mode                                     str   default=auto choices=normal|low_latency|auto
--ep-num-redundant-experts                        int   default=0
--ep-dispatch-algorithm                           str
--init-expert-location                            str   default=trivial
--enable-eplb                                     flag
--eplb-algorithm                                  str   default=auto
--deepep-config                                   str
--moe-dense-tp-size                               int
# Mamba
--max-mamba-cache-size                            int
--mamba-ssm-dtype                                 str   choices=float32|bfloat16|float16
# Hierarchical cache
--enable-hierarchical-cache                       flag
--hicache-ratio                                   float default=2.0
--hicache-size                                    int   default=0
--hicache-write-policy                            str   default=write_through choices=@HICACHE_WRITE
--hicache-io-backend                              str   default=kernel choices=@HICACHE_IO
--hicache-mem-layout                              str   default=layer_first choices=@HICACHE_LAYOUT
--hicache-storage-backend                         str   choices=@HICACHE_STORAGE
--hicache-storage-prefetch-policy                 str   default=best_effort choices=best_effort|wait_complete|timeout
--hicache-storage-backend-extra-config            str
--enable-lmcache                                  flag
# Offloading
--cpu-offload-gb                                  int   default=0
# Optimization / debug options
--disable-radix-cache                             flag
--cuda-graph-max-bs                               int   until=0.5.10
--cuda-graph-bs                                   int+
--disable-cuda-graph                              flag
--disable-cuda-graph-padding                      flag
--enable-profile-cuda-graph                       flag
--enable-cudagraph-gc                             flag
--enable-nccl-nvls                                flag
--enable-symm-mem                                 flag
--disable-flashinfer-cutlass-moe-fp4-allgather    flag
--enable-tokenizer-batch-encode                   flag
--disable-tokenizer-batch-decode                  flag
--disable-outlines-disk-cache                     flag
--disable-custom-all-reduce                       flag
--enable-mscclpp                                  flag
--enable-torch-symm-mem                           flag
--disable-overlap-schedule                        flag
--enable-mixed-chunk                              flag
--enable-dp-attention                             flag
--enable-dp-lm-head                               flag
--enable-two-batch-overlap                        flag
--enable-single-batch-overlap                     flag
--enable-torch-compile                            flag
--enable-piecewise-cuda-graph                     flag
--piecewise-cuda-graph-tokens                     int+
--torch-compile-max-bs                            int   default=32
--piecewise-cuda-graph-max-tokens                 int
--torchao-config                                  str   default=""
--enable-nan-detection                            flag
--enable-p2p-check                                flag
--triton-attention-reduce-in-fp32                 flag
--triton-attention-num-kv-splits                  int   default=8
--num-continuous-decode-steps                     int   default=1
--delete-ckpt-after-loading                       flag
--enable-memory-saver                             flag
--enable-weights-cpu-backup                       flag
--allow-auto-truncate                             flag
--enable-custom-logit-processor                   flag
--flashinfer-mla-disable-ragged                   flag
--disable-shared-experts-fusion                   flag
--disable-chunked-prefix-cache                    flag
--disable-fast-image-processor                    flag
--enable-return-hidden-states                     flag
--scheduler-recv-interval                         int   default=1
--numa-node                                       int+
--enable-deterministic-inference                  flag
--enable-fused-qk-norm-rope                       flag
--enable-dynamic-batch-tokenizer                  flag
# Disaggregation
--disaggregation-mode                             str   default=null choices=null|prefill|decode
--disaggregation-transfer-backend                 str   default=mooncake choices=@DISAGG_TRANSFER
--disaggregation-bootstrap-port                   int   default=8998
--disaggregation-decode-tp                        int
--disaggregation-decode-dp                        int
--disaggregation-prefill-pp                       int   default=1
--disaggregation-ib-device                        str
--num-reserved-decode-tokens                      int   default=512
# Encoder disaggregation / weight loading
--encoder-only                                    flag
--language-only                                   flag
--custom-weight-loader                            str*
--weight-loader-disable-mmap                      flag
# Multimodal and misc
--mm-max-concurrent-calls                         int   default=32
--decrypted-config-file                           str
--decrypted-draft-config-file                     str
--config                                          str   nofield
"""

# SGLang's attribute names for flags whose first spelling differs.
_RENAMES = {
    "tensor_parallel_size": "tp_size",
    "pipeline_parallel_size": "pp_size",
    "data_parallel_size": "dp_size",
    "expert_parallel_size": "ep_size",
    "attention_context_parallel_size": "attn_cp_size",
    "moe_data_parallel_size": "moe_dp_size",
}

_TYPES = {"str": str, "int": int, "float": float, "json": json.loads}


def _nullable_str(value: str) -> Optional[str]:
    if value.lower() in ("none", "null", ""):
        return None
    return value


_TYPES["nstr"] = _nullable_str

logger = logging.getLogger(__name__)


def _env_bool(name: str, default: bool) -> bool:
    """An environment switch read as 0.5.9's ``environ.EnvBool`` reads it.

    Unset: ``default``. ``true/1/yes/y`` and ``false/0/no/n`` in any case; any
    other value (also empty) warns ``Invalid value for NAME: "value" is not a
    valid boolean value, using default "default"`` and gives ``default``.
    """
    value = os.environ.get(name)
    if value is None:
        return default
    value = value.lower()
    if value in ("true", "1", "yes", "y"):
        return True
    if value in ("false", "0", "no", "n"):
        return False
    warnings.warn('Invalid value for %s: "%s" is not a valid boolean value, using default "%s"' % (name, value, default))
    return default


def _parse_spec() -> List[Dict[str, Any]]:
    entries = []
    for raw in _SPEC.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        tokens = shlex.split(line)
        options = [t for t in tokens if t.startswith("--")]
        rest = [t for t in tokens if not t.startswith("--")]
        kind, attrs = rest[0], rest[1:]
        entry: Dict[str, Any] = {"options": options, "kind": kind, "required": False}
        for attr in attrs:
            if attr in ("required", "nofield"):
                entry[attr] = True
                continue
            key, dummy, value = attr.partition("=")
            entry[key] = value
        entries.append(entry)
    return entries


def _convert(kind: str, value: str) -> Any:
    if value == "None":
        return None
    base = kind.rstrip("+*?")
    if base in ("int", "float"):
        return _TYPES[base](value)
    return value


def _add_entry(parser: argparse.ArgumentParser, entry: Dict[str, Any]) -> None:
    kind = entry["kind"]
    kwargs: Dict[str, Any] = {}
    if "dest" in entry:
        kwargs["dest"] = entry["dest"]
    if kind == "flag":
        kwargs["action"] = "store_true"
        if "default" in entry:
            kwargs["default"] = _convert("str", entry["default"])
        parser.add_argument(*entry["options"], **kwargs)
        return
    base = kind.rstrip("+*?")
    if kind != base:
        kwargs["nargs"] = kind[len(base):]
    kwargs["type"] = _TYPES[base]
    if entry["required"]:
        kwargs["required"] = True
    else:
        kwargs["default"] = _convert(kind, entry["default"]) if "default" in entry else None
    choices = entry.get("choices")
    if choices:
        if choices.startswith("@"):
            kwargs["choices"] = list(_CHOICES[choices[1:]])
        else:
            kwargs["choices"] = [_TYPES[base](c) for c in choices.split("|")]
    parser.add_argument(*entry["options"], **kwargs)


_ENTRIES = _parse_spec()


def ssl_flags_enabled() -> bool:
    """SGLANG_DOUBLE_SSL=1: add 0.5.10's TLS flags to an earlier version (0.5.9 has none)."""
    return os.environ.get("SGLANG_DOUBLE_SSL", "").strip().lower() in ("1", "true", "yes", "on")


def _in_this_version(entry: Dict[str, Any], with_ssl: bool) -> bool:
    if "until" in entry and _version.at_least(entry["until"]):
        return False
    # the only since= flags are 0.5.10's TLS flags, which SGLANG_DOUBLE_SSL=1 adds to 0.5.9
    return "since" not in entry or with_ssl or _version.at_least(entry["since"])


def _active_entries() -> List[Dict[str, Any]]:
    with_ssl = ssl_flags_enabled()
    return [e for e in _ENTRIES if _in_this_version(e, with_ssl)]


def _dest_of(entry: Dict[str, Any]) -> str:
    if "dest" in entry:
        return entry["dest"]
    return entry["options"][0][2:].replace("-", "_")


def _field_names() -> List[str]:
    # --config is a parser option only: 0.5.9's ServerArgs dataclass has no field for it.
    return [_RENAMES.get(_dest_of(e), _dest_of(e)) for e in _active_entries() if not e.get("nofield")]


class ServerArgs:
    """The parsed server arguments (attribute names as in SGLang)."""

    def __init__(self, **kwargs: Any) -> None:
        for name in _field_names():
            setattr(self, name, kwargs.pop(name, None))
        if kwargs:
            raise TypeError("unexpected server arguments: %s" % ", ".join(sorted(kwargs)))
        self.__post_init__()

    def __post_init__(self) -> None:
        if self.model_path is None:
            raise ValueError("model_path is required")
        if self.tokenizer_path is None:
            self.tokenizer_path = self.model_path
        if self.served_model_name is None:
            self.served_model_name = self.model_path
        if self.nnodes < 1 or not 0 <= self.node_rank < self.nnodes:
            raise ValueError(
                "node_rank=%d is invalid for nnodes=%d" % (self.node_rank, self.nnodes)
            )
        if (self.tp_size * self.pp_size) % self.nnodes != 0:
            raise ValueError("tp_size must be divisible by number of nodes")
        if self.enable_dp_attention and self.tp_size % self.dp_size != 0:
            raise ValueError("tp_size must be divisible by dp_size when dp attention is enabled")
        if _spec_v2 is not None:
            _spec_v2.handle_speculative_env(self)
        if hasattr(self, "ssl_certfile"):
            self._handle_ssl_validation()

    def _handle_ssl_validation(self) -> None:
        # Same checks and messages as 0.5.10's ServerArgs._handle_ssl_validation
        # (run from __post_init__, so a bad combination fails before the load).
        if self.ssl_keyfile and not self.ssl_certfile:
            raise ValueError("--ssl-keyfile requires --ssl-certfile to be specified as well.")
        if self.ssl_certfile and not self.ssl_keyfile:
            raise ValueError("--ssl-certfile requires --ssl-keyfile to be specified as well.")
        if not self.ssl_certfile and not self.ssl_keyfile:
            if self.ssl_ca_certs:
                raise ValueError("--ssl-ca-certs has no effect without --ssl-certfile and --ssl-keyfile.")
            if self.ssl_keyfile_password:
                raise ValueError("--ssl-keyfile-password has no effect without --ssl-certfile and --ssl-keyfile.")
        for value, what, flag in ((self.ssl_keyfile, "SSL key file", "--ssl-keyfile"),
                                  (self.ssl_certfile, "SSL certificate file", "--ssl-certfile"),
                                  (self.ssl_ca_certs, "SSL CA certificates file", "--ssl-ca-certs")):
            if value and not os.path.isfile(value):
                raise ValueError("%s not found: '%s'. Please check the %s path." % (what, value, flag))
        if self.enable_ssl_refresh and not (self.ssl_certfile and self.ssl_keyfile):
            raise ValueError("--enable-ssl-refresh requires --ssl-certfile and --ssl-keyfile to be specified.")

    @staticmethod
    def add_cli_args(parser: argparse.ArgumentParser) -> None:
        for entry in _active_entries():
            _add_entry(parser, entry)

    @classmethod
    def from_cli_args(cls, args: argparse.Namespace) -> "ServerArgs":
        values = {}
        for entry in _active_entries():
            if entry.get("nofield"):
                continue
            dest = _dest_of(entry)
            values[_RENAMES.get(dest, dest)] = getattr(args, dest)
        return cls(**values)

    def asdict(self) -> Dict[str, Any]:
        return {name: getattr(self, name) for name in _field_names()}

    def url(self) -> str:
        host = self.host
        if ":" in host and not host.startswith("["):
            host = "[%s]" % host
        # 0.5.10's ServerArgs.url: https once --ssl-certfile is given
        scheme = "https" if getattr(self, "ssl_certfile", None) else "http"
        return "%s://%s:%d" % (scheme, host, self.port)

    def __repr__(self) -> str:
        inner = ", ".join("%s=%r" % (k, v) for k, v in self.asdict().items())
        return "ServerArgs(%s)" % inner

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ServerArgs) and self.asdict() == other.asdict()


def prepare_server_args(argv: List[str]) -> ServerArgs:
    """Parse a command line as ``python -m sglang.launch_server`` does.

    As 0.5.9's ``prepare_server_args``: when the token ``--config`` is present,
    the YAML file's arguments are put before the command line's (see
    ``server_args_config_parser``); then argparse parses the result.
    """
    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    if "--config" in argv:
        try:
            argv = merge_config_with_args(list(argv), parser)
        except ConfigSubsetError as exc:
            path = argv[argv.index("--config") + 1]
            parser.exit(2, "%s: error: --config %s: %s (the SGLang test double reads only a YAML subset: "
                           "a mapping of scalars and lists of scalars; see tests/double/README.md)\n"
                        % (parser.prog, path, exc))
    args = parser.parse_args(argv)
    return ServerArgs.from_cli_args(args)
