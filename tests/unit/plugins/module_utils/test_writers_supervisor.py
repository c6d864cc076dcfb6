# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The supervisord writers: a value reads back through supervisor's own parser (supervisor.options, 4.3.0:
UnhosedConfigParser, %(here)s replacement, %-expansion) as exactly the value and adds no key or section, or the
writer refuses."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils._writers.common import Unwritable
from ansible_collections.inferops.sglang.plugins.module_utils._writers.supervisor import (
    supervisor_name,
    supervisor_value,
    supervisor_word,
)

try:
    import hypothesis
    from hypothesis import strategies as st
except ImportError:  # ansible-test's venv has no hypothesis: the property tests are skipped there
    hypothesis = None

options = pytest.importorskip('supervisor.options')
datatypes = pytest.importorskip('supervisor.datatypes')


def read_back(written, name='sglang'):
    """The program section as supervisord reads it: [program:NAME] directory=WRITTEN user=root."""
    parser = options.UnhosedConfigParser()
    parser.expansions = {'ENV_HOME': '/root'}
    parser.read_string('[program:%s]\ndirectory=%s\nuser=root\n' % (name, written))
    parser.expand_here('/etc/supervisor')
    assert parser.sections() == ['program:%s' % name]
    assert sorted(parser.options('program:%s' % name)) == ['directory', 'user']
    assert parser.saneget('program:%s' % name, 'user') == 'root'
    return parser.saneget('program:%s' % name, 'directory')


@pytest.mark.parametrize('value, written', [
    ('/srv/sglang', '/srv/sglang'),
    ('/data/models %h', '/data/models %%h'),
    ('/srv/%(ENV_HOME)s', '/srv/%%(ENV_HOME)s'),
    ('/srv/a;b#c', '/srv/a;b#c'),
    ('/srv/modèles', '/srv/modèles'),
    ('/srv/$x', '/srv/$x'),
    (30, '30'),
])
def test_supervisor_value_reads_back(value, written):
    assert supervisor_value(value) == written
    assert read_back(written) == str(value)


@pytest.mark.parametrize('value, phrase', [
    ('w\n[program:evil]\ncommand=/bin/sh -c id', 'line break'),
    ('/x\ruser=root', 'carriage return'),
    (' /x', 'white space'),
    ('/x ', 'white space'),
    ('/x ;comment', 'comment'),
    ('/x\u3000#comment', 'comment'),
    ('%(here)s/x', 'here'),
    ('/x\x00', 'NUL'),
])
def test_supervisor_value_refuses(value, phrase):
    with pytest.raises(Unwritable, match=phrase) as caught:
        supervisor_value(value)
    assert 'evil' not in str(caught.value)


def test_supervisor_word():
    assert supervisor_word('/etc/supervisor.d/*.conf') == '/etc/supervisor.d/*.conf'
    with pytest.raises(Unwritable, match='white space'):
        supervisor_word('/etc/my dir/*.conf')


@pytest.mark.parametrize('name', ['sglang', 'sglang-2', 'sglang_b.v1', 'sglang@30000'])
def test_supervisor_name_accepts_what_supervisor_takes(name):
    assert supervisor_name(name) == name
    assert datatypes.process_or_group_name(name) == name
    assert read_back('/x', name) == '/x'


@pytest.mark.parametrize('name', ['', 'a b', 'a:b', 'a/b', 'a]b', 'a%b', 'a\n[program:x]', '-a', 'a;b'])
def test_supervisor_name_refuses(name):
    with pytest.raises(Unwritable, match='program name'):
        supervisor_name(name)


if hypothesis is not None:
    @hypothesis.settings(max_examples=300, deadline=None)
    @hypothesis.given(st.text(max_size=30) | st.sampled_from(['%(here)s', '%(ENV_HOME)s', ' ;x', '\n[x]', '%']))
    def test_supervisor_values_read_back_or_refuse(value):
        try:
            written = supervisor_value(value)
        except Unwritable:
            return
        assert read_back(written) == value
