"""``--config FILE`` of the SGLang test double: a YAML file of server arguments.

Modelled on SGLang 0.5.9's ``sglang/srt/server_args_config_parser.py``
(``ConfigArgumentMerger.merge_config_with_args`` and its helpers, called from
``prepare_server_args`` in ``sglang/srt/server_args.py``; unchanged in 0.5.10):

* the merge runs only when the exact token ``--config`` is in argv
  (``--config=FILE`` is not noticed: argparse then stores the path and the
  file is never read, as in SGLang);
* two ``--config`` tokens, or ``--config`` as the last token, a suffix other
  than ``.yaml``/``.yml`` (checked before existence), a missing file, and a
  root that is not a mapping raise SGLang's ``ValueError`` (traceback, exit 1);
* every key becomes ``--<key as written>``: a store_true flag with ``true``
  is the bare flag and with ``false`` is left out; any other boolean becomes
  ``--key true``/``--key false``; a non-empty list ``--key item...`` (an empty
  list is left out); anything else ``--key str(value)`` (so null is "None");
* the file's arguments go before the command line's (``--config FILE``
  removed), so the command line wins under argparse's last-one-wins.

SGLang reads the file with PyYAML's ``safe_load``. The double is stdlib-only
and reads a strict subset instead (see ``load_yaml_subset``); anything outside
it is a ``ConfigSubsetError``, which ``prepare_server_args`` turns into an
error message and exit status 2.
"""

from __future__ import annotations

import argparse
import logging
import re
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

logger = logging.getLogger(__name__)

# 0.5.9 flags whose argparse action is neither store nor store_true; SGLang's
# merger refuses them as config keys. The double's parser has only plain
# actions (and lacks the two deprecated flags), so the table is kept here.
UNSUPPORTED_CONFIG_ACTIONS = {
    "lora_paths": "LoRAPathAction",
    "hybrid_kvcache_ratio": "DeprecatedAction",
    "prefill_round_robin_balance": "DeprecatedAction",
}


class ConfigSubsetError(Exception):
    """The file uses YAML the double does not read (real SGLang might)."""


# --------------------------------------------------------------------------- YAML subset
# Plain-scalar resolution follows YAML 1.1 as PyYAML's SafeLoader applies it.
_NULLS = {"", "~", "null", "Null", "NULL"}
_TRUE = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"}
_FALSE = {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"}
_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)\Z")
_FLOAT = re.compile(r"[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+][0-9]+)?\Z")
_INF = re.compile(r"[-+]?\.(?:inf|Inf|INF)\Z")
_NAN = re.compile(r"\.(?:nan|NaN|NAN)\Z")
# Forms PyYAML reads as numbers or dates with a value whose str() differs from
# the text (octal, hex, binary, underscores, base 60, timestamps): refused.
_AMBIGUOUS = [
    (re.compile(r"[-+]?0[0-9_]+(?:\.[0-9_]*)?\Z"), "a number with a leading zero (YAML 1.1 reads 017 as octal 15)"),
    (re.compile(r"[-+]?0[xXbBoO][0-9a-fA-F_]+\Z"), "a hex/binary/octal number"),
    (re.compile(r"[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][-+][0-9]+)?\Z"), "a number with underscores"),
    (re.compile(r"[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?\Z"), "a base-60 number"),
    (re.compile(r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt ].*)?\Z"), "a date/timestamp"),
]
_PLAIN_BAD_START = set("[]{},#&*!|>'\"%@`?")
_ESCAPES = {"0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v",
            "f": "\f", "r": "\r", "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\",
            "N": "\x85", "_": "\xa0", "L": "\u2028", "P": "\u2029"}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}


class _Line:
    def __init__(self, number: int, indent: int, text: str):
        self.number = number
        self.indent = indent
        self.text = text  # without indentation and comment, right-stripped


def _strip_comment(text: str, number: int) -> str:
    """Drop a ``#`` comment (at the start or after a blank), outside quotes."""
    quote: Optional[str] = None
    i = 0
    while i < len(text):
        ch = text[i]
        if quote == "'":
            if ch == "'":
                if i + 1 < len(text) and text[i + 1] == "'":
                    i += 2
                    continue
                quote = None
        elif quote == '"':
            if ch == "\\":
                i += 2
                continue
            if ch == '"':
                quote = None
        elif ch in "'\"" and (i == 0 or text[i - 1] in " \t[,:-"):
            quote = ch
        elif ch == "#" and (i == 0 or text[i - 1] in " \t"):
            return text[:i].rstrip()
        i += 1
    return text.rstrip()


def _lines(text: str) -> List[_Line]:
    if text.startswith("\ufeff"):
        text = text[1:]
    out: List[_Line] = []
    seen_content = False
    for number, raw in enumerate(text.splitlines(), 1):
        body = raw.lstrip(" ")
        if body.startswith("\t") and body.strip():
            raise ConfigSubsetError("line %d: a tab in the indentation (YAML forbids it)" % number)
        stripped = _strip_comment(body, number)
        if not stripped.strip():
            continue
        indent = len(raw) - len(body)
        if indent == 0 and stripped.startswith("%"):
            raise ConfigSubsetError("line %d: YAML directives (%%...) are not read" % number)
        if indent == 0 and (stripped == "---" or stripped.startswith("--- ")):
            if seen_content or stripped != "---":
                raise ConfigSubsetError(
                    "line %d: only one YAML document, with nothing after its '---' marker, is read" % number)
            continue
        if indent == 0 and (stripped == "..." or stripped.startswith("... ")):
            raise ConfigSubsetError("line %d: the document end marker '...' is not read" % number)
        seen_content = True
        out.append(_Line(number, indent, stripped.strip()))
    return out


def _quoted(text: str, number: int) -> Tuple[str, str]:
    """Parse a quoted scalar at the start of ``text``; return (value, rest)."""
    quote = text[0]
    out: List[str] = []
    i = 1
    while i < len(text):
        ch = text[i]
        if quote == "'":
            if ch == "'":
                if i + 1 < len(text) and text[i + 1] == "'":
                    out.append("'")
                    i += 2
                    continue
                return "".join(out), text[i + 1:]
            out.append(ch)
            i += 1
            continue
        if ch == '"':
            return "".join(out), text[i + 1:]
        if ch == "\\":
            if i + 1 >= len(text):
                break
            esc = text[i + 1]
            if esc in _ESCAPES:
                out.append(_ESCAPES[esc])
                i += 2
                continue
            if esc in _HEX_ESCAPES:
                width = _HEX_ESCAPES[esc]
                digits = text[i + 2:i + 2 + width]
                if len(digits) != width or not re.fullmatch(r"[0-9a-fA-F]+", digits):
                    raise ConfigSubsetError("line %d: bad escape \\%s%s" % (number, esc, digits))
                out.append(chr(int(digits, 16)))
                i += 2 + width
                continue
            raise ConfigSubsetError("line %d: unknown escape \\%s in a double-quoted string" % (number, esc))
        out.append(ch)
        i += 1
    raise ConfigSubsetError("line %d: unterminated %s-quoted string (multi-line strings are not read)"
                            % (number, "single" if quote == "'" else "double"))


def _plain(text: str, number: int, in_flow: bool) -> Any:
    """Resolve a plain (unquoted) scalar the way YAML 1.1 / PyYAML does."""
    if text and (text[0] in _PLAIN_BAD_START or text in ("-", ":") or text.startswith(("- ", ": "))):
        if text[0] in "&*!":
            what = "anchors, aliases and tags are"
        elif text[0] in "|>":
            what = "block scalars (| and >) are"
        elif text[0] == "{":
            what = "flow mappings ({...}) are"
        elif text[0] == "[":
            what = "nested lists are"
        elif text == "-" or text.startswith("- "):
            what = "a list item is"
        else:
            what = "a plain value starting with %r is" % text[0]
        raise ConfigSubsetError("line %d: %s not read (value %r)" % (number, what, text))
    if ": " in text or text.endswith(":"):
        raise ConfigSubsetError("line %d: nested mappings are not read (value %r)" % (number, text))
    if in_flow and any(c in text for c in "[]{}"):
        raise ConfigSubsetError("line %d: nested flow collections are not read (value %r)" % (number, text))
    if text in _NULLS:
        return None
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    if _INT.match(text):
        return int(text)
    if _FLOAT.match(text):
        return float(text)
    if _INF.match(text):
        return float("-inf") if text.startswith("-") else float("inf")
    if _NAN.match(text):
        return float("nan")
    if text == "=" or text == "<<":
        raise ConfigSubsetError("line %d: the YAML value/merge key %r is not read" % (number, text))
    for pattern, what in _AMBIGUOUS:
        if pattern.match(text):
            raise ConfigSubsetError("line %d: %r looks like %s; quote it to pass it as a string"
                                    % (number, text, what))
    return text


def _scalar(text: str, number: int, in_flow: bool = False) -> Any:
    if text[:1] in ("'", '"'):
        value, rest = _quoted(text, number)
        if rest.strip():
            raise ConfigSubsetError("line %d: unexpected text after a quoted string: %r" % (number, rest.strip()))
        return value
    return _plain(text, number, in_flow)


def _flow_list(text: str, number: int) -> List[Any]:
    if not text.endswith("]"):
        raise ConfigSubsetError("line %d: a [...] list must close on the same line" % number)
    inner = text[1:-1].strip()
    if not inner:
        return []
    items: List[Any] = []
    rest = inner
    while True:
        rest = rest.lstrip()
        if rest[:1] in ("'", '"'):
            value, rest = _quoted(rest, number)
            rest = rest.lstrip()
            if rest and not rest.startswith(","):
                raise ConfigSubsetError("line %d: expected ',' after a quoted list item" % number)
        else:
            end = rest.find(",")
            piece = (rest if end < 0 else rest[:end]).strip()
            rest = "" if end < 0 else rest[end:]
            if not piece:
                raise ConfigSubsetError("line %d: an empty item in a [...] list" % number)
            value = _plain(piece, number, in_flow=True)
        items.append(value)
        if not rest:
            return items
        rest = rest[1:]  # the comma
        if not rest.strip():
            return items  # a trailing comma, as YAML allows


def _split_key(line: _Line) -> Tuple[str, str]:
    """``key: value`` -> (key, value text); raises when the line is not a mapping entry."""
    text = line.text
    if text[:1] in ("'", '"'):
        key, rest = _quoted(text, line.number)
        if not rest.startswith(":") or (len(rest) > 1 and rest[1] != " "):
            raise ConfigSubsetError("line %d: expected ':' after the quoted key" % line.number)
        return key, rest[1:].strip()
    match = re.search(r":(?: |$)", text)
    if not match:
        raise ConfigSubsetError("line %d: expected 'key: value', got %r" % (line.number, text))
    raw_key = text[:match.start()].rstrip()
    if not raw_key:
        raise ConfigSubsetError("line %d: an empty key" % line.number)
    if raw_key.startswith("? "):
        raise ConfigSubsetError("line %d: complex keys (? ...) are not read" % line.number)
    key = _plain(raw_key, line.number, in_flow=False)
    if not isinstance(key, str):
        raise ConfigSubsetError("line %d: the key %r is not a string in YAML (it reads as %r); quote it"
                                % (line.number, raw_key, key))
    return key, text[match.end():].strip()


def _is_mapping_entry(line: _Line) -> bool:
    text = line.text
    if text[:1] in ("'", '"'):
        try:
            dummy, rest = _quoted(text, line.number)
        except ConfigSubsetError:
            return False
        return rest == ":" or rest.startswith(": ")
    if text[:1] in ("[", "{"):
        return False
    return re.search(r":(?: |$)", text) is not None


def _block_list(lines: List[_Line], start: int, indent: int) -> Tuple[List[Any], int]:
    items: List[Any] = []
    i = start
    while i < len(lines) and lines[i].indent == indent and (lines[i].text == "-" or lines[i].text.startswith("- ")):
        line = lines[i]
        item = line.text[1:].strip()
        if not item:
            raise ConfigSubsetError("line %d: an empty list item (nested blocks are not read)" % line.number)
        if item.startswith("["):
            raise ConfigSubsetError("line %d: nested lists are not read" % line.number)
        items.append(_scalar(item, line.number))
        i += 1
        if i < len(lines) and lines[i].indent > indent:
            raise ConfigSubsetError("line %d: nested blocks and multi-line values are not read" % lines[i].number)
    return items, i


def _value(text: str, line: _Line) -> Any:
    if text.startswith("["):
        return _flow_list(text, line.number)
    if text.startswith("{"):
        raise ConfigSubsetError("line %d: flow mappings ({...}) are not read" % line.number)
    return _scalar(text, line.number)


def load_yaml_subset(text: str) -> Any:
    """Read the YAML subset SGLang config files use; return None, a scalar, a list or a dict.

    Read: one mapping of ``key: value`` lines (or a single list or scalar, which
    the merger then refuses as SGLang does); values that are scalars (plain or
    quoted strings, ints, floats, booleans, null, resolved as YAML 1.1) or
    lists of scalars, in block form (``- x`` lines, indented or at the key's
    indentation) or flow form (``[a, b]`` on one line); ``#`` comments; blank
    lines; one leading ``---``. Anything else raises ConfigSubsetError.
    """
    lines = _lines(text)
    if not lines:
        return None
    first = lines[0]
    root = first.indent
    if any(line.indent < root for line in lines):
        bad = next(line for line in lines if line.indent < root)
        raise ConfigSubsetError("line %d: less indented than the document's first line" % bad.number)
    if first.text == "-" or first.text.startswith("- "):
        items, end = _block_list(lines, 0, root)
        if end != len(lines):
            raise ConfigSubsetError("line %d: unexpected content after the list" % lines[end].number)
        return items
    if not _is_mapping_entry(first):
        if len(lines) > 1:
            raise ConfigSubsetError("line %d: multi-line values are not read" % lines[1].number)
        return _value(first.text, first)
    result: Dict[str, Any] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.indent != root:
            raise ConfigSubsetError("line %d: nested mappings and multi-line values are not read" % line.number)
        if line.text == "-" or line.text.startswith("- "):
            raise ConfigSubsetError("line %d: a list item where a key was expected" % line.number)
        key, rest = _split_key(line)
        i += 1
        if rest:
            result[key] = _value(rest, line)
            if i < len(lines) and lines[i].indent > root:
                raise ConfigSubsetError("line %d: nested blocks and multi-line values are not read" % lines[i].number)
            continue
        nxt = lines[i] if i < len(lines) else None
        if nxt is not None and (nxt.text == "-" or nxt.text.startswith("- ")) and nxt.indent >= root:
            result[key], i = _block_list(lines, i, nxt.indent)
            if i < len(lines) and lines[i].indent > root:
                raise ConfigSubsetError("line %d: unexpected indentation after a list" % lines[i].number)
        elif nxt is not None and nxt.indent > root:
            raise ConfigSubsetError("line %d: nested mappings are not read (under %r)" % (nxt.number, key))
        else:
            result[key] = None
    return result


# --------------------------------------------------------------------------- the merge
def _config_path(argv: List[str]) -> Optional[str]:
    positions = [i for i, arg in enumerate(argv) if arg == "--config"]
    if len(positions) > 1:
        raise ValueError("Multiple config files specified! Only one allowed.")
    if not positions:
        return None
    if positions[0] == len(argv) - 1:
        raise ValueError("No config file specified after --config flag!")
    return argv[positions[0] + 1]


def read_config(path: str) -> Dict[str, Any]:
    """Check and read the file as SGLang does (suffix first, then existence)."""
    suffix = Path(path).suffix
    if suffix.lower() not in (".yaml", ".yml"):
        raise ValueError("Config file must be YAML format, got: %s" % suffix)
    if not Path(path).exists():
        raise ValueError("Config file not found: %s" % path)
    try:
        with open(path) as f:
            text = f.read()
    except Exception as exc:
        logger.error("Failed to read config file %s: %s", path, exc)
        raise
    data = load_yaml_subset(text)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ValueError("Config file must contain a dictionary at root level")
    return data


def config_to_argv(config: Dict[str, Any], parser: argparse.ArgumentParser) -> List[str]:
    store_true = {a.dest for a in parser._actions if isinstance(a, argparse._StoreTrueAction)}
    odd = {a.dest: type(a).__name__ for a in parser._actions
           if a.option_strings and not isinstance(a, (argparse._StoreTrueAction, argparse._StoreAction))
           and not set(a.option_strings) & {"--config", "--help", "-h"}}
    odd.update(UNSUPPORTED_CONFIG_ACTIONS)
    argv: List[str] = []
    for key, value in config.items():
        dest = key.replace("-", "_")
        if dest in odd:
            raise ValueError("Unsupported config option '%s' with action '%s'" % (dest, odd[dest]))
        option = "--" + key
        if isinstance(value, bool):
            if dest in store_true:
                if value:
                    argv.append(option)
            else:
                argv += [option, "true" if value else "false"]
        elif isinstance(value, list):
            if value:
                argv.append(option)
                argv += [str(item) for item in value]
        else:
            argv += [option, str(value)]
    return argv


def merge_config_with_args(argv: List[str], parser: argparse.ArgumentParser) -> List[str]:
    """File arguments first, then the command line without ``--config FILE``."""
    path = _config_path(argv)
    if path is None:
        return list(argv)
    config_argv = config_to_argv(read_config(path), parser)
    at = argv.index("--config")
    return config_argv + argv[:at] + argv[at + 2:]


class ConfigArgumentMerger:
    """SGLang's entry point to the merge, as ``prepare_server_args`` and the collection's pre-flight call it:
    ``ConfigArgumentMerger(parser).merge_config_with_args(cli_args)`` -> the merged argv (0.5.9
    ``sglang/srt/server_args_config_parser.py``, 0.5.23 ``sglang/srt/utils/server_args_config_parser.py``:
    same constructor ``(parser=None, boolean_actions=None)`` and method in both)."""

    def __init__(self, parser: Optional[argparse.ArgumentParser] = None, boolean_actions: Optional[List[str]] = None):
        self.parser = parser if parser is not None else argparse.ArgumentParser()

    def merge_config_with_args(self, cli_args: List[str]) -> List[str]:
        return merge_config_with_args(list(cli_args), self.parser)
