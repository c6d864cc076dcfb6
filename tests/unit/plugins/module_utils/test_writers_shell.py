# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The POSIX shell word writer: shlex.split (POSIX mode) reads each word back as one word, the value; or it refuses."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import shlex

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils._writers.common import Unwritable
from ansible_collections.inferops.sglang.plugins.module_utils._writers.shell import shell_word

try:
    import hypothesis
    from hypothesis import strategies as st
except ImportError:  # ansible-test's venv has no hypothesis: the property tests are skipped there
    hypothesis = None


@pytest.mark.parametrize('value, written', [
    ('/srv/sglang', '/srv/sglang'),
    ('/data/models %h', "'/data/models %h'"),
    ("it's", "'it'\"'\"'s'"),
    ('$(id)', "'$(id)'"),
    ('', "''"),
    ('w\nExecStartPre=+/bin/sh -c "id > /pwned-root"', "'w\nExecStartPre=+/bin/sh -c \"id > /pwned-root\"'"),
    ('日本', "'日本'"),
    (8, '8'),
])
def test_shell_word(value, written):
    assert shell_word(value) == written
    assert shlex.split('cd ' + written) == ['cd', str(value)]


@pytest.mark.parametrize('value', ['a\x00b', 'a\udc80', None, ['a']])
def test_shell_word_refuses(value):
    with pytest.raises(Unwritable):
        shell_word(value)


if hypothesis is not None:
    @hypothesis.settings(max_examples=300, deadline=None)
    @hypothesis.given(st.lists(st.text(max_size=20), max_size=5))
    def test_shell_words_read_back_or_refuse(words):
        try:
            written = [shell_word(word) for word in words]
        except Unwritable:
            return
        assert shlex.split(' '.join(written)) == words
