# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""What every writer shares (the package _writers has one writer per file format the collection writes; each quotes a
value for its format or refuses it).

Values the collection does not control (a hand-started server's cwd, argv and environment; inventory values)
reach root-owned files (systemd units, supervisord configuration, shell scripts, environment files, YAML and
Python files). Templates do not quote by hand: every such value goes through the writer of its format, in the
sub-modules ``systemd``, ``envfile``, ``supervisor``, ``shell``, ``data`` and ``markdown``. ``problems`` turns
the refusals into pre-flight messages.

A writer either returns text that the format's own parser reads back as exactly the value, or raises
:class:`Unwritable` (a ``ValueError``), whose message says what was refused and never holds the value (it may be
a secret, and it is an attacker's text), so that the caller can prefix the name of the variable or adopted field.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


class Unwritable(ValueError):
    """A value that a format cannot hold. ``str(exc)`` names what was refused, never the value."""


_NAMED = {
    '\n': 'a line break',
    '\r': 'a carriage return',
    '\x00': 'a NUL byte',
    '\t': 'a tab',
}


def char_phrase(ch):
    """A phrase naming one character without showing the value around it (``'a line break'``)."""
    if ch in _NAMED:
        return _NAMED[ch]
    if 0xD800 <= ord(ch) <= 0xDFFF:
        return 'text that is not valid Unicode (a lone surrogate, not writable as UTF-8)'
    if ch.isspace():
        return 'a white-space character (U+%04X)' % ord(ch)
    return 'a control character (U+%04X)' % ord(ch)


def is_control(ch):
    """True for C0/C1 control characters, DEL, and lone surrogates (not encodable as UTF-8)."""
    code = ord(ch)
    return code < 0x20 or 0x7f <= code <= 0x9f or 0xD800 <= code <= 0xDFFF


def as_text(value, what):
    """``value`` as text: str as it is, int/float as their text; other types are refused."""
    if isinstance(value, bool):
        raise Unwritable('is a boolean, not text, which %s cannot hold as such (quote it in YAML)' % what)
    if isinstance(value, (int, float)):
        return str(value)
    if not isinstance(value, str):
        raise Unwritable('is a %s, not text, which %s cannot hold' % (type(value).__name__, what))
    return value


def refuse_chars(value, what, allowed=''):
    """Raise :class:`Unwritable` for the first control character (or surrogate) of ``value`` not in ``allowed``."""
    for ch in value:
        if is_control(ch) and ch not in allowed:
            raise Unwritable('holds %s, which %s cannot hold' % (char_phrase(ch), what))


def one_line(value):
    """``value`` (text or a number) for a comment line of any line-based file (a unit, an env file, an ini file,
    a shell script), unchanged. Refused: a line break or any other control character (``str.splitlines`` also
    breaks at U+001C-U+001E, U+0085, U+2028 and U+2029; a line break would end the comment and start a line the
    file's reader acts on), a lone surrogate."""
    text = as_text(value, 'a comment line')
    for ch in text:
        if is_control(ch) or ch in '\u2028\u2029':
            raise Unwritable('holds %s, which a comment line cannot hold' % char_phrase(ch))
    return text
