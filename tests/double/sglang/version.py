"""Version of SGLang that the test double plays, and what differs between its builds.

``__version__`` is the only line ``tests/double/build_wheels.py`` rewrites per
wheel; everything a build does differently follows from it (see
tests/double/README.md, "Versions"):

* server flags: the flag table in ``sglang/srt/server_args.py`` marks a flag
  ``since=V`` (added in V) or ``until=V`` (gone from V on);
* modules in ``DROPPED_MODULES`` are not in the builds from a version on (the
  spec v2 environment switch's reader, ``sglang/srt/spec_v2.py``, from 0.5.10:
  its name then appears nowhere in the package, as when SGLang removes a switch);
* modules in ``MOVED_MODULES`` are under another path from a version on (the
  ``--config`` parser: ``sglang/srt/server_args_config_parser.py`` up to 0.5.18,
  ``sglang/srt/utils/server_args_config_parser.py`` from 0.5.19; SGLang 0.5.23's
  ``prepare_server_args`` in ``sglang/srt/server_args.py`` imports it from there);
* ``BAKED_FAIL_MODES``: ``SGLANG_DOUBLE_FAIL`` modes built into a version;
* HTTP endpoints by version (``sglang/srt/entrypoints/http_server.py``): ``GET /v1/loads`` in every build
  (0.5.9 already has ``sglang/srt/entrypoints/v1_loads.py``), ``GET /get_load`` (0.5.9: "deprecated - use
  /v1/loads instead") not in the builds from 0.5.23 on (0.5.23's http_server.py has no such route; the release
  in between that removed it was not read, so the double drops it at the first version known without it).
"""

from typing import Tuple

__version__ = "0.5.9"

# The builds tests/double/build_wheels.py makes by default: the reference server's release,
# the next one, a build of it whose server never gets healthy, and the current release (0.5.23).
BUILDS = ("0.5.9", "0.5.10", "0.5.10.post1", "0.5.23")

# Package files a build leaves out from a version on: path in the package -> first version without it.
# sglang/srt/spec_v2.py reads the spec v2 environment switch (0.5.9's _handle_speculative_decoding).
DROPPED_MODULES = {
    "sglang/srt/spec_v2.py": "0.5.10",
}

# Package files a build has under another path from a version on: old path -> (new path, first version there).
MOVED_MODULES = {
    "sglang/srt/server_args_config_parser.py": ("sglang/srt/utils/server_args_config_parser.py", "0.5.19"),
}

# The first version without GET /get_load (see the module docstring).
GET_LOAD_GONE = "0.5.23"

# Builds that fail on purpose: version -> SGLANG_DOUBLE_FAIL modes always on.
BAKED_FAIL_MODES = {
    "0.5.10.post1": ("never_healthy",),
}


def release(version: str) -> Tuple[int, ...]:
    """``"0.5.10.post1"`` -> ``(0, 5, 10, 1)``; ``"0.5.9"`` -> ``(0, 5, 9, 0)``.

    Only the forms the double's builds use (N.N.N and N.N.N.postN); anything
    else is a ValueError naming the version.
    """
    base, dummy, post = version.partition(".post")
    parts = base.split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts) or (dummy and not post.isdigit()):
        raise ValueError("unsupported version %r of the SGLang test double (use N.N.N or N.N.N.postN)" % version)
    return tuple(int(p) for p in parts) + (int(post) if dummy else 0,)


def at_least(version: str) -> bool:
    """True when this build's ``__version__`` is ``version`` or later."""
    return release(__version__) >= release(version)


def baked_fail_modes() -> Tuple[str, ...]:
    """The SGLANG_DOUBLE_FAIL modes this build has on whatever the environment says."""
    return BAKED_FAIL_MODES.get(__version__, ())
