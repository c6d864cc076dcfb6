# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The environment file writer: each line reads back as the value under systemd's EnvironmentFile= rules (the
reader below follows systemd.exec(5) and parse_env_file for a double-quoted value) and under a POSIX sh that sources
the file (the supervisord wrapper does), or the writer refuses."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import subprocess

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils._writers.common import Unwritable
from ansible_collections.inferops.sglang.plugins.module_utils._writers.envfile import environment_file_line

try:
    import hypothesis
    from hypothesis import strategies as st
except ImportError:  # ansible-test's venv has no hypothesis: the property tests are skipped there
    hypothesis = None

SH = '/bin/sh'


def read_systemd(line):
    """One NAME="value" line as systemd's env-file parser reads it (the double-quoted form only)."""
    assert '\n' not in line and '\r' not in line
    name, sep, rest = line.partition('=')
    assert sep and rest.startswith('"') and rest.endswith('"')
    inner = rest[1:-1]
    out = []
    i = 0
    while i < len(inner):
        ch = inner[i]
        if ch == '\\':
            nxt = inner[i + 1:i + 2]
            if nxt in ('"', '\\', '`', '$'):
                out.append(nxt)
                i += 2
                continue
            out.append(ch)
        elif ch == '"':
            raise AssertionError('unescaped quote ends the value early')
        else:
            out.append(ch)
        i += 1
    return name, ''.join(out)


def read_sh(line, name):
    """What a POSIX sh has in $name after sourcing a file holding ``line``."""
    script = 'set -a\n%s\nset +a\nprintf %%s "$%s"' % (line, name)
    result = subprocess.run([SH, '-c', script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False,
                            env={'PATH': os.environ.get('PATH', '/usr/bin:/bin')})
    assert result.returncode == 0, result.stderr
    return result.stdout.decode('utf-8', 'surrogateescape')


@pytest.mark.parametrize('name, value, expected', [
    ('CUDA_HOME', '/usr/local/cuda-13.0', 'CUDA_HOME="/usr/local/cuda-13.0"'),
    ('NCCL_P2P_LEVEL', 'SYS', 'NCCL_P2P_LEVEL="SYS"'),
    ('EMPTY', '', 'EMPTY=""'),
    ('_X1', 'a b  c', '_X1="a b  c"'),
    ('Q', 'say "hi"', 'Q="say \\"hi\\""'),
    ('BS', 'C:\\path\\', 'BS="C:\\\\path\\\\"'),
    ('D', '$HOME and ${X}', 'D="\\$HOME and \\${X}"'),
    ('T', 'a`b`', 'T="a\\`b\\`"'),
    ('P', '100% %h', 'P="100% %h"'),
    ('S', "it's", 'S="it\'s"'),
    ('H', '#not a comment', 'H="#not a comment"'),
    ('U', 'modèle 日本', 'U="modèle 日本"'),
    ('TAB', 'a\tb', 'TAB="a\tb"'),
])
def test_environment_file_line_reads_back(name, value, expected):
    line = environment_file_line(name, value)
    assert line == expected
    assert read_systemd(line) == (name, value)
    if os.path.exists(SH):
        assert read_sh(line, name) == value


@pytest.mark.parametrize('value, expected', [(None, 'N=""'), (8, 'N="8"'), (0.5, 'N="0.5"'), (2.0, 'N="2"'),
                                             (True, 'N="true"')])
def test_environment_file_line_scalars(value, expected):
    assert environment_file_line('N', value) == expected


@pytest.mark.parametrize('name, value, fragment', [
    ('1ABC', 'x', 'invalid environment variable name'),
    ('A-B', 'x', 'invalid environment variable name'),
    ('', 'x', 'invalid environment variable name'),
    ('A B', 'x', 'invalid environment variable name'),
    ('A\nB', 'x', 'invalid environment variable name'),
    (None, 'x', 'invalid environment variable name'),
    ('A', 'line1\nline2', 'value of A holds a line break'),
    ('A', 'x\ry', 'carriage return'),
    ('A', 'x\x00y', 'NUL'),
    ('A', 'x\x1by', 'control character'),
    ('A', ['x'], 'must be text or a number'),
])
def test_environment_file_line_refuses(name, value, fragment):
    with pytest.raises(Unwritable, match=fragment) as caught:
        environment_file_line(name, value)
    assert 'line1' not in str(caught.value)


if hypothesis is not None:
    @hypothesis.settings(max_examples=150, deadline=None)
    @hypothesis.given(st.text(max_size=30) | st.sampled_from(['$(id)', '`id`', '\\', '"', "'", '\\\n', '%h']))
    def test_environment_file_lines_read_back_or_refuse(value):
        try:
            line = environment_file_line('V', value)
        except Unwritable:
            return
        assert read_systemd(line) == ('V', value)
        if os.path.exists(SH):
            assert read_sh(line, 'V') == value
