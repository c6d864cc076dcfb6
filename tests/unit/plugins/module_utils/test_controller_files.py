# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""write_text_files: the fleet summary written on the controller in-process (no module process per file)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import stat

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import _controller_files as cf


def mode_of(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_creates_the_directory_and_writes(tmp_path):
    target = str(tmp_path / 'fleet-summary')
    out = cf.write_text_files(target, {'latest.md': '# run\n', 'latest.json': '{}\n'})
    assert out == {'paths': [target + '/latest.json', target + '/latest.md'], 'changed': True,
                   'changed_paths': [target + '/latest.json', target + '/latest.md']}
    assert open(target + '/latest.md').read() == '# run\n' and mode_of(target + '/latest.md') == 0o644
    assert mode_of(target) == 0o755
    assert sorted(os.listdir(target)) == ['latest.json', 'latest.md']   # no temporary file left


def test_same_content_is_left_alone(tmp_path):
    target = str(tmp_path)
    cf.write_text_files(target, {'a.json': '1'})
    before = os.stat(target + '/a.json').st_ino
    out = cf.write_text_files(target, {'a.json': '1', 'b.json': '2'})
    assert out['changed'] and out['changed_paths'] == [target + '/b.json']
    assert os.stat(target + '/a.json').st_ino == before
    assert not cf.write_text_files(target, {'a.json': '1', 'b.json': '2'})['changed']


def test_a_changed_file_is_replaced_with_its_mode(tmp_path):
    target = str(tmp_path)
    cf.write_text_files(target, {'a.md': 'old'}, mode=0o600)
    out = cf.write_text_files(target, {'a.md': 'new'})
    assert out['changed_paths'] == [target + '/a.md']
    assert open(target + '/a.md').read() == 'new' and mode_of(target + '/a.md') == 0o644


def test_check_mode_writes_nothing(tmp_path):
    """Check mode: the paths are reported, nothing is created or written."""
    target = str(tmp_path / 'new')
    out = cf.write_text_files(target, {'latest.md': 'x'}, check=True)
    assert out == {'paths': [target + '/latest.md'], 'changed': True, 'changed_paths': [target + '/latest.md']}
    assert not os.path.exists(target)
    cf.write_text_files(str(tmp_path), {'latest.md': 'x'})
    out = cf.write_text_files(str(tmp_path), {'latest.md': 'y'}, check=True)
    assert out['changed'] and open(str(tmp_path / 'latest.md')).read() == 'x'


@pytest.mark.parametrize('directory, files, words', [
    ('relative/dir', {'a': 'x'}, 'absolute path'),
    ('/tmp', {'../a': 'x'}, 'plain file names'),
    ('/tmp', {'': 'x'}, 'plain file names'),
])
def test_rejects(directory, files, words):
    with pytest.raises(ValueError) as info:
        cf.write_text_files(directory, files)
    assert words in str(info.value)
