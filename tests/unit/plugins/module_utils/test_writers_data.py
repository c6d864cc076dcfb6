# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The data writers: YAML that yaml.safe_load reads back exactly (SGLang's --config reader), Python string literals
that ast.literal_eval reads back exactly (sitecustomize.py); or they refuse."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import ast
import math

import pytest
import yaml

from ansible_collections.inferops.sglang.plugins.module_utils._writers.common import Unwritable
from ansible_collections.inferops.sglang.plugins.module_utils._writers.data import config_yaml, py_str, yaml_scalar

try:
    import hypothesis
    from hypothesis import strategies as st
except ImportError:  # ansible-test's venv has no hypothesis: the property tests are skipped there
    hypothesis = None


@pytest.mark.parametrize('value', [
    'sk-abc', '', 'yes', 'no', 'null', '~', '1e3', '0x10', '- a', 'a: b', '# c', '"', "'", '\\', '\n', 'a\nb',
    '\x85', '\u2028', '\ufeff', '\x7f', '\t', ' lead', 'trail ', '日本', '\U0001F600', '%h', '$x', '{a: 1}', '[1]',
    None, True, False, 0, -3, 1.5, 1e-05,
])
def test_yaml_scalar_reads_back(value):
    assert yaml.safe_load('k: %s\n' % yaml_scalar(value)) == {'k': value}


@pytest.mark.parametrize('value', ['\ud800', float('nan'), float('inf'), ['a'], {'a': 1}])
def test_yaml_scalar_refuses(value):
    with pytest.raises(Unwritable):
        yaml_scalar(value)


def test_config_yaml_reads_back():
    mapping = {'api-key': 'k"\n', 'tp-size': 8, 'a: b\nc': 'd', 'list': ['x', 1, None], 'flag': True}
    assert yaml.safe_load(config_yaml(mapping)) == mapping
    assert config_yaml({}) == '{}\n'
    with pytest.raises(Unwritable):
        config_yaml({'a': {'b': 1}})


@pytest.mark.parametrize('value', ['', 'a"b', "a'b", '\\', '\n', '\x00', '日本', '\U0001F600', '\x85', '{}', 8])
def test_py_str_reads_back(value):
    written = py_str(value)
    assert written.isascii() if hasattr(written, 'isascii') else all(ord(ch) < 128 for ch in written)
    assert ast.literal_eval(written) == str(value)


def test_py_str_refuses_a_lone_surrogate():
    with pytest.raises(Unwritable, match='surrogate'):
        py_str('\udc80')


if hypothesis is not None:
    SETTINGS = hypothesis.settings(max_examples=300, deadline=None)
    SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30)

    @SETTINGS
    @hypothesis.given(st.dictionaries(st.text(max_size=15), SCALARS | st.lists(SCALARS, max_size=3), max_size=4))
    def test_config_yaml_reads_back_or_refuses(mapping):
        try:
            written = config_yaml(mapping)
        except Unwritable:
            return
        loaded = yaml.safe_load(written)
        assert repr(loaded) == repr(mapping) or loaded == mapping
        for key, value in mapping.items():
            if isinstance(value, float):
                assert not math.isnan(value)

    @SETTINGS
    @hypothesis.given(st.text(max_size=40))
    def test_python_strings_read_back_or_refuse(value):
        try:
            written = py_str(value)
        except Unwritable:
            return
        assert ast.literal_eval(written) == value
