# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The memo of the argument-parser check (issue 26, item 6): its key and its store."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import stat

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import _args_check_cache as memo

BASE = dict(python='/opt/sglang/venvs/0.5.23/bin/python3', python_version='3.11.2',
            record='sglang/__init__.py,sha256=abc,10\n', args=['--model-path', '/m', '--tp-size', '8'],
            environment={'PATH': '/usr/bin', 'SGLANG_X': '1', 'HOME': '/root'},
            distributions=['sglang==0.5.23', 'torch==2.13.0'], program='print(1)', files={}, options={'hide_gpus': True})


def key(**change):
    inputs = dict(BASE)
    inputs.update(change)
    return memo.cache_key(memo.key_inputs(**inputs))


@pytest.mark.parametrize('change', [
    dict(record=BASE['record'] + 'sglang/srt/server_args.py,sha256=def,20\n'),
    dict(record=BASE['record'].replace('abc', 'abd')),
    dict(args=['--model-path', '/m', '--tp-size', '4']),
    dict(args=['--tp-size', '8', '--model-path', '/m']),
    dict(environment=dict(BASE['environment'], NEW_NAME='')),
    dict(environment=dict((k, v) for k, v in BASE['environment'].items() if k != 'HOME')),
    dict(environment=dict(BASE['environment'], SGLANG_X='2')),
    dict(environment=dict(BASE['environment'], PYTHONPATH='/elsewhere')),
    dict(python='/usr/bin/python3'),
    dict(python_version='3.11.3'),
    dict(distributions=['sglang==0.5.23', 'torch==2.13.1']),
    dict(program='print(2)'),
    dict(files={'/etc/sglang/server.yaml': 'a' * 64}),
    dict(options={'hide_gpus': False}),
], ids=['record-line-added', 'record-hash', 'argv-value', 'argv-order', 'env-name-added', 'env-name-removed',
        'env-sglang-value', 'env-pythonpath-value', 'python-path', 'python-version', 'distribution', 'program',
        'config-file', 'hide-gpus'])
def test_every_input_changes_the_key(change):
    assert key(**change) != key()


@pytest.mark.parametrize('change', [
    dict(environment=dict(BASE['environment'], PATH='/usr/local/bin:/usr/bin')),
    dict(environment=dict(reversed(list(BASE['environment'].items())))),
    dict(distributions=list(reversed(BASE['distributions']))),
], ids=['value-that-does-not-affect-parsing', 'env-order', 'distribution-order'])
def test_what_does_not_count(change):
    assert key(**change) == key()


def test_key_is_a_sha256_hex():
    value = key()
    assert len(value) == 64 and set(value) <= set('0123456789abcdef')


@pytest.mark.parametrize('name, counts', [('PYTHONPATH', True), ('SGLANG_ENABLE_X', True), ('SGL_X', True),
                                          ('CUDA_VISIBLE_DEVICES', True), ('HF_TOKEN', False), ('PATH', False)])
def test_affects_parsing(name, counts):
    assert memo.affects_parsing(name) is counts


@pytest.mark.parametrize('args, expected', [
    (['--model-path', '/m'], (True, None)),
    (['--config', '/etc/s.yaml', '--tp-size', '2'], (True, '/etc/s.yaml')),
    (['--config=/etc/s.yaml'], (False, None)),
    (['--model-path', '/m', '--config'], (False, None)),
])
def test_config_path(args, expected):
    assert memo.config_path(args) == expected


@pytest.mark.parametrize('stdout, expected', [
    ('noise\n' + memo.PROBE_MARK + '{"record": "r"}\n', {'record': 'r'}),
    ('noise only\n', None),
    (memo.PROBE_MARK + '{broken\n', None),
    (memo.PROBE_MARK + '[1]\n', None),
])
def test_parse_probe(stdout, expected):
    assert memo.parse_probe(stdout) == expected


def test_store_and_read_back(tmp_path):
    cache = str(tmp_path / 'a' / 'memo')
    k = key()
    assert memo.read_entry(cache, k) is None
    assert memo.write_entry(cache, k, {'valid': True}) is True
    assert memo.read_entry(cache, k) == {'valid': True}
    assert memo.read_entry(cache, key(args=[])) is None
    assert stat.S_IMODE(os.stat(cache).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(os.path.join(cache, k + '.json')).st_mode) == 0o600
    assert [n for n in os.listdir(cache) if not n.endswith('.json')] == []


def test_an_open_directory_or_file_is_not_used(tmp_path):
    cache = tmp_path / 'memo'
    k = key()
    memo.write_entry(str(cache), k, {'valid': True})
    os.chmod(str(cache / (k + '.json')), 0o644)
    assert memo.read_entry(str(cache), k) is None
    os.chmod(str(cache / (k + '.json')), 0o600)
    os.chmod(str(cache), 0o777)
    assert memo.read_entry(str(cache), k) is None
    assert memo.write_entry(str(cache), key(args=[]), {'valid': True}) is False


def test_an_entry_of_another_key_is_not_used(tmp_path):
    cache = tmp_path / 'memo'
    k, other = key(), key(args=[])
    memo.write_entry(str(cache), k, {'valid': False})
    os.rename(str(cache / (k + '.json')), str(cache / (other + '.json')))
    assert memo.read_entry(str(cache), other) is None


def test_prune_keeps_the_most_recently_used(tmp_path):
    cache = str(tmp_path / 'memo')
    keys = [key(args=[str(i)]) for i in range(5)]
    for i, k in enumerate(keys):
        memo.write_entry(cache, k, {'i': i}, keep=10)
        os.utime(os.path.join(cache, k + '.json'), (1000 + i, 1000 + i))
    os.utime(os.path.join(cache, keys[0] + '.json'), (2000, 2000))
    assert memo.prune(cache, keep=3) == 2
    assert sorted(os.listdir(cache)) == sorted(k + '.json' for k in (keys[0], keys[3], keys[4]))


def test_a_malformed_key_is_refused(tmp_path):
    with pytest.raises(ValueError):
        memo.read_entry(str(tmp_path), '../../etc/passwd')
