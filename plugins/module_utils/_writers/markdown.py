# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""Writers of Markdown (the deployment record and the fleet summary), after CommonMark 0.31 and GitHub Flavored
Markdown 0.29 (tables).

A code span (CommonMark 6.1) opens with a run of N backticks and closes at the next run of exactly N, so N is one
more than the longest run inside the value; one space is stripped from each end when both ends are spaces, so a
value that begins or ends with a backtick or a space gets one padding space on each side; line breaks inside are
shown as spaces, so they are written as spaces. A fenced code block (4.5) closes at a line of at least as many
backticks as its fence, so the fence is longer than any backtick run in the value. In a table row (GFM 4.10) a
``|`` separates cells even inside a code span unless written ``\\|``, and a line break ends the row.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.inferops.sglang.plugins.module_utils._writers.common import as_text

_BACKTICKS = re.compile('`+')
_LINE_BREAKS = re.compile('\r\n|[\r\n]')


def _longest_run(text):
    return max([len(run) for run in _BACKTICKS.findall(text)] or [0])


def md_code(value):
    """``value`` (text or a number) as one inline code span, on one line (line breaks written as spaces); an empty
    value as a span of one space."""
    text = _LINE_BREAKS.sub(' ', as_text(value, 'a Markdown code span'))
    if text == '':
        # No code span is empty (two backticks are literal text): one space stands for it.
        return '` `'
    fence = '`' * (_longest_run(text) + 1)
    if text.strip(' ') and (text[:1] in ('`', ' ') or text[-1:] in ('`', ' ')):
        text = ' %s ' % text
    return fence + text + fence


def md_cell(value):
    """Text for one table cell: line breaks as spaces, ``|`` as ``\\|`` (also inside a code span from md_code)."""
    text = _LINE_BREAKS.sub(' ', as_text(value, 'a Markdown table cell'))
    return text.replace('|', '\\|')


def md_inline(value):
    """Text on one line of a Markdown list item: line breaks as spaces (so that no heading or list starts)."""
    return _LINE_BREAKS.sub(' ', as_text(value, 'Markdown text'))


def md_fence(value, info=''):
    """``value`` (text) as a fenced code block, fence of backticks one longer than the longest run inside (at
    least three), ``info`` (one word such as ``python``) after the opening fence; no trailing line break."""
    text = as_text(value, 'a Markdown code block')
    fence = '`' * max(3, _longest_run(text) + 1)
    info = md_inline(info).replace('`', '')
    return '%s%s\n%s\n%s' % (fence, info, text, fence)
