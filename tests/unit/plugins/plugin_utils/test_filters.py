# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The adapter every filter plugin file uses (plugins/plugin_utils/_filters.py)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.inferops.sglang.plugins.plugin_utils._filters import as_filter


def halve(value):
    """Half of an even number."""
    if value % 2:
        raise ValueError('%d is odd' % value)
    return value // 2


def test_the_filter_returns_what_the_function_returns_and_keeps_its_doc():
    half = as_filter(halve, 'half')
    assert half(4) == 2 and half.__name__ == 'half' and half.__doc__ == halve.__doc__
    assert as_filter(halve).__name__ == 'halve'


@pytest.mark.parametrize('value, message', [(3, 'half: 3 is odd'), ('x', 'half: not all arguments converted')])
def test_value_and_type_errors_become_filter_errors_named_by_the_filter(value, message):
    with pytest.raises(AnsibleFilterError, match=message):
        as_filter(halve, 'half')(value)


def test_other_errors_pass_through():
    with pytest.raises(ZeroDivisionError):
        as_filter(lambda: 1 // 0, 'boom')()
