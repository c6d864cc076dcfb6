# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""Writers of data files: YAML (SGLang's ``--config`` file) and Python string literals (``sitecustomize.py``).

YAML 1.1 (PyYAML, which SGLang's ``--config`` reader ``yaml.safe_load`` uses): a double-quoted scalar takes the
escapes ``\\\\ \\" \\xNN \\uNNNN \\UNNNNNNNN``; a line break inside it would be folded, and PyYAML's reader refuses
characters outside its printable set, so every control character, C1 character (NEL ``U+0085`` is a YAML line
break), ``U+2028``/``U+2029``, BOM and non-character is written as an escape. Python: a double-quoted string
literal of ASCII characters only, every other one as ``\\xNN``/``\\uNNNN``/``\\UNNNNNNNN``
(``ast.literal_eval`` reads it back).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import math

from ansible_collections.inferops.sglang.plugins.module_utils._writers.common import Unwritable, as_text, char_phrase


def _escape(ch):
    code = ord(ch)
    if code < 0x100:
        return '\\x%02x' % code
    if code < 0x10000:
        return '\\u%04x' % code
    return '\\U%08x' % code


def _yaml_plain_ok(ch):
    code = ord(ch)
    if code < 0x20 or 0x7f <= code <= 0xa0:
        return False
    return code not in (0x2028, 0x2029, 0xfeff, 0xfffe, 0xffff)


def yaml_scalar(value):
    """A YAML value: ``null``, ``true``/``false``, an int, a float (finite), or text as a double-quoted scalar.

    Refused (:class:`Unwritable`): a lone surrogate (not writable as UTF-8), a float that is not finite, any other
    type (lists and mappings: :func:`config_yaml`).
    """
    if value is None:
        return 'null'
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise Unwritable('is not a finite number, which the YAML writer does not write')
        text = repr(value)
        mantissa, e, exponent = text.partition('e')
        # YAML 1.1 (PyYAML) reads a float only with a '.' and a signed exponent: 1e-05 -> 1.0e-05.
        return (mantissa if '.' in mantissa else mantissa + '.0') + e + exponent
    text = as_text(value, 'a YAML scalar')
    out = []
    for ch in text:
        if 0xD800 <= ord(ch) <= 0xDFFF:
            raise Unwritable('holds %s, which a YAML file cannot hold' % char_phrase(ch))
        if ch == '\\':
            out.append('\\\\')
        elif ch == '"':
            out.append('\\"')
        elif _yaml_plain_ok(ch):
            out.append(ch)
        else:
            out.append(_escape(ch))
    return '"' + ''.join(out) + '"'


def config_yaml(mapping):
    """A YAML mapping document (one ``"key": value`` line each, keys as text) that ``yaml.safe_load`` reads back as
    ``mapping``; a value may be a scalar (:func:`yaml_scalar`) or a list of scalars (a flow sequence). Empty
    mapping: ``{}``. Raises :class:`Unwritable` for what :func:`yaml_scalar` refuses or a nested mapping."""
    if not hasattr(mapping, 'items'):
        raise Unwritable('is not a mapping, which a YAML configuration file needs')
    if not mapping:
        return '{}\n'
    lines = []
    for key, value in mapping.items():
        if isinstance(value, (list, tuple)):
            written = '[' + ', '.join(yaml_scalar(item) for item in value) + ']'
        else:
            written = yaml_scalar(value)
        lines.append('%s: %s\n' % (yaml_scalar(str(key) if not isinstance(key, str) else key), written))
    return ''.join(lines)


def py_str(value):
    """``value`` (text or a number, as text) as a Python string literal of ASCII characters (double quotes).

    Refused: a lone surrogate (``os.environ`` cannot encode it), a type other than text or a number.
    """
    text = as_text(value, 'a Python string')
    out = []
    for ch in text:
        if 0xD800 <= ord(ch) <= 0xDFFF:
            raise Unwritable('holds %s, which a Python file cannot hold' % char_phrase(ch))
        if ch == '\\':
            out.append('\\\\')
        elif ch == '"':
            out.append('\\"')
        elif ' ' <= ch <= '~':
            out.append(ch)
        else:
            out.append(_escape(ch))
    return '"' + ''.join(out) + '"'
