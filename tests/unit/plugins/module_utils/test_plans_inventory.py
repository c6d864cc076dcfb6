# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of module_utils/_plans/inventory.py."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils._plans.inventory import host_var

HOSTVARS = {'h1': {'a': 1, 'none': None}, 'h2': None}


@pytest.mark.parametrize('hostvars, host, name, expected', [
    (HOSTVARS, 'h1', 'a', 1),
    (HOSTVARS, 'h1', 'none', 'd'),
    (HOSTVARS, 'h1', 'missing', 'd'),
    (HOSTVARS, 'h2', 'a', 'd'),
    (HOSTVARS, 'h3', 'a', 'd'),
    (None, 'h1', 'a', 'd'),
])
def test_host_var(hostvars, host, name, expected):
    assert host_var(hostvars, host, name, 'd') == expected
