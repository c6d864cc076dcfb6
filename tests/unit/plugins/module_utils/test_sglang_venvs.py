# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of module_utils/_sglang_venvs.py: the SGLang requirement, the venv of a version, the SGLANG_* names
a version's sources never mention, and which venvs to prune (issue 15)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import _sglang_venvs as sv


@pytest.mark.parametrize('text, name, extras, version', [
    ('sglang==0.5.10', 'sglang', [], '0.5.10'),
    ('  sglang == 0.5.10.post1 ', 'sglang', [], '0.5.10.post1'),
    ('sglang[all]==0.5.10', 'sglang', ['all'], '0.5.10'),
    ('SGLang[all, srt]==0.5.9', 'sglang', ['all', 'srt'], '0.5.9'),
    ('sglang==0.5.10rc1', 'sglang', [], '0.5.10rc1'),
])
def test_parse_exact_pins(text, name, extras, version):
    """Issue 15: an exact pin of the sglang distribution, with or without extras."""
    got = sv.parse_sglang_requirement(text)
    assert got == {'name': name, 'extras': extras, 'version': version}


@pytest.mark.parametrize('text, why', [
    ('sglang>=0.5.10', 'exact'),
    ('sglang~=0.5.10', 'exact'),
    ('sglang', 'exact'),
    ('sglang==0.5.*', 'exact'),
    ('sglang===0.5.10', 'exact'),
    ('sglang==0.5.10,<0.6', 'exact'),
    ('sglang==0.5.10; python_version>"3"', 'exact'),
    ('sglang @ https://example.org/sglang.whl', 'exact'),
    ('vllm==0.6.0', 'sglang'),
    ('sglang-router==0.2.1', 'sglang'),
    ('', 'exact'),
    ('sglang==0.5.10/../x', 'exact'),
])
def test_parse_refuses(text, why):
    """Issue 15: anything but an exact == pin of sglang is refused, naming the cause and the fix."""
    with pytest.raises(ValueError) as err:
        sv.parse_sglang_requirement(text)
    assert why in str(err.value) and 'service_sglang_version' in str(err.value)


def test_sglang_requirement_filter_shape():
    """The filter's answer: the parsed requirement, its venv and interpreter, and no problem."""
    got = sv.sglang_requirement('sglang[all]==0.5.10', '/opt/sglang/venvs/')
    assert got == {'name': 'sglang', 'extras': ['all'], 'version': '0.5.10', 'requirement': 'sglang[all]==0.5.10',
                   'venv': '/opt/sglang/venvs/0.5.10', 'python': '/opt/sglang/venvs/0.5.10/bin/python3', 'problem': ''}


def test_sglang_requirement_filter_problem():
    """A refused requirement gives its message in problem (for the pre-flight), not an exception."""
    got = sv.sglang_requirement('sglang>=0.5', '/opt/sglang/venvs')
    assert got['problem'] and got['version'] is None and got['venv'] is None


def test_sglang_requirement_needs_absolute_dir():
    got = sv.sglang_requirement('sglang==0.5.10', 'venvs')
    assert 'service_venvs_dir' in got['problem']


def test_install_marker_records_exact_requirements():
    """The marker's text changes with any requirement, so another set is installed again."""
    one = sv.install_marker(['sglang==0.5.10', 'torch==2.9.1'])
    assert one == sv.install_marker(['sglang==0.5.10', 'torch==2.9.1'])
    assert one != sv.install_marker(['sglang==0.5.10'])
    assert '"sglang==0.5.10"' in one


def test_names_absent_from_texts():
    """Issue 15 (SGLANG_ENABLE_SPEC_V2): the names no source text mentions, in the order given."""
    texts = iter(['x = os.environ.get("SGLANG_A")', 'envs.SGLANG_B.get()'])
    assert sv.names_absent_from_texts(['SGLANG_C', 'SGLANG_A', 'SGLANG_B', 'SGLANG_AB'], texts) == ['SGLANG_C', 'SGLANG_AB']


def test_names_absent_stops_reading_when_all_found():
    read = []

    def texts():
        for text in ('SGLANG_A', 'never'):
            read.append(text)
            yield text
    assert sv.names_absent_from_texts(['SGLANG_A'], texts()) == []
    assert read == ['SGLANG_A']


def test_package_sources(tmp_path):
    """Only the package's .py files are read."""
    (tmp_path / 'srt').mkdir()
    (tmp_path / 'srt' / 'environ.py').write_text(u'SGLANG_X = 1\n')
    (tmp_path / 'README.md').write_text(u'SGLANG_Y\n')
    (tmp_path / 'srt' / 'bad.py').write_bytes(b'\xff\xfe SGLANG_Z')
    assert sv.names_absent_from_texts(['SGLANG_X', 'SGLANG_Y', 'SGLANG_Z'], sv.package_sources(str(tmp_path))) == ['SGLANG_Y']


def _venvs(*items):
    return [{'path': '/v/' + name, 'mtime': mtime} for name, mtime in items]


def test_venvs_to_prune_keeps_newest_others():
    """Issue 15: beyond keep, the oldest venvs of other versions go; the wanted one never counts or goes."""
    venvs = _venvs(('0.5.7', 10), ('0.5.8', 20), ('0.5.9', 30), ('0.5.10', 5), ('0.5.6', 1))
    assert sv.venvs_to_prune(venvs, '/v/0.5.10', 2, []) == ['/v/0.5.6', '/v/0.5.7']
    assert sv.venvs_to_prune(venvs, '/v/0.5.10', 0, []) == ['/v/0.5.6', '/v/0.5.7', '/v/0.5.8', '/v/0.5.9']
    assert sv.venvs_to_prune(venvs, '/v/0.5.10', 9, []) == []


def test_venvs_to_prune_never_protected():
    """Never the running server's venv nor a known-good one, even beyond keep."""
    venvs = _venvs(('0.5.7', 10), ('0.5.8', 20), ('0.5.9', 30), ('0.5.10', 5))
    assert sv.venvs_to_prune(venvs, '/v/0.5.10', 0, ['/v/0.5.7', '/v/0.5.9/']) == ['/v/0.5.8']


def test_venvs_to_prune_refuses_negative_keep():
    with pytest.raises(ValueError):
        sv.venvs_to_prune([], '/v/x', -1, [])


def test_package_sources_is_a_generator_of_text(tmp_path):
    (tmp_path / 'a.py').write_text(u'A')
    assert list(sv.package_sources(str(tmp_path))) == ['A']
    assert list(sv.package_sources(os.path.join(str(tmp_path), 'missing'))) == []


def test_install_marker_ignores_order_and_spacing_and_reads_back():
    """Review of issue 15: a reordered or respaced set of the same requirements is the same install."""
    one = sv.install_marker(['sglang==0.5.10', 'torch==2.9.1'])
    assert one == sv.install_marker(['torch == 2.9.1', 'sglang==0.5.10'])
    assert sv.marker_requirements(one) == ['sglang==0.5.10', 'torch==2.9.1']
    assert sv.marker_requirements('not json') is None
    assert sv.marker_requirements('{"other": 1}') is None


def test_no_source_read_says_no_name_is_unread():
    """Review of issue 15: a package with no .py sources to read (compiled, zipped) must not drop every SGLANG_*."""
    assert sv.names_absent_from_texts(['SGLANG_A', 'SGLANG_B'], []) == []
    assert sv.names_absent_from_texts(['SGLANG_A'], iter([])) == []


def test_venv_name_names_the_venv_and_is_one_path_component():
    answer = sv.sglang_requirement('sglang==0.5.10', '/opt/sglang/venvs', 'cu130-b')
    assert (answer['venv'], answer['python'], answer['problem']) == (
        '/opt/sglang/venvs/cu130-b', '/opt/sglang/venvs/cu130-b/bin/python3', '')
    assert sv.sglang_requirement('sglang==0.5.10', '/opt/sglang/venvs')['venv'] == '/opt/sglang/venvs/0.5.10'
    for bad in ('../x', 'a/b', '.hidden', '..'):
        answer = sv.sglang_requirement('sglang==0.5.10', '/opt/sglang/venvs', bad)
        assert answer['venv'] is None and 'service_sglang_venv_name' in answer['problem'], bad
