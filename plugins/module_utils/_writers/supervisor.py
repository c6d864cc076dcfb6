# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""Writers of supervisord configuration values (``supervisord.conf``, ``supervisor.d/*.conf``).

Source: supervisor 4.3.0, ``supervisor/options.py``: the files are read by ``UnhosedConfigParser``, a
``configparser.RawConfigParser`` with ``inline_comment_prefixes=(';', '#')``; then ``%(here)s`` is replaced
textually in every value and each value is expanded with Python's ``%`` operator (``%(ENV_X)s``,
``%(program_name)s``...), so a literal ``%`` is ``%%``. Python's configparser strips white space around a value,
continues a value on lines that begin with white space, ends a line at a line break or carriage return, and starts
an inline comment at ``;`` or ``#`` at the start or after white space.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.inferops.sglang.plugins.module_utils._writers.common import Unwritable, as_text, refuse_chars

_NAME_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9_.@+-]*\Z')


def supervisor_value(value):
    """One value of ``key=value`` in a supervisord ini file, ``%`` written ``%%``.

    Refused (:class:`Unwritable`): a line break, carriage return or other control character (a line break would
    start a new line of the file: a new ``key=`` or ``[program:...]``), white space at either end (stripped), ``;``
    or ``#`` at the start or after white space (an inline comment), text that would hold ``%(here)s`` (replaced
    before the ``%`` expansion), a type other than text or a number.
    """
    text = as_text(value, 'a supervisord value')
    refuse_chars(text, 'a supervisord value')
    if text != text.strip():
        raise Unwritable('begins or ends with white space, which a supervisord value strips')
    for index, ch in enumerate(text):
        if ch in ';#' and (index == 0 or text[index - 1].isspace()):
            raise Unwritable('holds ";" or "#" at its start or after white space, which supervisord reads as a comment')
    written = text.replace('%', '%%')
    if '%(here)s' in written:
        raise Unwritable('holds "%(here)s" once "%" is doubled, which supervisord replaces before expanding "%%"')
    return written


def supervisor_word(value):
    """A :func:`supervisor_value` without white space (an entry of a space-separated list such as ``files=``)."""
    text = as_text(value, 'a supervisord word')
    if any(ch.isspace() for ch in text) or text == '':
        raise Unwritable('is empty or holds white space, which a supervisord word cannot hold')
    return supervisor_value(text)


def supervisor_name(value):
    """A program or group name (``[program:NAME]``): letters, digits and ``_ . @ + -``, starting with a letter or
    digit. supervisor refuses white space, ``:`` and ``/`` in names; ``]``, ``%``, ``;`` and ``#`` would change the
    section header or a value the name is written into. Anything else is refused."""
    text = as_text(value, 'a supervisord program name')
    if not _NAME_RE.match(text):
        raise Unwritable('is not a supervisord program name (letters, digits and "_.@+-", starting with a letter or '
                         'digit)')
    return text
