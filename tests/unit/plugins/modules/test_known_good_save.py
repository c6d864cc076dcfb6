# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""known_good_save: what the known_good role's save.yml did in eight tasks (directories, history entry, pruning, copies,
manifest), in one call."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import stat

import pytest

from ansible_collections.inferops.sglang.tests.unit.plugins.modules.module_args import module_result

from ansible_collections.inferops.sglang.plugins.modules import known_good_save


@pytest.fixture
def run(monkeypatch):
    return lambda params, check_mode=False: module_result(monkeypatch, known_good_save.main, params, check_mode)


def live(tmp_path, **files):
    etc = tmp_path / 'etc'
    etc.mkdir(exist_ok=True)
    paths = []
    for name, text in sorted(files.items()):
        (etc / name).write_text(text)
        paths.append(str(etc / name))
    return paths


def params(tmp_path, files, history=5, **extra):
    out = dict(dir=str(tmp_path / 'state' / 'known-good'), history_dir=str(tmp_path / 'state' / 'history'),
               history=history, files=files, manifest={'schema': 1, 'source': 'cutover', 'files': files})
    out.update(extra)
    return out


def mode(path):
    return stat.S_IMODE(os.stat(str(path)).st_mode)


def test_first_save(tmp_path, run):
    files = live(tmp_path, **{'sglang.env': 'A=1\n', 'sglang.service': '[Unit]\n'})
    out = run(params(tmp_path, files))
    kg = tmp_path / 'state' / 'known-good'
    assert out['changed'] and out['history_entry'] is None and out['pruned'] == []
    assert sorted(os.listdir(str(kg))) == ['manifest.json', 'sglang.env', 'sglang.service']
    assert (kg / 'sglang.env').read_text() == 'A=1\n' and mode(kg / 'sglang.env') == 0o600
    assert json.loads((kg / 'manifest.json').read_text())['files'] == files and mode(kg / 'manifest.json') == 0o600
    assert mode(kg) == 0o700 and mode(tmp_path / 'state' / 'history') == 0o700
    assert 'A=1' not in json.dumps(out)   # contents are never returned


def test_second_save_moves_the_previous_one_to_history_and_prunes(tmp_path, run):
    files = live(tmp_path, **{'sglang.env': 'A=1\n'})
    history = tmp_path / 'state' / 'history'
    history.mkdir(parents=True)
    for name in ('20200101T000000000000Z', '20200102T000000000000Z', '.hidden'):
        (history / name).mkdir()
    run(params(tmp_path, files))
    live(tmp_path, **{'sglang.env': 'A=2\n'})
    out = run(params(tmp_path, files, history=2))
    entry = out['history_entry']
    assert (tmp_path / 'state' / 'known-good' / 'sglang.env').read_text() == 'A=2\n'
    assert open(os.path.join(entry, 'sglang.env')).read() == 'A=1\n'
    assert os.path.exists(os.path.join(entry, 'manifest.json'))
    assert out['pruned'] == [str(history / '20200101T000000000000Z')]
    assert sorted(os.listdir(str(history))) == sorted(['.hidden', '20200102T000000000000Z', os.path.basename(entry)])


def test_source_dir(tmp_path, run):
    """A configuration rendered into a staging directory (the service role's seed of a hand-started server)."""
    files = ['/etc/sglang/not-live.env']
    stage = tmp_path / 'stage'
    stage.mkdir()
    (stage / 'not-live.env').write_text('B=1\n')
    run(params(tmp_path, files, source_dir=str(stage)))
    assert (tmp_path / 'state' / 'known-good' / 'not-live.env').read_text() == 'B=1\n'


def test_contents_given_instead_of_files(tmp_path, run):
    """A configuration rendered on the controller (the service role's seed of a hand-started server): no file is read
    for the paths contents names, the others are read as usual."""
    files = live(tmp_path, **{'sglang.env': 'A=1\n'}) + ['/etc/systemd/system/not-live.service']
    out = run(params(tmp_path, files, contents=[{'path': '/etc/systemd/system/not-live.service', 'content': '[Service]\n'}]))
    assert not out.get('failed'), out
    kept = tmp_path / 'state' / 'known-good'
    assert (kept / 'not-live.service').read_text() == '[Service]\n'
    assert (kept / 'sglang.env').read_text() == 'A=1\n'
    assert '[Service]' not in str(out)


def test_contents_keys_are_expanded_like_files(tmp_path, run, monkeypatch):
    monkeypatch.setenv('KG_ETC', str(tmp_path / 'etc'))
    files = live(tmp_path, **{'sglang.env': 'A=1\n'})
    out = run(params(tmp_path, ['$KG_ETC/sglang.env'], contents=[{'path': '$KG_ETC/sglang.env', 'content': 'A=2\n'}]))
    assert not out.get('failed'), out
    assert (tmp_path / 'state' / 'known-good' / 'sglang.env').read_text() == 'A=2\n'
    assert open(files[0]).read() == 'A=1\n'


def test_contents_for_a_file_not_listed_fails_before_anything_changes(tmp_path, run):
    out = run(params(tmp_path, live(tmp_path, **{'sglang.env': 'A=1\n'}), contents=[{'path': '/etc/other.env', 'content': 'X=1\n'}]))
    assert out['failed'] and '/etc/other.env' in out['msg']
    assert not os.path.exists(str(tmp_path / 'state'))


def test_missing_file_fails_before_anything_changes(tmp_path, run):
    out = run(params(tmp_path, [str(tmp_path / 'etc' / 'gone.env')]))
    assert out['failed'] and 'gone.env' in out['msg'] and 'run the service role first' in out['msg']
    assert not os.path.exists(str(tmp_path / 'state'))


def test_check_mode_changes_nothing(tmp_path, run):
    files = live(tmp_path, **{'sglang.env': 'A=1\n'})
    out = run(params(tmp_path, files), check_mode=True)
    assert out['changed'] and not os.path.exists(str(tmp_path / 'state'))


def test_same_configuration_again_changes_nothing(tmp_path, run):
    """The same files and manifest again: no history entry that repeats the current one, nothing written."""
    files = live(tmp_path, **{'sglang.env': 'A=1\n'})
    run(params(tmp_path, files))
    out = run(params(tmp_path, files))
    assert out['copied'] == [] and out['history_entry'] is None and not out['changed']
    assert os.listdir(str(tmp_path / 'state' / 'history')) == []


def test_the_same_configuration_saved_again_pushes_no_history_entry(tmp_path, run):
    """Issue 30: a stopped unit started again saves the same configuration with another saved_at and time to healthy:
    the manifest is rewritten, no identical entry is pushed (the hand-started baseline stays among the five kept)."""
    files = live(tmp_path, **{'sglang.env': 'A=1\n'})
    first = params(tmp_path, files)
    first['manifest'] = dict(first['manifest'], saved_at='2026-12-01T07:30:02Z', time_to_healthy=9.5, command=['a', '--x', '1'])
    run(first)
    again = dict(first, manifest=dict(first['manifest'], saved_at='2026-12-02T08:00:00Z', time_to_healthy=8.1))
    out = run(again)
    assert out['history_entry'] is None and out['changed'], out
    assert os.listdir(str(tmp_path / 'state' / 'history')) == []
    assert json.loads((tmp_path / 'state' / 'known-good' / 'manifest.json').read_text())['saved_at'] == '2026-12-02T08:00:00Z'
    # Another flag is another configuration: pushed, named by when the one it replaces was saved.
    other = dict(first, manifest=dict(again['manifest'], command=['a', '--x', '2'], saved_at='2026-12-03T00:00:00Z'))
    out = run(other)
    assert os.path.basename(out['history_entry']) == '20261202T080000000000Z', out


@pytest.mark.parametrize('saved_at, taken, expected', [
    ('2026-12-01T07:30:02Z', [], '20261201T073002000000Z'),
    ('2026-12-01T07:30:02Z', ['20261201T073002000000Z'], '20261201T073002000001Z'),
    # a manifest without saved_at (or an unreadable one): the replacement time, as entries were named before
    (None, [], '19700101T000010500000Z'),
    ('yesterday', [], '19700101T000010500000Z'),
])
def test_entries_are_named_by_when_they_were_saved(saved_at, taken, expected):
    from ansible_collections.inferops.sglang.plugins.module_utils import _known_good
    assert _known_good.saved_entry_name(saved_at, 10.5, taken) == expected


@pytest.mark.parametrize('old, new, same', [
    ({'command': ['a'], 'saved_at': '1', 'perf': {'x': 1}}, {'command': ['a'], 'saved_at': '2', 'perf': {}}, True),
    ({'command': ['a']}, {'command': ['b']}, False),
    ({'command': ['a'], 'source': 'hand-started'}, {'command': ['a'], 'source': 'cutover'}, False),
    ({}, {'command': ['a']}, False),
    (None, {'command': ['a']}, False),
])
def test_same_configuration(old, new, same):
    from ansible_collections.inferops.sglang.plugins.module_utils import _known_good
    assert _known_good.same_configuration(old, new) is same


@pytest.mark.parametrize('fail_at', ['new store', 'history copy', 'swap'])
def test_c48_disk_full_leaves_the_store_and_history_as_they_were(tmp_path, run, monkeypatch, fail_at):
    """C48: the disk fills while a new known-good configuration is kept: no partial entry is listed or offered, the
    store holds the last good configuration in full, the message names the file system."""
    import errno
    import shutil
    files = live(tmp_path, **{'sglang.env': 'A=1\n', 'sglang.service': '[Unit]\n'})
    run(params(tmp_path, files))
    kg = tmp_path / 'state' / 'known-good'
    before = dict((name, (kg / name).read_text()) for name in os.listdir(str(kg)))
    (tmp_path / 'etc' / 'sglang.env').write_text('A=2\n')
    full = OSError(errno.ENOSPC, 'No space left on device')
    if fail_at == 'new store':
        written = []

        def write(path, data, mode):
            written.append(path)
            if len(written) == 2:
                raise full
            real_write(path, data, mode)
        real_write = known_good_save._write
        monkeypatch.setattr(known_good_save, '_write', write)
    elif fail_at == 'history copy':
        def copytree(src, dst):
            os.mkdir(dst)
            (tmp_path / 'state' / 'history' / os.path.basename(dst) / 'sglang.env').write_text('')
            raise full
        monkeypatch.setattr(shutil, 'copytree', copytree)
    else:
        real_rename = os.rename

        def rename(src, dst):
            if dst == str(kg) and src.endswith('.new'):
                raise full
            real_rename(src, dst)
        monkeypatch.setattr(os, 'rename', rename)
    out = run(params(tmp_path, files))
    assert out['failed'] and 'No space left on device' in out['msg'] and 'MiB free' in out['msg'], out
    monkeypatch.undo()
    state = tmp_path / 'state'
    assert dict((name, (kg / name).read_text()) for name in os.listdir(str(kg))) == before
    assert sorted(os.listdir(str(state))) == ['history', 'known-good']
    assert os.listdir(str(state / 'history')) == []
    # the next save goes through
    out = run(params(tmp_path, files))
    assert not out.get('failed') and (kg / 'sglang.env').read_text() == 'A=2\n'
    assert sorted(os.listdir(str(state))) == ['history', 'known-good']


def test_a_save_interrupted_between_its_renames_is_read_and_finished(tmp_path, run):
    """A save killed between its two renames (power loss): known_good_info reads the old store kept beside the
    directory, and the next save puts it back before it goes on."""
    from ansible_collections.inferops.sglang.plugins.module_utils import _known_good
    files = live(tmp_path, **{'sglang.env': 'A=1\n'})
    run(params(tmp_path, files))
    kg = str(tmp_path / 'state' / 'known-good')
    new, old = _known_good.store_swap_paths(kg)
    os.rename(kg, old)
    os.mkdir(new)
    assert _known_good.readable_store(kg) == old
    out = run(params(tmp_path, files))
    assert not out.get('failed') and out['history_entry'] is None and out['copied'] == []
    assert sorted(os.listdir(str(tmp_path / 'state'))) == ['history', 'known-good']
    assert _known_good.readable_store(kg) == kg
