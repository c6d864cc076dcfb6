"""The spec v2 environment switch, SGLANG_ENABLE_SPEC_V2, as SGLang 0.5.9 reads it.

The part of 0.5.9's ``ServerArgs._handle_speculative_decoding`` that reads the
switch (declared in 0.5.9's ``srt/environ.py`` as an ``EnvBool``, default
False): for EAGLE, EAGLE3, STANDALONE (and NEXTN, which 0.5.9 turns into EAGLE)
the overlap scheduler runs only with spec v2 on, which allows only topk 1; any
other value turns it off.

Only the builds before 0.5.10 have this file (``sglang.version.DROPPED_MODULES``):
from 0.5.10 on the double plays a release that no longer reads the switch, and
the name appears nowhere in its package.
"""

import logging

logger = logging.getLogger("sglang.srt.server_args")


def handle_speculative_env(args) -> None:
    """Set ``args.disable_overlap_schedule`` from the switch (ServerArgs ``args``); ValueError for topk > 1."""
    from sglang.srt.server_args import _env_bool  # pylint: disable=import-outside-toplevel

    if args.speculative_algorithm not in ("EAGLE", "EAGLE3", "STANDALONE", "NEXTN"):
        return
    if _env_bool("SGLANG_ENABLE_SPEC_V2", False):
        args.disable_overlap_schedule = False
        logger.warning("Spec v2 is enabled for eagle/eagle3 speculative decoding and overlap schedule is turned on.")
        if args.speculative_eagle_topk is not None and args.speculative_eagle_topk > 1:
            raise ValueError("Spec v2 currently only supports topk = 1 for speculative decoding.")
    else:
        args.disable_overlap_schedule = True
        logger.warning(
            "Overlap scheduler is disabled when spec v2 is off or using unsupported speculative algorithm. "
            "You can set env SGLANG_ENABLE_SPEC_V2=True to enable the experimental overlap scheduler. "
        )
