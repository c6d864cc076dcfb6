"""Data parallel controller of the SGLang test double (dp > 1 only).

Titled ``sglang::data_parallel_controller``; it starts the schedulers of every
dp rank with multiprocessing "spawn" and forwards their readiness to the
launcher. Unlike SGLang 0.5.9 (where every scheduler sets PR_SET_PDEATHSIG and
the controller's launching threads never exit) the double's dp schedulers get
no death signal, so killing the launcher and the controller orphans them with
the GPU still held: the shape of field case C01. Set
``SGLANG_DOUBLE_DP_PDEATHSIG=1`` to give them the death signal.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
import signal
import traceback
from typing import Any, Dict, List

from sglang.srt.managers.scheduler import (
    _flush_and_exit,
    plan_tp_group,
    run_scheduler_process,
    wait_for_scheduler_ready,
)
from sglang.srt.utils.common import (
    configure_logger,
    env_bool,
    kill_itself_when_parent_died,
    kill_pids,
    read_cmdline,
    set_proc_title,
    write_state,
)

logger = logging.getLogger(__name__)


def plan_dp_ranks(server_args) -> List[Dict[str, Any]]:
    sa = server_args
    if sa.enable_dp_attention:
        return plan_tp_group(sa, 0, None)
    ranks: List[Dict[str, Any]] = []
    offset = 0
    for dp_rank in range(sa.dp_size):
        ranks.extend(plan_tp_group(sa, offset, dp_rank))
        offset += sa.tp_size * sa.pp_size * sa.gpu_id_step
    return ranks


def run_data_parallel_controller_process(server_args, t0: float, pipe_writer) -> None:
    spawn_argv = read_cmdline()
    title_how = set_proc_title("sglang::data_parallel_controller")
    kill_itself_when_parent_died()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    parent_pid = os.getppid()
    configure_logger(server_args.log_level)
    quit_requested = []
    signal.signal(signal.SIGQUIT, lambda *_: quit_requested.append(True))
    role = "data_parallel_controller"
    sched_pdeathsig = env_bool("SGLANG_DOUBLE_DP_PDEATHSIG", False)
    state: Dict[str, Any] = {"title_method": title_how, "phase": "loading", "pdeathsig": True,
                             "scheduler_pdeathsig": sched_pdeathsig}
    write_state(server_args.port, role, state, argv=spawn_argv)

    ctx = mp.get_context("spawn")
    procs, readers = [], []
    try:
        ranks = plan_dp_ranks(server_args)
        if not server_args.enable_dp_attention:
            for rank in ranks:
                if rank["tp_rank"] == 0 and rank["pp_rank"] == 0:
                    logger.info("Launch DP%d starting at GPU #%d.", rank["dp_rank"],
                                rank["gpu_id"] - server_args.base_gpu_id)
        for rank in ranks:
            reader, writer = ctx.Pipe(duplex=False)
            proc = ctx.Process(
                target=run_scheduler_process,
                args=(server_args, rank, t0, writer, {"pdeathsig": sched_pdeathsig}),
            )
            proc.start()
            writer.close()
            procs.append(proc)
            readers.append(reader)
        infos = wait_for_scheduler_ready(
            readers, procs, lambda: "SIGQUIT from a scheduler" if quit_requested else None
        )
        state.update(phase="ready", schedulers=[{"role": i["role"], "pid": i["pid"]} for i in infos])
        write_state(server_args.port, role, state, argv=spawn_argv)
        pipe_writer.send({"status": "ready", "schedulers": infos})
    except Exception:  # noqa: BLE001
        logger.error("DataParallelController hit an exception: %s", traceback.format_exc())
        kill_pids([p.pid for p in procs if p.pid])
        try:
            os.kill(parent_pid, signal.SIGQUIT)
        except OSError:
            pass
        _flush_and_exit(1)
    while True:
        signal.pause()
