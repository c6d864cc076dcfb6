# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""known_good_info: the store read and the live files compared in one call (what stat, slurp and a stat loop did)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os

import pytest

from ansible_collections.inferops.sglang.tests.unit.plugins.modules.module_args import module_result

from ansible_collections.inferops.sglang.plugins.modules import known_good_info


@pytest.fixture
def result(monkeypatch):
    return lambda params, check_mode=False: module_result(monkeypatch, known_good_info.main, params, check_mode)


def write(path, text):
    with open(str(path), 'w') as handle:
        handle.write(text)
    return str(path)


def store(tmp_path, live):
    kg = tmp_path / 'known-good'
    kg.mkdir()
    files = []
    for name, (live_text, kept_text) in sorted(live.items()):
        path = tmp_path / 'etc' / name
        path.parent.mkdir(exist_ok=True)
        if live_text is not None:
            write(path, live_text)
        if kept_text is not None:
            write(kg / name, kept_text)
        files.append(str(path))
    write(kg / 'manifest.json', json.dumps({'schema': 1, 'source': 'cutover', 'files': files}))
    return str(kg), files


def test_no_store(tmp_path, result):
    out = result({'dir': str(tmp_path / 'known-good')})
    assert out == {'changed': False, 'exists': False, 'manifest': {}, 'differ': [], 'failed': False}


@pytest.mark.parametrize('check_mode', [False, True])
def test_reads_the_manifest_and_compares(tmp_path, result, check_mode):
    """An environment file rendered by --tags sglang_service after the cutover saved the store differs."""
    kg, files = store(tmp_path, {'sglang.service': ('unit', 'unit'), 'sglang.env': ('A=2\n', 'A=1\n'),
                                 'cuda.env': ('', '')})
    out = result({'dir': kg}, check_mode=check_mode)
    assert out['changed'] is False and out['exists'] is True
    assert out['manifest']['source'] == 'cutover' and out['manifest']['files'] == files
    assert out['differ'] == [os.path.join(str(tmp_path), 'etc', 'sglang.env')]


def test_missing_on_one_side_differs(tmp_path, result):
    kg, dummy = store(tmp_path, {'config.yaml': (None, 'x: 1\n'), 'gone.yaml': (None, None)})
    assert result({'dir': kg})['differ'] == [os.path.join(str(tmp_path), 'etc', 'config.yaml')]


def test_bad_manifest_fails_with_the_fix(tmp_path, result):
    kg = tmp_path / 'known-good'
    kg.mkdir()
    write(kg / 'manifest.json', '{broken')
    out = result({'dir': str(kg)})
    assert out['failed'] and 'manifest.json is not valid JSON' in out['msg'] and 'run the site playbook again' in out['msg']


@pytest.mark.parametrize('case', ['store', 'none', 'broken'])
def test_the_service_preflight_read_returns_what_this_module_does(tmp_path, result, monkeypatch, capsys, case):
    """service_preflight_info's known_good (known_good_dir) is the same read (_known_good.read_store), handed to the
    known_good role's read so that the store is read once per run; a store it cannot read comes back empty, and the
    role then reads it with this module, which fails with the reason."""
    from ansible_collections.inferops.sglang.plugins.modules import service_preflight_info
    if case == 'store':
        kg, dummy = store(tmp_path, {'sglang.service': ('unit', 'unit'), 'sglang.env': ('A=2\n', 'A=1\n')})
    else:
        kg = str(tmp_path / 'known-good')
        if case == 'broken':
            os.mkdir(kg)
            write(os.path.join(kg, 'manifest.json'), '{broken')
    own = result({'dir': kg})
    read = module_result(monkeypatch, service_preflight_info.main, {'working_directory': str(tmp_path),
                                                                    'known_good_dir': kg}, False)
    if case == 'broken':
        assert own['failed'] and read['known_good'] == {}
    else:
        assert read['known_good'] == dict((key, own[key]) for key in ('exists', 'manifest', 'differ'))
    without = module_result(monkeypatch, service_preflight_info.main, {'working_directory': str(tmp_path)}, False)
    assert without['known_good'] == {}
