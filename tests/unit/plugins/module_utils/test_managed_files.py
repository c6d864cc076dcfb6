# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of module_utils/_managed_files.py: a True from block_unchanged is never wrong, checked against
ansible.builtin.blockinfile itself on the same files."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import _managed_files
from ansible_collections.inferops.sglang.tests.unit.plugins.modules.module_args import patch_module_args

# ansible-test units offers module_utils only; the comparison with the real module runs in tests/unit's own pytest.
blockinfile = pytest.importorskip('ansible.modules.blockinfile', reason='ansible.modules is not importable here (ansible-test units)')

MARKER = '# {mark} inferops.sglang managed block: CUDA/NCCL environment'
BLOCK = 'import os as _inferops_os\n_inferops_os.environ.setdefault("CUDA_HOME", "/usr/local/cuda-13.0")\ndel _inferops_os'
BEGIN = MARKER.replace('{mark}', 'BEGIN') + '\n'
END = MARKER.replace('{mark}', 'END') + '\n'
IN_PLACE = BEGIN + BLOCK + '\n' + END

CASES = [
    ('in place, alone', IN_PLACE, True),
    ('in place, hand-written lines after it', IN_PLACE + 'PATCHED = True\n', True),
    ('in place after hand-written lines', 'PATCHED = True\n' + IN_PLACE, True),
    ('no block yet', 'PATCHED = True\n', False),
    ('empty file', '', False),
    ('old value in the block', IN_PLACE.replace('13.0', '12.4'), False),
    ('a line missing', BEGIN + BLOCK.split('\n', 1)[1] + '\n' + END, False),
    ('END before BEGIN', END + BLOCK + '\n' + BEGIN, False),
    ('only BEGIN', BEGIN + BLOCK + '\n', False),
    ('no newline after END', IN_PLACE[:-1], False),
    ('previous line without a newline', 'x = 1\r' + IN_PLACE, False),
    ('block twice (blockinfile manages the last)', IN_PLACE + IN_PLACE, True),
]


@pytest.mark.parametrize('name,text,expected', CASES, ids=[c[0] for c in CASES])
def test_block_unchanged(name, text, expected):
    assert _managed_files.block_unchanged(text.encode('utf-8'), MARKER, BLOCK) is expected


def test_a_missing_file_or_an_empty_block_is_a_change():
    assert _managed_files.block_unchanged(None, MARKER, BLOCK) is False
    assert _managed_files.block_unchanged(IN_PLACE.encode(), MARKER, '') is False


@pytest.mark.parametrize('name,text,expected', CASES, ids=[c[0] for c in CASES])
def test_blockinfile_agrees(monkeypatch, capsys, tmp_path, name, text, expected):
    """Where block_unchanged says True, blockinfile (as the cuda_env role calls it) changes nothing; where it says
    False, blockinfile changes the file in every case above (a False is only ever a wasted round trip)."""
    path = tmp_path / 'sitecustomize.py'
    path.write_bytes(text.encode('utf-8'))
    os.chmod(str(path), 0o644)
    args = {'path': str(path), 'marker': MARKER, 'insertbefore': 'BOF', 'create': True, 'mode': '0644',
            'block': BLOCK, '_ansible_check_mode': True}
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            blockinfile.main()
    result = json.loads(capsys.readouterr().out)
    assert result['changed'] is (not expected), result


def test_attrs_match():
    st = os.stat_result((0o100644, 0, 0, 1, 0, 0, 10, 0, 0, 0))
    assert _managed_files.attrs_match(st, uid=0, gid=0, mode='0644')
    assert _managed_files.attrs_match(st, mode=0o644)
    assert not _managed_files.attrs_match(st, mode='0600')
    assert not _managed_files.attrs_match(st, uid=1000)
    assert not _managed_files.attrs_match(st, gid=1000)
    assert not _managed_files.attrs_match(st, mode='u=rw,go=r')  # symbolic: the file module decides
    assert not _managed_files.attrs_match(None, mode='0644')


def test_octal_mode():
    assert _managed_files.octal_mode('0755') == 0o755
    assert _managed_files.octal_mode('644') == 0o644
    assert _managed_files.octal_mode(0o600) == 0o600
    assert _managed_files.octal_mode('u+x') is None
    assert _managed_files.octal_mode(None) is None


def test_shadowed_names_ignore_the_managed_blocks():
    text = IN_PLACE + 'import os\nos.environ["NCCL_PROTO"] = "Simple"\n'
    assert _managed_files.shadowed_names(text, ['CUDA_HOME', 'NCCL_PROTO']) == ['NCCL_PROTO']
    assert _managed_files.shadowed_names(IN_PLACE, ['CUDA_HOME']) == []
    assert _managed_files.shadowed_names(None, ['CUDA_HOME']) == []


def test_regular_file_and_directory(tmp_path):
    target = tmp_path / 'f'
    target.write_text('x')
    link = tmp_path / 'l'
    os.symlink(str(target), str(link))
    assert _managed_files.is_regular(os.lstat(str(target)))
    assert not _managed_files.is_regular(os.lstat(str(link)))
    assert _managed_files.is_directory(os.lstat(str(tmp_path)))
    assert not _managed_files.is_directory(None) and not _managed_files.is_regular(None)


@pytest.mark.parametrize('name, text, lines', [
    ('no block', 'x = 1\n', ''),
    ('one block', IN_PLACE, ''),
    ('two blocks', IN_PLACE + 'y = 2\n' + IN_PLACE, ''),
    ('BEGIN twice, one END, a hand-written line between', BEGIN + 'PATCHED = True\n' + BEGIN + BLOCK + '\n' + END, '1, 3, 7'),
    ('only BEGIN', 'x = 1\n' + BEGIN + BLOCK + '\n', '2'),
    ('only END', BLOCK + '\n' + END, '4'),
    ('END before BEGIN', END + BLOCK + '\n' + BEGIN, '1, 5'),
    ('CRLF lines count as marks', IN_PLACE.replace('\n', '\r\n') + BEGIN, '1, 5, 6'),
])
def test_marker_problem_names_every_mark_line(name, text, lines):
    problem = _managed_files.marker_problem(text.encode('utf-8'), MARKER)
    if not lines:
        assert problem == ''
    else:
        assert 'unbalanced at lines %s ' % lines in problem
        assert 'PATCHED' not in problem


def test_marker_problem_of_a_missing_file_is_empty():
    assert _managed_files.marker_problem(None, MARKER) == ''


def test_blockinfile_would_keep_a_stray_begin_line():
    """Why unbalanced marks are refused: blockinfile (last BEGIN to last END) leaves the first BEGIN in the file, so
    the collection's own reader of managed blocks would take the hand-written line after it for part of a block."""
    text = 'PRE = 1\n' + BEGIN + 'PATCHED = True\n' + BEGIN + BLOCK + '\n' + END
    outside = _managed_files.MANAGED_BLOCK.sub('', text)
    assert 'PATCHED' not in outside
