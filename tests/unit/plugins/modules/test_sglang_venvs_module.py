# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of modules/sglang_venvs.py: pruning the venvs of SGLang versions (issue 15), never the running one nor
one a known-good configuration (current or in history) runs."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os

import pytest
import yaml

from ansible_collections.inferops.sglang.tests.unit.plugins.modules.module_args import patch_module_args
from ansible_collections.inferops.sglang.plugins.modules import sglang_venvs


def run(capsys, args, check=False):
    with patch_module_args(dict(args, _ansible_check_mode=check)):
        with pytest.raises(SystemExit):
            sglang_venvs.main()
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def host(tmp_path):
    """/venvs with 0.5.6 .. 0.5.10 (mtime in that order), a known-good store whose current manifest runs 0.5.7 and
    whose history entry runs 0.5.6."""
    venvs = tmp_path / 'venvs'
    for age, version in enumerate(['0.5.6', '0.5.7', '0.5.8', '0.5.9', '0.5.10']):
        path = venvs / version / 'bin'
        path.mkdir(parents=True)
        (venvs / version / 'pyvenv.cfg').write_text('home = /usr/bin\n')
        (venvs / version / '.inferops-sglang-installed').write_text('{"requirements": []}\n')
        os.utime(str(venvs / version), (1000 + age, 1000 + age))
    store = tmp_path / 'known-good'
    store.mkdir()
    (store / 'manifest.json').write_text(json.dumps({'command': [str(venvs / '0.5.7' / 'bin' / 'python3'), '-m', 'x']}))
    entry = tmp_path / 'history' / '20261201T000000Z'
    entry.mkdir(parents=True)
    (entry / 'manifest.json').write_text(json.dumps({'command': [str(venvs / '0.5.6' / 'bin' / 'python3')]}))
    return tmp_path


def test_prunes_beyond_keep_never_running_or_known_good(capsys, host):
    """Issue 15: keep 1 other venv; 0.5.8 goes; 0.5.6 (history) and 0.5.7 (current known-good) stay, 0.5.9 runs."""
    venvs = str(host / 'venvs')
    args = {'dir': venvs, 'wanted': venvs + '/0.5.10', 'keep': 0,
            'protect': [venvs + '/0.5.9/bin/python3', '/root/ml-env/bin/python3'],
            'known_good_dirs': [str(host / 'known-good'), str(host / 'history')]}
    planned = run(capsys, args, check=True)
    assert planned['changed'] is True and planned['removed'] == [venvs + '/0.5.8']
    assert os.path.isdir(venvs + '/0.5.8')
    assert sorted(planned['protected']) == sorted([venvs + '/0.5.6', venvs + '/0.5.7', venvs + '/0.5.9'])
    done = run(capsys, args)
    assert done['changed'] is True and done['removed'] == [venvs + '/0.5.8']
    assert sorted(os.listdir(venvs)) == ['0.5.10', '0.5.6', '0.5.7', '0.5.9']
    assert run(capsys, args)['changed'] is False


def test_keep_counts_the_newest_others(capsys, host):
    venvs = str(host / 'venvs')
    done = run(capsys, {'dir': venvs, 'wanted': venvs + '/0.5.10', 'keep': 2})
    assert done['removed'] == [venvs + '/0.5.6', venvs + '/0.5.7']


def test_a_missing_dir_is_nothing_to_prune(capsys, tmp_path):
    done = run(capsys, {'dir': str(tmp_path / 'none'), 'wanted': str(tmp_path / 'none' / '1'), 'keep': 0})
    assert done['changed'] is False and done['removed'] == [] and done['venvs'] == []


def test_an_unreadable_manifest_prunes_nothing(capsys, host):
    """A known-good manifest that cannot be read could name any venv: nothing is removed, and the warning says why."""
    (host / 'known-good' / 'manifest.json').write_text('{not json')
    venvs = str(host / 'venvs')
    done = run(capsys, {'dir': venvs, 'wanted': venvs + '/0.5.10', 'keep': 0, 'known_good_dirs': [str(host / 'known-good')]})
    assert done['changed'] is False and done['removed'] == []
    assert 'manifest.json' in json.dumps(done['warnings'])


def test_documentation():
    doc = yaml.safe_load(sglang_venvs.DOCUMENTATION)
    assert set(doc['options']) == {'dir', 'wanted', 'keep', 'protect', 'known_good_dirs', 'marker'}
    assert set(yaml.safe_load(sglang_venvs.RETURN)) == {'venvs', 'protected', 'removed'}


def test_only_venvs_this_collection_installed_are_ever_pruned(capsys, host):
    """Review of issue 15: a directory without pyvenv.cfg and the install marker (a model cache, a wheelhouse, a venv
    the user made by hand under the same directory) is never a candidate, whatever keep says."""
    venvs = host / 'venvs'
    (venvs / 'models').mkdir()
    (venvs / 'wheelhouse').mkdir()
    (venvs / 'by-hand').mkdir()
    (venvs / 'by-hand' / 'pyvenv.cfg').write_text('home = /usr/bin\n')
    for name in ('models', 'wheelhouse', 'by-hand'):
        os.utime(str(venvs / name), (1, 1))
    done = run(capsys, {'dir': str(venvs), 'wanted': str(venvs / '0.5.10'), 'keep': 0})
    assert sorted(os.listdir(str(venvs))) == ['0.5.10', 'by-hand', 'models', 'wheelhouse']
    assert all(os.path.basename(path).startswith('0.5.') for path in done['removed'])


def test_a_symlinked_venvs_dir_still_protects_the_running_venv(capsys, host, tmp_path):
    """Review of issue 15: /opt/sglang/venvs -> /data/venvs; the running server's interpreter is known by the real
    path (and an interpreter is itself a symlink to the base Python): its venv stays."""
    link = tmp_path / 'link-venvs'
    link.symlink_to(host / 'venvs')
    real_python = str(host / 'venvs' / '0.5.9' / 'bin' / 'python3')
    os.symlink('/usr/bin/python3', real_python)
    done = run(capsys, {'dir': str(link), 'wanted': str(link / '0.5.10'), 'keep': 0, 'protect': [real_python]})
    assert str(link / '0.5.9') in done['protected']
    assert os.path.isdir(str(host / 'venvs' / '0.5.9'))
