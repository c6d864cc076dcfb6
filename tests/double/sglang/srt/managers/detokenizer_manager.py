"""Detokenizer process of the SGLang test double: ``sglang::detokenizer``.

It only exists (as in SGLang, with a parent-death signal) so that the process
tree has the right shape; the double's HTTP layer answers without it.
"""

from __future__ import annotations

import signal

from sglang.srt.utils.common import (
    configure_logger,
    kill_itself_when_parent_died,
    read_cmdline,
    set_proc_title,
    write_state,
)


def run_detokenizer_process(server_args) -> None:
    spawn_argv = read_cmdline()
    kill_itself_when_parent_died()
    title_how = set_proc_title("sglang::detokenizer")
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    configure_logger(server_args.log_level)
    write_state(server_args.port, "detokenizer", {"title_method": title_how, "pdeathsig": True},
                argv=spawn_argv)
    while True:
        signal.pause()
