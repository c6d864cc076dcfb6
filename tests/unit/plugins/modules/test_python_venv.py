# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of modules/python_venv.py: the route to pip, and real venvs (field case C20)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import glob
import json
import os
import sys

import pytest

from ansible_collections.inferops.sglang.tests.unit.plugins.modules.module_args import patch_module_args
from ansible_collections.inferops.sglang.plugins.modules import python_venv

WHEELS = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', '.cache', 'wheels'))
SUPERVISOR_WHEEL = sorted(glob.glob(os.path.join(WHEELS, 'supervisor-4.3.0-*.whl')))


def test_requirement_name():
    assert python_venv.requirement_name('supervisor==4.3.0') == ('supervisor', '4.3.0')
    assert python_venv.requirement_name('sglang-router') == ('sglang-router', None)
    # Issue 15: the distribution of a requirement with extras is the name without them.
    assert python_venv.requirement_name('sglang[all]==0.5.10') == ('sglang', '0.5.10')


@pytest.mark.parametrize('creator,route', [
    ({'ensurepip': True, 'pip': True}, 'ensurepip'),
    ({'ensurepip': False, 'pip': True}, 'pip'),          # Debian without python3.X-venv but with python3-pip
    ({'ensurepip': False, 'pip': False}, None),          # a minimal image: neither (C20)
    (None, None),                                        # the interpreter does not run
])
def test_choose_route(creator, route):
    assert python_venv.choose_route(creator) == route


def run(monkeypatch, capsys, args, check=False):
    with patch_module_args(dict(args, _ansible_check_mode=check)):
        with pytest.raises(SystemExit):
            python_venv.main()
    return json.loads(capsys.readouterr().out)


@pytest.mark.skipif(not SUPERVISOR_WHEEL, reason='no supervisor wheel in .cache/wheels (scripts/setup.sh downloads it)')
def test_a_half_built_venv_is_rebuilt_and_a_second_run_changes_nothing(monkeypatch, capsys, tmp_path):
    """C20: a failed `python3 -m venv` leaves bin/python without pyvenv.cfg or pip; the next run rebuilds it."""
    venv = tmp_path / 'supervisor'
    (venv / 'bin').mkdir(parents=True)
    os.symlink(sys.executable, str(venv / 'bin' / 'python'))
    args = {'python': sys.executable, 'venv': str(venv), 'requirement': 'supervisor==4.3.0',
            'pip_args': ['--no-index', '--find-links', WHEELS]}
    planned = run(monkeypatch, capsys, args, check=True)
    assert planned['changed'] is True and planned['rebuilt'] is True and not os.path.exists(str(venv / 'pyvenv.cfg'))
    done = run(monkeypatch, capsys, args)
    assert done['changed'] is True and done['version'] == '4.3.0', done
    assert os.path.exists(str(venv / 'pyvenv.cfg')) and os.path.exists(str(venv / 'bin' / 'supervisord'))
    again = run(monkeypatch, capsys, args)
    assert again['changed'] is False and again['rebuilt'] is False and again['version'] == '4.3.0'


def test_relative_paths_are_refused(monkeypatch, capsys):
    result = run(monkeypatch, capsys, {'python': 'python3', 'venv': 'venv', 'requirement': 'supervisor==4.3.0'})
    assert result['failed'] is True and 'absolute path' in result['msg']


def test_a_password_in_pip_args_never_reaches_the_output(monkeypatch, capsys, tmp_path):
    """pip_args may hold an index or proxy URL with a password: a failure shows neither it nor the argv with it."""
    args = {'python': sys.executable, 'venv': str(tmp_path / 'v'), 'requirement': 'no-such-package-inferops==1.0',
            'pip_args': ['--no-index', '--find-links', str(tmp_path), '--proxy', 'http://svc:s3cr3t-pw@proxy.invalid:3128']}
    result = run(monkeypatch, capsys, args)
    assert result['failed'] is True
    assert 's3cr3t-pw' not in json.dumps(result)


@pytest.fixture(scope='module')
def double_wheels(tmp_path_factory):
    """The test double's wheels of 0.5.9 and 0.5.10 (tests/double/build_wheels.py)."""
    import subprocess
    out = tmp_path_factory.mktemp('wheels')
    builder = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'double', 'build_wheels.py')
    subprocess.run([sys.executable, builder, '--out', str(out), '--versions', '0.5.9', '0.5.10'],
                   check=True, stdout=subprocess.PIPE)
    return str(out)


def test_companions_and_the_marker_of_a_completed_install(monkeypatch, capsys, tmp_path, double_wheels):
    """Issue 15: requirements install with the pin; the marker records exactly them, so an install interrupted before
    the marker (or one of other companions) is done again, and a completed one is not."""
    venv = tmp_path / '0.5.10'
    args = {'python': sys.executable, 'venv': str(venv), 'requirement': 'sglang==0.5.10',
            'requirements': ['sglang==0.5.10'], 'marker': '.inferops-sglang-installed',
            'pip_args': ['--no-index', '--find-links', double_wheels]}
    planned = run(monkeypatch, capsys, args, check=True)
    assert planned['changed'] is True and not venv.exists()
    done = run(monkeypatch, capsys, args)
    assert done['changed'] is True and done['version'] == '0.5.10', done
    marker = venv / '.inferops-sglang-installed'
    assert json.loads(marker.read_text())['requirements'] == ['sglang==0.5.10', 'sglang==0.5.10']
    assert run(monkeypatch, capsys, args)['changed'] is False
    marker.unlink()
    assert run(monkeypatch, capsys, args, check=True)['changed'] is True and not marker.exists()
    assert run(monkeypatch, capsys, args)['changed'] is True and marker.exists()
    other = dict(args, requirements=[])
    assert run(monkeypatch, capsys, other)['changed'] is True
    assert json.loads(marker.read_text())['requirements'] == ['sglang==0.5.10']


def test_keep_installed_never_changes_a_completed_venv_and_takes_the_index_from_the_environment(
        monkeypatch, capsys, tmp_path, double_wheels):
    """Review of issue 15: with keep_installed, another set of companions for a venv with a completed install is
    refused (check mode: reported in `conflict`, nothing changed), the same set reordered or respaced is not another
    set, and an index URL reaches pip through PIP_INDEX_URL, never its argv or the module's output."""
    venv = tmp_path / '0.5.10'
    args = {'python': sys.executable, 'venv': str(venv), 'requirement': 'sglang==0.5.10',
            'requirements': ['ninja==1.11.1.4'], 'marker': '.inferops-sglang-installed', 'keep_installed': True,
            'pip_args': ['--no-index', '--find-links', double_wheels]}
    assert run(monkeypatch, capsys, args)['changed'] is True
    marker = (venv / '.inferops-sglang-installed').read_text()
    same = dict(args, requirement='sglang == 0.5.10')
    assert run(monkeypatch, capsys, same)['changed'] is False
    other = dict(args, requirements=[])
    planned = run(monkeypatch, capsys, other, check=True)
    assert planned['changed'] is False and 'ninja==1.11.1.4' in planned['conflict'], planned
    refused = run(monkeypatch, capsys, other)
    assert refused['failed'] is True and 'never changed' in refused['msg']
    assert (venv / '.inferops-sglang-installed').read_text() == marker

    seen = []
    real_run_command = python_venv.AnsibleModule.run_command

    def spy(self, argv, *a, **kw):
        seen.append((list(argv), dict(kw.get('environ_update') or {})))
        return real_run_command(self, argv, *a, **kw)

    monkeypatch.setattr(python_venv.AnsibleModule, 'run_command', spy)
    keyed = dict(args, venv=str(tmp_path / 'keyed'), pip_args=['--find-links', double_wheels],
                 index_url='http://TOKEN-s3cr3t@127.0.0.1:9/simple')
    result = run(monkeypatch, capsys, keyed)
    installs = [(argv, env) for argv, env in seen if 'install' in argv]
    assert installs and all('TOKEN-s3cr3t' not in ' '.join(argv) for argv, env in installs)
    assert installs[-1][1]['PIP_INDEX_URL'] == 'http://TOKEN-s3cr3t@127.0.0.1:9/simple'
    assert 'TOKEN-s3cr3t' not in json.dumps(result)
