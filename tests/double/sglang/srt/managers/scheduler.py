"""Scheduler process of the SGLang test double (one per GPU rank).

Started with multiprocessing "spawn" by the launcher (dp == 1) or by the data
parallel controller (dp > 1). It titles itself ``sglang::scheduler<suffix>``,
takes an exclusive flock on its stand-in GPU device file for its whole life
(standing in for GPU memory), runs the JIT tools (``ninja --version`` through
PATH, ``$CUDA_HOME/bin/nvcc --version``) as flashinfer/torch JIT would while
loading, waits out the simulated load and then reports ready through its pipe.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
import traceback
from typing import Any, Dict, List, Optional

from sglang.srt.utils.common import (
    configure_logger,
    device_holders,
    env_bool,
    env_float,
    fail_modes,
    gpu_device_path,
    kill_itself_when_parent_died,
    read_cmdline,
    set_proc_title,
    write_state,
)

logger = logging.getLogger(__name__)


class OutOfMemoryError(RuntimeError):
    """Stands in for torch.OutOfMemoryError (prints as ``torch.OutOfMemoryError``)."""


OutOfMemoryError.__module__ = "torch"


# --------------------------------------------------------------------------- rank layout
def rank_suffix(server_args, rank: Dict[str, Any]) -> str:
    """SGLang's logger prefix / title suffix: `` DP1 TP1 EP1`` (parts only when > 1)."""
    prefix = ""
    if rank.get("dp_rank") is not None:
        prefix += " DP%d" % rank["dp_rank"]
    if server_args.pp_size > 1:
        prefix += " PP%d" % rank["pp_rank"]
    if server_args.attn_cp_size > 1:
        prefix += " ATTN_CP%d" % rank["attn_cp_rank"]
    if server_args.moe_dp_size > 1:
        prefix += " MOE_DP%d" % rank["moe_dp_rank"]
    if server_args.tp_size > 1:
        prefix += " TP%d" % rank["tp_rank"]
    if server_args.ep_size > 1:
        prefix += " EP%d" % rank["moe_ep_rank"]
    return prefix


def plan_tp_group(server_args, base_gpu_offset: int, dp_rank: Optional[int]) -> List[Dict[str, Any]]:
    """The scheduler ranks this node runs for one tensor-parallel group."""
    sa = server_args
    pp_per_node = max(sa.pp_size // sa.nnodes, 1)
    nnodes_per_pp_rank = max(sa.nnodes // sa.pp_size, 1)
    first_pp = pp_per_node * (sa.node_rank // nnodes_per_pp_rank)
    tp_per_node = sa.tp_size // nnodes_per_pp_rank
    first_tp = tp_per_node * (sa.node_rank % nnodes_per_pp_rank)
    attn_dp = sa.dp_size if sa.enable_dp_attention else 1
    attn_tp = max(sa.tp_size // attn_dp // sa.attn_cp_size, 1)
    moe_group = max(sa.tp_size // sa.moe_dp_size, 1)
    ranks = []
    for pp_rank in range(first_pp, first_pp + pp_per_node):
        for tp_rank in range(first_tp, first_tp + tp_per_node):
            rank_dp = dp_rank
            if sa.enable_dp_attention:
                rank_dp = tp_rank // (attn_tp * sa.attn_cp_size)
            ranks.append(
                {
                    "tp_rank": tp_rank,
                    "pp_rank": pp_rank,
                    "dp_rank": rank_dp,
                    "attn_cp_rank": (tp_rank // attn_tp) % sa.attn_cp_size,
                    "moe_dp_rank": tp_rank // moe_group,
                    "moe_ep_rank": (tp_rank % moe_group) // max(moe_group // sa.ep_size, 1),
                    "gpu_id": sa.base_gpu_id
                    + base_gpu_offset
                    + (pp_rank % pp_per_node) * tp_per_node
                    + (tp_rank % tp_per_node) * sa.gpu_id_step,
                }
            )
    return ranks


def role_of(server_args, rank: Dict[str, Any]) -> str:
    return "scheduler" + rank_suffix(server_args, rank).replace(" ", "_")


# --------------------------------------------------------------------------- JIT tools
def _run_tool(argv: List[str]) -> Dict[str, Any]:
    try:
        proc = subprocess.run(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30, check=False
        )
    except OSError as exc:
        return {"argv": argv, "returncode": None, "output": "", "error": str(exc)}
    except subprocess.TimeoutExpired:
        return {"argv": argv, "returncode": None, "output": "", "error": "timed out after 30 s"}
    return {"argv": argv, "returncode": proc.returncode, "output": proc.stdout.decode("utf-8", "replace").strip()}


def find_cuda_home() -> Optional[str]:
    """torch.utils.cpp_extension's lookup: CUDA_HOME, CUDA_PATH, nvcc on PATH, /usr/local/cuda."""
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home:
        return home
    nvcc = shutil.which("nvcc")
    if nvcc:
        return os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
    if os.path.exists("/usr/local/cuda"):
        return "/usr/local/cuda"
    return None


def check_jit_tools() -> Dict[str, Any]:
    """Run ninja and nvcc as the JIT compilers would; raise RuntimeError if unusable."""
    result: Dict[str, Any] = {
        "PATH": os.environ.get("PATH", ""),
        "CUDA_HOME": os.environ.get("CUDA_HOME"),
    }
    ninja = shutil.which("ninja")
    if ninja is None:
        raise RuntimeError(
            "Ninja is required to load C++ extensions (pip install ninja to get it): "
            "'ninja' was not found on PATH=%s" % result["PATH"]
        )
    result["ninja"] = dict(_run_tool([ninja, "--version"]), path=ninja)
    if result["ninja"]["returncode"] != 0:
        raise RuntimeError(
            "Ninja is required to load C++ extensions: '%s --version' failed: %s"
            % (ninja, result["ninja"].get("error") or result["ninja"]["output"])
        )
    cuda_home = find_cuda_home()
    result["cuda_home"] = cuda_home
    if cuda_home is None:
        raise RuntimeError(
            "Could not find nvcc: CUDA_HOME is not set, nvcc is not on PATH=%s and "
            "/usr/local/cuda does not exist" % result["PATH"]
        )
    nvcc = os.path.join(cuda_home, "bin", "nvcc")
    if not os.access(nvcc, os.X_OK):
        raise RuntimeError("Could not find nvcc at %s (CUDA_HOME=%s)" % (nvcc, cuda_home))
    result["nvcc"] = dict(_run_tool([nvcc, "--version"]), path=nvcc)
    if result["nvcc"]["returncode"] != 0:
        raise RuntimeError(
            "'%s --version' failed: %s" % (nvcc, result["nvcc"].get("error") or result["nvcc"]["output"])
        )
    return result


# --------------------------------------------------------------------------- GPU lock
def _gib(value: float) -> str:
    return "%.2f GiB" % value


def acquire_gpu(gpu_id: int) -> int:
    """Open the stand-in device file and flock it; raise OutOfMemoryError if taken."""
    path = gpu_device_path(gpu_id)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holders = [p for p in device_holders(path) if p != os.getpid()]
        os.close(fd)
        total = env_float("SGLANG_DOUBLE_GPU_MEM_GIB", 95.59)
        used = total * 0.88
        procs = " ".join("Process %d has %s memory in use." % (p, _gib(used)) for p in holders)
        raise OutOfMemoryError(
            "CUDA out of memory. Tried to allocate 2.00 GiB. GPU %d has a total capacity of %s "
            "of which %s is free. %s Including non-PyTorch memory, this process has 0 bytes "
            "memory in use. Of the allocated memory 0 bytes is allocated by PyTorch, and 0 bytes "
            "is reserved by PyTorch but unallocated. If reserved but unallocated memory is large "
            "try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  "
            "See documentation for Memory Management  "
            "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
            % (gpu_id, _gib(total), _gib(total - used), procs or "")
        )
    return fd


# --------------------------------------------------------------------------- real GPUs (opt-in)
# Tensors a scheduler keeps for its whole life when SGLANG_DOUBLE_TORCH_DISTRIBUTED=1 (real GPU memory held).
_HELD: List[Any] = []


def torch_all_reduce(server_args, rank: Dict[str, Any], nccl_port: int) -> Dict[str, Any]:
    """On a real GPU host (opt-in: ``SGLANG_DOUBLE_TORCH_DISTRIBUTED=1``, needs torch with CUDA): what SGLang's
    ``init_distributed_environment`` does at start-up, reduced to its NCCL part.

    Joins a ``torch.distributed`` NCCL group of the tensor-parallel ranks of this node at
    ``tcp://127.0.0.1:<nccl_port>`` (SGLang's ``dist_init_method`` without ``--dist-init-addr``), runs one
    all-reduce of a 4 MiB float32 tensor holding ``rank + 1`` and keeps ``SGLANG_DOUBLE_TORCH_HOLD_GIB`` GiB
    (default 1) of GPU memory allocated until the process ends, as a loaded model would. NCCL reads its ``NCCL_*``
    variables from this process's environment (``NCCL_DEBUG=INFO`` logs which it took).

    :returns: {"world_size", "rank", "sum", "expected", "gpu_id"}; ``sum`` equals ``expected`` when NCCL works.
    """
    import torch  # pylint: disable=import-outside-toplevel
    import torch.distributed as dist  # pylint: disable=import-outside-toplevel

    world = server_args.tp_size * server_args.pp_size
    global_rank = rank["pp_rank"] * server_args.tp_size + rank["tp_rank"]
    device = torch.device("cuda", rank["gpu_id"])
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:%d" % nccl_port, world_size=world,
                            rank=global_rank, device_id=device)
    tensor = torch.full((1 << 20,), float(global_rank + 1), device=device)
    dist.all_reduce(tensor)
    torch.cuda.synchronize(device)
    _HELD.append(tensor)
    _HELD.append(torch.empty(int(env_float("SGLANG_DOUBLE_TORCH_HOLD_GIB", 1.0) * (1 << 30)), dtype=torch.uint8,
                             device=device))
    return {"world_size": world, "rank": global_rank, "sum": float(tensor[0].item()),
            "expected": float(world * (world + 1) / 2), "gpu_id": rank["gpu_id"]}


def hold_nccl_store_port(server_args, nccl_port: int) -> None:
    """Without torch (the default): what torch's TCPStore does on global rank 0 of a single-node server (SGLang's
    ``init_distributed_environment`` with ``tcp://127.0.0.1:<nccl_port>``): listen on the NCCL port until the process
    ends. A port another process holds fails the load with torch's own message (``DistNetworkError``: "The server
    socket has failed to listen on any local network address. port: N, useIpv6: False, code: -98, name: EADDRINUSE,
    message: address already in use"), as a restart races a client that holds the port."""
    import socket  # pylint: disable=import-outside-toplevel

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TCPStore sets it: a TIME_WAIT port is reusable
    try:
        sock.bind(("0.0.0.0", nccl_port))
        sock.listen(16)
    except OSError as exc:
        sock.close()
        raise RuntimeError(
            "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. "
            "port: %d, useIpv6: False, code: -%d, name: %s, message: %s"
            % (nccl_port, exc.errno or 0, "EADDRINUSE" if exc.errno == 98 else "E%s" % exc.errno,
               os.strerror(exc.errno or 0).lower())) from exc
    _HELD.append(sock)


# --------------------------------------------------------------------------- process body
def run_scheduler_process(server_args, rank: Dict[str, Any], t0: float, pipe_writer, opts: Dict[str, Any]) -> None:
    spawn_argv = read_cmdline()
    suffix = rank_suffix(server_args, rank)
    role = "scheduler" + suffix.replace(" ", "_")
    title_how = set_proc_title("sglang::" + role)
    is_first = rank["tp_rank"] == 0 and rank["pp_rank"] == 0 and not rank.get("dp_rank")
    ignore_sigterm = is_first and "child_ignores_sigterm" in fail_modes()
    pdeathsig = bool(opts.get("pdeathsig")) and not ignore_sigterm
    if pdeathsig:
        kill_itself_when_parent_died()
    if ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    else:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    parent_pid = os.getppid()
    configure_logger(server_args.log_level, prefix=suffix)
    port = server_args.port
    state = {
        "gpu_id": rank["gpu_id"],
        "device": gpu_device_path(rank["gpu_id"]),
        "rank": rank,
        "pdeathsig": pdeathsig,
        "ignores_sigterm": ignore_sigterm,
        "title_method": title_how,
        "phase": "loading",
    }
    write_state(port, role, state, argv=spawn_argv)
    try:
        gpu_fd = acquire_gpu(rank["gpu_id"])
        load_seconds = env_float("SGLANG_DOUBLE_LOAD_SECONDS", 3.0)
        logger.info("Init torch distributed begin.")
        if env_bool("SGLANG_DOUBLE_TORCH_DISTRIBUTED", False):
            reduced = torch_all_reduce(server_args, rank, int(opts["nccl_port"]))
            logger.info("NCCL all_reduce over %d ranks: %s (expected %s) on GPU %d",
                        reduced["world_size"], reduced["sum"], reduced["expected"], reduced["gpu_id"])
            if reduced["sum"] != reduced["expected"]:
                raise RuntimeError("NCCL all_reduce returned %s, expected %s" % (reduced["sum"], reduced["expected"]))
            state["all_reduce"] = reduced
        elif is_first and opts.get("nccl_port") and not server_args.dist_init_addr:
            hold_nccl_store_port(server_args, int(opts["nccl_port"]))
        logger.info("Load weight begin. avail mem=%.2f GB", env_float("SGLANG_DOUBLE_GPU_MEM_GIB", 95.59) - 0.6)
        if env_bool("SGLANG_DOUBLE_REQUIRE_TOOLS", True):
            tools = check_jit_tools()
        else:
            tools = {"skipped": True, "reason": "SGLANG_DOUBLE_REQUIRE_TOOLS=0"}
        weights = _load_rank_weights(server_args, rank)
        state["weights"] = weights
        _sleep_until(t0 + load_seconds * 0.6)
        logger.info("Load weight end. type=DoubleForCausalLM, dtype=torch.bfloat16, mem usage=%.2f GB.",
                    weights["bytes"] / (1 << 30) if weights["gpu"] else 0.0)
        logger.info("KV Cache is allocated. #tokens: 1048576")
        logger.info("Capture cuda graph begin. This can take up to several minutes.")
        _sleep_until(t0 + load_seconds)
        logger.info("Capture cuda graph end. Time elapsed: %.2f s.", load_seconds * 0.4)
        info = {
            "status": "ready",
            "role": role,
            "pid": os.getpid(),
            "gpu_id": rank["gpu_id"],
            "dp_rank": rank.get("dp_rank"),
            "max_total_num_tokens": 1048576,
            "max_req_input_len": (server_args.context_length or 131072) - 5,
            "tool_checks": tools,
        }
        state.update(phase="ready", tool_checks=tools, gpu_fd=gpu_fd)
        write_state(port, role, state, argv=spawn_argv)
        logger.info(
            "max_total_num_tokens=1048576, chunked_prefill_size=%s, max_prefill_tokens=%s, "
            "max_running_requests=%s, context_len=%s",
            server_args.chunked_prefill_size or 8192,
            server_args.max_prefill_tokens,
            server_args.max_running_requests or 2048,
            server_args.context_length or 131072,
        )
        pipe_writer.send(info)
    except Exception:  # noqa: BLE001 - every failure is reported like SGLang does
        logger.error("Scheduler hit an exception: %s", traceback.format_exc())
        state.update(phase="failed", error=traceback.format_exc().strip().splitlines()[-1])
        write_state(port, role, state, argv=spawn_argv)
        try:
            os.kill(parent_pid, signal.SIGQUIT)
        except OSError:
            pass
        _flush_and_exit(1)
    while True:  # the event loop: hold the GPU until killed
        signal.pause()


def _load_rank_weights(server_args, rank: Dict[str, Any]) -> Dict[str, Any]:
    """This rank's part of the weight load (see ``sglang.srt.model_loader.weight_utils``): each of the
    ``tp_size * pp_size`` ranks reads every world-th file of the model directory, so the ranks together read the
    model once (SGLang's ranks each read every file and keep their slice; the page cache shares the pages).
    ``SGLANG_DOUBLE_LOAD_WEIGHTS=0`` reads nothing."""
    from sglang.srt.model_loader.weight_utils import gpu_copy_wanted, load_weights, weight_files  # pylint: disable=import-outside-toplevel

    if not env_bool("SGLANG_DOUBLE_LOAD_WEIGHTS", True) or not os.path.isdir(server_args.model_path or ""):
        return {"files": 0, "bytes": 0, "seconds": 0.0, "gb_per_s": 0.0, "gpu": False}
    world = max(1, server_args.tp_size * server_args.pp_size)
    index = rank["pp_rank"] * server_args.tp_size + rank["tp_rank"]
    files = weight_files(server_args.model_path)[index::world]
    logger.info("Loading safetensors checkpoint shards: %d file(s) for this rank", len(files))
    result = load_weights(files, gpu_id=rank["gpu_id"], to_gpu=bool(files) and gpu_copy_wanted())
    logger.info("Read %d bytes of weights in %.2f s (%.2f GB/s)%s", result["bytes"], result["seconds"],
                result["gb_per_s"], " into GPU memory" if result["gpu"] else "")
    return result


def _sleep_until(deadline: float) -> None:
    while True:
        left = deadline - time.time()
        if left <= 0:
            return
        time.sleep(min(left, 0.2))


def _flush_and_exit(code: int) -> None:
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            pass
    os._exit(code)


# --------------------------------------------------------------------------- readiness
class SchedulerDeadError(EOFError):
    """A scheduler (or the dp controller) exited before reporting ready."""

    def __init__(self, index: int, exitcode: Optional[int]):
        super().__init__("Rank %d scheduler is dead (exit code %s)" % (index, exitcode))
        self.index = index
        self.exitcode = exitcode


class LaunchAbortedError(RuntimeError):
    """Raised when ``abort_check`` asks to stop waiting."""


def wait_for_scheduler_ready(readers, procs, abort_check, poll: float = 0.05) -> List[Dict[str, Any]]:
    """Collect one ready message per pipe, as SGLang's launcher does.

    The caller must have closed its copies of the pipes' write ends, so that a
    child's death shows up as EOF. ``abort_check()`` returning a string stops
    the wait with LaunchAbortedError.
    """
    from multiprocessing.connection import wait

    infos: List[Optional[Dict[str, Any]]] = [None] * len(readers)
    pending = set(range(len(readers)))
    while pending:
        reason = abort_check()
        if reason:
            raise LaunchAbortedError(reason)
        wait([readers[i] for i in pending], timeout=poll)
        for i in sorted(pending):
            if readers[i].poll():
                try:
                    data = readers[i].recv()
                except EOFError:
                    procs[i].join(timeout=2)
                    raise SchedulerDeadError(i, procs[i].exitcode)
                if data.get("status") != "ready":
                    raise RuntimeError("Initialization failed. Please see the error messages above.")
                infos[i] = data
                pending.discard(i)
            elif not procs[i].is_alive() and not readers[i].poll():
                raise SchedulerDeadError(i, procs[i].exitcode)
    return [info for info in infos if info is not None]
