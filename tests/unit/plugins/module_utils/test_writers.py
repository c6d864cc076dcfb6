# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The writers' shared refusals: a message that names the character, never the value."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils._writers.common import (
    Unwritable,
    as_text,
    char_phrase,
    one_line,
    refuse_chars,
)


@pytest.mark.parametrize('ch, phrase', [('\n', 'a line break'), ('\r', 'a carriage return'), ('\x00', 'a NUL byte'),
                                        ('\x1b', 'a control character (U+001B)'), ('\udc80', 'lone surrogate')])
def test_char_phrase(ch, phrase):
    assert phrase in char_phrase(ch)


def test_unwritable_is_a_value_error_without_the_value():
    with pytest.raises(ValueError) as caught:
        refuse_chars('secret\nvalue', 'a unit line')
    assert isinstance(caught.value, Unwritable)
    assert 'secret' not in str(caught.value)


def test_as_text():
    assert as_text(8, 'x') == '8'
    with pytest.raises(Unwritable, match='boolean'):
        as_text(True, 'x')
    with pytest.raises(Unwritable, match='not text'):
        as_text(None, 'x')


@pytest.mark.parametrize('value', ['a\nb', 'a\u2028b', 'a\x85b', 'a\x1eb', 'a\rb'])
def test_one_line_refuses_line_breaks(value):
    with pytest.raises(Unwritable):
        one_line(value)


def test_one_line_keeps_text():
    assert one_line('/etc/sglang/my env %h') == '/etc/sglang/my env %h'
