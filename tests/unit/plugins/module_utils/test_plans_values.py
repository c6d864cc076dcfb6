# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""How the plans read values handed in from Ansible (_plans/values.py)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils._plans import values
from ansible_collections.inferops.sglang.plugins.module_utils._plans.values import as_dict, truth


@pytest.mark.parametrize('value, expected', [
    (True, True), (1, True), ('yes', True), (' True ', True), ('on', True), ('1', True),
    (False, False), (None, False), ('False', False), ('', False), (2, False), ('maybe', False),
    ([], False), (['yes'], False), ({}, False), ({'a': 1}, False),
])
def test_truth_is_ansible_bool_and_never_raises(value, expected):
    assert truth(value) is expected


def test_as_dict_copies_a_mapping_and_takes_anything_else_as_empty():
    source = {'a': 1}
    copy = as_dict(source)
    assert copy == source and copy is not source
    assert as_dict(None) == {} and as_dict('text') == {} and as_dict([('a', 1)]) == {}


def test_ran_is_a_result_that_ran():
    assert values.ran({'changed': True}) == {'changed': True}
    assert values.ran({'skipped': True, 'changed': False}) == {}
    assert values.ran({'skipped': 'false', 'changed': True}) == {'skipped': 'false', 'changed': True}
    assert values.ran(None) == {} and values.ran('text') == {} and values.ran([1]) == {}


@pytest.mark.parametrize('value, read', [(7, 7), ('7', 7), ('7.9', 7), (7.9, 7), (None, 0), ('x', 0), ('', 0),
                                         (float('inf'), 0), ('1e999', 0)])
def test_jinja_int_reads_as_jinjas_int_filter(value, read):
    from ansible_collections.inferops.sglang.plugins.module_utils._plans.values import jinja_int
    assert jinja_int(value) == read
    assert jinja_int(None, 5) == 5
