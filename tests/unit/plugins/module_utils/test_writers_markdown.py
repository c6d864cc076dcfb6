# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Markdown writers: a code span holds the value whatever backticks it has, a fence cannot be closed by the value,
a table cell holds no line break and no unescaped ``|``."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils._writers.markdown import md_cell, md_code, md_fence, md_inline

try:
    import hypothesis
    from hypothesis import strategies as st
except ImportError:  # ansible-test's venv has no hypothesis: the property tests are skipped there
    hypothesis = None


def read_code_span(span):
    """CommonMark 6.1: the opening run, the content up to the next run of the same length, one space stripped from
    each end when both are spaces (and the content is not all spaces)."""
    opening = re.match('`+', span).group(0)
    rest = span[len(opening):]
    for match in re.finditer('`+', rest):
        if len(match.group(0)) == len(opening):
            content = rest[:match.start()]
            assert rest[match.end():] == '', 'the span closed early'
            if content.startswith(' ') and content.endswith(' ') and content.strip(' '):
                content = content[1:-1]
            return content
    raise AssertionError('not closed')


@pytest.mark.parametrize('value, written', [
    ('/srv/sglang', '`/srv/sglang`'),
    ('a`b', '``a`b``'),
    ('`x`', '`` `x` ``'),
    ('a``b`c', '```a``b`c```'),
    ('two\nlines', '`two lines`'),
    (8, '`8`'),
])
def test_md_code(value, written):
    assert md_code(value) == written
    assert read_code_span(written) == str(value).replace('\n', ' ')


def test_md_cell_escapes_pipes_and_line_breaks():
    assert md_cell('a|b\nc') == 'a\\|b c'
    assert md_cell(md_code('x|y')) == '`x\\|y`'


def test_md_fence_cannot_be_closed_by_the_value():
    block = md_fence('a\n```\nb', 'python')
    lines = block.split('\n')
    assert lines[0] == '````python' and lines[-1] == '````'
    assert '````' not in lines[1:-1]


def test_md_inline():
    assert md_inline('a\r\n# b\nc') == 'a # b c'


if hypothesis is not None:
    @hypothesis.settings(max_examples=300, deadline=None)
    @hypothesis.given(st.text(st.sampled_from('`a |\n\\'), max_size=20))
    def test_code_spans_read_back(value):
        written = md_code(value)
        assert '\n' not in written
        assert read_code_span(written) == (value.replace('\r\n', ' ').replace('\n', ' ').replace('\r', ' ') or ' ')
        cell = md_cell(written)
        assert '\n' not in cell and re.search(r'(?<!\\)\|', cell) is None
