"""Utilities of the SGLang test double."""

from sglang.srt.utils.common import kill_itself_when_parent_died, set_proc_title

__all__ = ["kill_itself_when_parent_died", "set_proc_title"]
