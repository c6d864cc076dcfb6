# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Staging the model's weights before the cutover stops anything (issue 32): the index check, mincore, the plan."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import struct

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import _stage

GIB = 1 << 30


def shard(path, data_bytes, truncate=0):
    """A safetensors file of one uint8 tensor of ``data_bytes`` bytes, ``truncate`` bytes short."""
    header = json.dumps({'__metadata__': {'format': 'pt'},
                         'w': {'dtype': 'U8', 'shape': [data_bytes], 'data_offsets': [0, data_bytes]}}).encode()
    body = struct.pack('<Q', len(header)) + header + os.urandom(data_bytes)
    with open(path, 'wb') as handle:
        handle.write(body[:len(body) - truncate])
    return len(body)


def evict(path):
    """Drop the test's own file from the page cache (written back first: dirty pages stay)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def model(tmp_path, sizes, index=True):
    names = ['model-%05d-of-%05d.safetensors' % (i + 1, len(sizes)) for i in range(len(sizes))]
    for name, size in zip(names, sizes):
        shard(str(tmp_path / name), size)
    if index:
        (tmp_path / _stage.INDEX).write_text(json.dumps({'weight_map': {'t%d' % i: n for i, n in enumerate(names)}}))
    return names


@pytest.mark.parametrize('command, paths, expected', [
    (['python3', '-m', 'sglang.launch_server', '--model-path', '/models/k2/', '--speculative-draft-model-path', '/d'],
     [], ['/models/k2', '/d']),
    (['python3', '-m', 'sglang.launch_server', '--model', 'org/hub-id'], [], []),  # a hub id is no local directory
    (['x', '--model-path', '/m'], ['/m', '/extra'], ['/m', '/extra']),
    (None, None, []),
])
def test_model_paths(command, paths, expected):
    assert sorted(_stage.model_paths(command, paths)) == sorted(expected)


def test_expected_size_reads_the_header():
    header = json.dumps({'a': {'data_offsets': [0, 10]}, 'b': {'data_offsets': [10, 30]}}).encode()
    assert _stage.expected_size(struct.pack('<Q', len(header)) + header) == 8 + len(header) + 30
    assert _stage.expected_size(b'abc') is None
    assert _stage.expected_size(struct.pack('<Q', 999) + b'{}') is None


def test_weight_files_follow_the_index_and_name_what_is_missing(tmp_path):
    names = model(tmp_path, [1000, 2000, 3000])
    shard(str(tmp_path / 'consolidated.safetensors'), 50)  # present, not listed: SGLang does not load it
    found = _stage.weight_files(str(tmp_path))
    assert found['problems'] == [] and [os.path.basename(f['path']) for f in found['files']] == names
    os.unlink(str(tmp_path / names[1]))
    shard(str(tmp_path / names[2]), 3000, truncate=100)
    problems = _stage.weight_files(str(tmp_path))['problems']
    assert len(problems) == 2
    assert '1 of the 3 shards' in problems[0] and names[1] in problems[0]
    assert 'truncated' in problems[1] and names[2] in problems[1]


def test_weight_files_without_index_take_every_safetensors(tmp_path):
    model(tmp_path, [100, 200], index=False)
    found = _stage.weight_files(str(tmp_path))
    assert len(found['files']) == 2 and not found['indexed'] and not found['problems']


def test_parse_meminfo():
    parsed = _stage.parse_meminfo('MemTotal:       24000000 kB\nMemAvailable:    1000 kB\nHugePages_Total:       0\n')
    assert parsed == {'MemTotal': 24000000 * 1024, 'MemAvailable': 1024000, 'HugePages_Total': 0}


def _files(*pairs):
    return [{'path': '/m/%d' % i, 'size': size, 'resident': resident} for i, (size, resident) in enumerate(pairs)]


@pytest.mark.parametrize('mode, available, stage, fits', [
    ('all', 20 * GIB, ['/m/0', '/m/1', '/m/2'], True),
    ('fit', 20 * GIB, ['/m/0', '/m/1', '/m/2'], True),
    ('all', 12 * GIB, [], False),  # all or nothing
    ('fit', 12 * GIB, ['/m/0'], False),  # 4 GiB budget above the margin: the first file's 3 cold GiB
    ('fit', 1 * GIB, [], False),  # below the margin: nothing
    ('none', 20 * GIB, [], True),
])
def test_stage_plan(mode, available, stage, fits):
    files = _files((4 * GIB, 1 * GIB), (4 * GIB, 0), (2 * GIB, 0), (1 * GIB, 1 * GIB))
    plan = _stage.stage_plan(files, available, 8 * GIB, mode)
    assert plan['stage'] == stage and plan['fits'] is fits
    assert plan['missing_bytes'] == 9 * GIB
    assert plan['stage_bytes'] <= plan['budget']
    assert '/m/3' not in plan['skipped'] + plan['stage']  # resident already


def test_stage_plan_says_why_nothing_is_staged():
    plan = _stage.stage_plan(_files((4 * GIB, 0)), 9 * GIB, 8 * GIB, 'all')
    assert 'staging nothing' in plan['message'] and '4.00 GiB are cold' in plan['message']
    assert 'resident already' in _stage.stage_plan(_files((1, 1)), 0, 0, 'all')['message']
    with pytest.raises(ValueError):
        _stage.stage_plan([], 0, 0, 'some')


def test_resident_bytes_and_read_into_cache_on_real_files(tmp_path):
    path = str(tmp_path / 'w.safetensors')
    size = shard(path, 3 * (1 << 20) + 123)
    evict(path)
    cold = _stage.resident_bytes(path)
    assert cold < size
    read = _stage.read_into_cache([path], threads=3, chunk=1 << 20)
    assert read['bytes'] == size
    assert _stage.resident_bytes(path) == size
    assert _stage.resident_bytes(str(tmp_path / 'w.safetensors')) <= size


def test_stage_reads_nothing_in_check_mode_or_with_problems(tmp_path):
    names = model(tmp_path, [1 << 20, 1 << 20])
    meminfo = tmp_path / 'meminfo'
    meminfo.write_text('MemAvailable: %d kB\n' % (64 << 20))
    checked = _stage.stage([str(tmp_path)], mode='fit', margin=0, check=True, meminfo=str(meminfo))
    assert checked['read']['bytes'] == 0 and not checked['changed'] and checked['total_bytes'] > 2 << 20
    staged = _stage.stage([str(tmp_path), '/no/such/model'], mode='fit', margin=0, meminfo=str(meminfo))
    assert staged['resident_after'] == staged['total_bytes'] and staged['models'][1]['skipped_reason']
    os.unlink(str(tmp_path / names[0]))
    broken = _stage.stage([str(tmp_path)], mode='all', margin=0, meminfo=str(meminfo))
    assert broken['problems'] and broken['plan']['stage'] == [] and broken['read']['bytes'] == 0


def test_stage_without_memory_stages_nothing(tmp_path):
    for name in model(tmp_path, [1 << 20]):
        evict(str(tmp_path / name))
    meminfo = tmp_path / 'meminfo'
    meminfo.write_text('MemAvailable: 100 kB\n')
    result = _stage.stage([str(tmp_path)], mode='fit', margin=0, meminfo=str(meminfo))
    assert result['read']['bytes'] == 0 and result['plan']['stage'] == [] and 'only' in result['plan']['message']


def test_read_into_cache_raises_a_readers_error(tmp_path):
    with pytest.raises(OSError):
        _stage.read_into_cache([str(tmp_path)], threads=2)  # a directory: pread fails with EISDIR
    empty = _stage.read_into_cache([], threads=2)
    assert (empty['bytes'], empty['gb_per_s']) == (0, 0.0)
