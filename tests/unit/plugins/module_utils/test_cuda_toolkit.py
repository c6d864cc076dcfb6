# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of module_utils/_cuda_toolkit.py on fake toolkit trees."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os

import pytest

from ansible_collections.inferops.sglang.tests.unit.plugins.module_utils.fake_files import write
from ansible_collections.inferops.sglang.plugins.module_utils._cuda_toolkit import (
    choose_cuda_home,
    inspect_cuda_toolkits,
    parse_nvcc_version,
    version_key,
)


# ---------------------------------------------------------------------------------------------
# CUDA toolkits

def make_toolkit(root, name, version=None, nvcc=True, ptxas=True, version_txt=None):
    path = root / name
    (path / 'bin').mkdir(parents=True)
    if version is not None:
        write(path / 'version.json', json.dumps({'cuda': {'name': 'CUDA SDK', 'version': version},
                                                 'cuda_nvcc': {'version': version}}))
    if version_txt is not None:
        write(path / 'version.txt', version_txt)
    if nvcc:
        write(path / 'bin' / 'nvcc', '#!/bin/sh\n', 0o755)
    if ptxas:
        write(path / 'bin' / 'ptxas', '#!/bin/sh\n', 0o755)
    return str(path)


def test_cuda_toolkits_13_and_12_4_with_link(tmp_path):
    local = tmp_path / 'usr' / 'local'
    local.mkdir(parents=True)
    cuda13 = make_toolkit(local, 'cuda-13.0', '13.0.1')
    cuda124 = make_toolkit(local, 'cuda-12.4', '12.4.1')
    os.symlink(cuda124, str(local / 'cuda'))  # /usr/local/cuda still points at the old one
    write(local / 'cuda-keyring.txt', 'not a toolkit')
    toolkits = inspect_cuda_toolkits([str(local / 'cuda'), str(local / 'cuda-*')])
    assert toolkits == [
        {'path': str(local / 'cuda'), 'realpath': cuda124, 'version': '12.4.1', 'nvcc': True, 'ptxas': True},
        {'path': cuda124, 'realpath': cuda124, 'version': '12.4.1', 'nvcc': True, 'ptxas': True},
        {'path': cuda13, 'realpath': cuda13, 'version': '13.0.1', 'nvcc': True, 'ptxas': True},
    ]
    assert choose_cuda_home(toolkits) == cuda13


def test_cuda_home_skips_toolkit_without_ptxas(tmp_path):
    local = tmp_path / 'local'
    make_toolkit(local, 'cuda-13.0', '13.0.1', ptxas=False)  # newest, but ptxas missing
    cuda124 = make_toolkit(local, 'cuda-12.4', '12.4.1')
    os.symlink(str(local / 'cuda-13.0'), str(local / 'cuda'))
    toolkits = inspect_cuda_toolkits([str(local / 'cuda'), str(local / 'cuda-*')])
    assert [t['ptxas'] for t in toolkits] == [False, True, False]
    assert choose_cuda_home(toolkits) == cuda124


def test_cuda_home_link_resolved(tmp_path):
    local = tmp_path / 'local'
    cuda13 = make_toolkit(local, 'cuda-13.0', '13.0.1')
    os.symlink(cuda13, str(local / 'cuda'))
    toolkits = inspect_cuda_toolkits([str(local / 'cuda')])
    assert choose_cuda_home(toolkits) == cuda13


def test_cuda_home_version_sources(tmp_path):
    local = tmp_path / 'local'
    old = make_toolkit(local, 'cuda-10.2', version_txt='CUDA Version 10.2.89\n')
    bare = make_toolkit(local, 'cuda-12.8')  # no version file: ask nvcc
    calls = []

    def nvcc_version(path):
        calls.append(path)
        return ('nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2025 NVIDIA Corporation\n'
                'Cuda compilation tools, release 12.8, V12.8.93\nBuild cuda_12.8.r12.8/compiler.35583870_0\n')
    toolkits = inspect_cuda_toolkits([str(local / 'cuda-*')], nvcc_version)
    assert [(t['path'], t['version']) for t in toolkits] == [(old, '10.2.89'), (bare, '12.8.93')]
    assert calls == [os.path.join(bare, 'bin', 'nvcc')]
    assert choose_cuda_home(toolkits) == bare


@pytest.mark.parametrize('toolkits,expected', [
    ([], None),
    ([{'path': '/a', 'realpath': '/a', 'version': '12.4', 'nvcc': False, 'ptxas': True}], None),
    ([{'path': '/a', 'realpath': '/a', 'version': '12.4', 'nvcc': True, 'ptxas': False}], '/a'),
    ([{'path': '/a', 'realpath': '/a', 'version': None, 'nvcc': True, 'ptxas': True},
      {'path': '/b', 'realpath': '/b', 'version': '11.8', 'nvcc': True, 'ptxas': True}], '/b'),
    ([{'path': '/u/cuda-12.10', 'realpath': '/u/cuda-12.10', 'version': '12.10', 'nvcc': True, 'ptxas': True},
      {'path': '/u/cuda-12.9', 'realpath': '/u/cuda-12.9', 'version': '12.9', 'nvcc': True, 'ptxas': True}],
     '/u/cuda-12.10'),
])
def test_choose_cuda_home_cases(toolkits, expected):
    assert choose_cuda_home(toolkits) == expected


@pytest.mark.parametrize('text,expected', [
    ('nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 13.0, V13.0.88\n', '13.0.88'),
    ('Cuda compilation tools, release 12.4, V12.4.131\nBuild cuda_12.4.r12.4/compiler.34097967_0\n', '12.4.131'),
    ('Cuda compilation tools, release 9.2\n', '9.2'),
    ('bash: nvcc: command not found\n', None),
    ('', None),
])
def test_parse_nvcc_version(text, expected):
    assert parse_nvcc_version(text) == expected


def test_version_key():
    assert version_key('12.10') > version_key('12.9')
    assert version_key(None) < version_key('1')
