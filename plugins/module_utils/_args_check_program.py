# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""The program ``server_args_check`` runs in the target interpreter (SGLang's own argument parser), here rather than
in the module: its source is part of the memo's key (``_args_check_cache.memo_key``), which ``service_preflight_info``
computes too, to look the memo up in the pre-flight's one host read."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

PARSER_NAME = 'sglang.srt.server_args.ServerArgs.add_cli_args'
RESULT_MARK = '@@INFEROPS_SERVER_ARGS_CHECK@@'

# Runs in the target interpreter (any Python 3). Reads a JSON request on stdin, writes one
# line "<RESULT_MARK><json>" on stdout (read by this module only); everything else the import prints goes to
# stderr. It holds no secret rule: it reports what the parser resolves each --flag to ("dest"), and the command
# line after --config merging ("argv"), and the module masks, with the collection's one rule (_secrets), every
# secret value in what it returns.
CHECK_PROGRAM = r'''
import json, os, sys, time
MARK = %(mark)r
req = json.loads(sys.stdin.read())
if req.get("timeout"):
    try:
        import signal
        signal.alarm(int(req["timeout"]))
    except Exception:
        pass
out = {"python_version": sys.version.split()[0], "sglang_version": None, "import_error": None,
       "valid": None, "message": None, "resolved": [], "deprecated": {}, "parser_warnings": []}
saved_stdout = os.dup(1)
os.dup2(2, 1)
sys.stdout = sys.stderr


def emit():
    try:
        sys.stderr.flush()
    except Exception:
        pass
    os.dup2(saved_stdout, 1)
    os.write(1, (MARK + json.dumps(out) + "\n").encode("utf-8"))
    os._exit(0)


try:
    try:
        from importlib import metadata as _md
    except ImportError:
        _md = None
    if _md is not None:
        try:
            out["sglang_version"] = _md.version("sglang")
        except Exception:
            pass
    import argparse
    import logging
    import warnings
    if req.get("load_plugins"):
        from sglang.srt.plugins import load_plugins
        load_plugins()
    from sglang.srt.server_args import ServerArgs
    import sglang
    out["package_dirs"] = [str(p) for p in getattr(sglang, "__path__", [])]
except BaseException as exc:
    out["import_error"] = "%%s: %%s" %% (type(exc).__name__, exc)
    emit()

class _Rejected(Exception):
    pass


class _Exited(Exception):
    pass


def _error(message):
    raise _Rejected(message)


def _exit(status=0, message=None):
    flag = "--help"
    for tok in argv:
        name = tok.split("=", 1)[0]
        if name == "-h" or (len(name) > 2 and "--help".startswith(name)):
            flag = name
            break
        if len(name) > 2 and "--version".startswith(name):
            flag = name
            break
    raise _Exited("%%s: the parser printed its output and exited with status %%s instead of returning "
                  "the arguments; a server command line cannot contain it" %% (flag, status))


argv = [str(a) for a in req.get("args", [])]


class _Capture(logging.Handler):
    def emit(self, record):
        try:
            text = record.getMessage()
        except Exception:
            text = str(record.msg)
        for code in ("\033[1;33m", "\033[0m", "\033[33m", "\033[1m"):
            text = text.replace(code, "")
        out["parser_warnings"].append(text)


try:
    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    parser.error = _error
    parser.exit = _exit
    if "--config" in argv:
        try:
            try:
                # SGLang 0.5.19 on: sglang/srt/utils/server_args_config_parser.py
                from sglang.srt.utils.server_args_config_parser import ConfigArgumentMerger
            except ModuleNotFoundError as exc:
                if getattr(exc, "name", None) not in ("sglang.srt.utils.server_args_config_parser", "sglang.srt.utils"):
                    raise
                # SGLang before 0.5.19 (0.5.9 included): sglang/srt/server_args_config_parser.py
                from sglang.srt.server_args_config_parser import ConfigArgumentMerger
            argv = ConfigArgumentMerger(parser).merge_config_with_args(argv)
            out["argv"] = argv
        except (_Rejected, _Exited):
            raise
        except Exception as exc:
            raise _Rejected("--config: %%s: %%s" %% (type(exc).__name__, exc))
    options = parser._option_string_actions
    for tok in argv:
        if not tok.startswith("--") or tok == "--":
            continue
        name = tok.split("=", 1)[0]
        if name in options:
            action = options[name]
            out["resolved"].append({"token": name, "option": name, "options": list(action.option_strings),
                                    "dest": action.dest})
        elif parser.allow_abbrev:
            matches = [o for o in options if o.startswith(name)]
            option = matches[0] if len(matches) == 1 else None
            action = options[option] if option else None
            out["resolved"].append({"token": name, "option": option,
                                    "options": list(action.option_strings) if action else matches,
                                    "dest": action.dest if action else None})
        else:
            action = None
            out["resolved"].append({"token": name, "option": None, "options": [], "dest": None})
        if action is not None and action.help and "deprecated" in str(action.help).lower():
            out["deprecated"][name] = str(action.help)
    handler = _Capture(level=logging.WARNING)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            parser.parse_args(argv)
    finally:
        root.removeHandler(handler)
    for w in caught:
        out["parser_warnings"].append("%%s: %%s" %% (w.category.__name__, w.message))
    out["valid"] = True
except (_Rejected, _Exited) as exc:
    out["valid"] = False
    out["message"] = str(exc)
except Exception as exc:
    out["valid"] = False
    out["message"] = "%%s raised while parsing: %%s" %% (type(exc).__name__, exc)
emit()
''' % {'mark': RESULT_MARK}
