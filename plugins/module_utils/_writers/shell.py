# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""Writer of POSIX shell words (the supervisord wrapper script ``sglang-run.sh``).

POSIX XCU 2.2.2: inside single quotes every character is literal, and a single quote cannot appear, so a word is
written in single quotes with each ``'`` as ``'"'"'`` (what Python's ``shlex.quote`` does). A NUL byte cannot be
held by any shell word (C strings), so it is refused; a lone surrogate cannot be written as UTF-8.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import shlex

from ansible_collections.inferops.sglang.plugins.module_utils._writers.common import Unwritable, as_text, char_phrase


def shell_word(value):
    """``value`` (text or a number) as one POSIX shell word; raises :class:`Unwritable` for NUL or a surrogate."""
    text = as_text(value, 'a shell word')
    for ch in text:
        if ch == '\x00' or 0xD800 <= ord(ch) <= 0xDFFF:
            raise Unwritable('holds %s, which a shell word cannot hold' % char_phrase(ch))
    return shlex.quote(text)
