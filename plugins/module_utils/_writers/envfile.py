# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""Writer of environment files: the files named by systemd's ``EnvironmentFile=`` that the supervisord wrapper
script (``sglang-run.sh``) also sources with a POSIX ``sh``.

One line must mean the same to both readers. systemd.exec(5), ``EnvironmentFile=``: a double-quoted value keeps its
white space, and a backslash followed by one of ``"`` ``\\`` `````` ``$`` stands for that character (the rule of
POSIX shell double quotes, XCU 2.2.3); systemd expands neither ``$VAR`` nor ``%`` specifiers in these values
(checked with systemd 252: ``E=$HOME ${X} %h`` arrives as that literal text). A backslash before a line break
continues the value in both readers, so a line break cannot be written; systemd drops an assignment whose value
holds a control character other than tab (``strv_env_clean``), so those are refused too.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.inferops.sglang.plugins.module_utils._writers.common import Unwritable, refuse_chars
from ansible_collections.inferops.sglang.plugins.module_utils._writers.systemd import ENV_NAME_RE


def _scalar_text(value):
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        # The shortest text that reads back (as the server argv writer does): 0.88 -> '0.88', 2.0 -> '2'.
        text = repr(value)
        return text[:-2] if text.endswith('.0') else text
    if value is None:
        return ''
    if not isinstance(value, str):
        raise Unwritable('must be text or a number, not a %s' % type(value).__name__)
    return value


def environment_file_line(name, value):
    """One ``NAME="value"`` line of an environment file (no trailing newline).

    ``value``: text, a number (its text), a boolean (``true``/``false``) or None (empty). Inside the double quotes
    ``\\`` ``"`` ``$`` and the backtick are escaped; everything else (``%``, ``'``, ``#``, UTF-8) is written as it is.
    Raises :class:`Unwritable` (a ValueError) for a name that is not ``[A-Za-z_][A-Za-z0-9_]*``, a value holding a
    line break, carriage return, NUL or other control character but tab, or a value of another type; the message
    names the variable, never the value.
    """
    if not isinstance(name, str) or not ENV_NAME_RE.match(name):
        raise Unwritable('invalid environment variable name: use [A-Za-z_][A-Za-z0-9_]*')
    try:
        text = _scalar_text(value)
        refuse_chars(text, 'an environment file line', allowed='\t')
    except Unwritable as exc:
        raise Unwritable('value of %s %s' % (name, exc))
    escaped = []
    for ch in text:
        if ch in '\\"$`':
            escaped.append('\\' + ch)
        else:
            escaped.append(ch)
    return '%s="%s"' % (name, ''.join(escaped))
