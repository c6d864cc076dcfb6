# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of module_utils/_rendered_files.py: which rendered file is written, what systemctl says (issue 14)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import _rendered_files as rf


def test_checksum_is_the_sha1_ansible_reports():
    assert rf.checksum(b'') == 'da39a3ee5e6b4b0d3255bfef95601890afd80709'
    assert rf.checksum(b'abc') == 'a9993e364706816aba3e25717850c26c9cd0d89d'


@pytest.mark.parametrize('state,current,wanted,action', [
    ('present', None, 'a', 'write'),         # no file yet
    ('present', 'b', 'a', 'write'),          # another content: written (after a backup)
    ('present', 'a', 'a', 'none'),           # converged: nothing written
    ('absent', 'a', None, 'remove'),
    ('absent', None, None, 'none'),
])
def test_file_action(state, current, wanted, action):
    assert rf.file_action(state, current, wanted) == action


def test_file_action_refuses_another_state():
    with pytest.raises(ValueError, match='present'):
        rf.file_action('link', None, 'a')


@pytest.mark.parametrize('exists,before,owner,hand_over', [
    (True, 'root', 'sglang', True),       # a cache root filled before the move to a service user
    (True, 'sglang', 'sglang', False),    # converged
    (False, None, 'sglang', False),       # created now: nothing to hand over
    (True, 'root', None, False),          # check mode, the user is not created yet: no owner to hand over to
])
def test_hand_over_needed(exists, before, owner, hand_over):
    assert rf.hand_over_needed(exists, before, owner) is hand_over


@pytest.mark.parametrize('rc,out,enabled', [
    (0, 'enabled\n', True),
    (0, 'static\n', True),
    (0, 'enabled-runtime\n', False),   # as ansible.builtin.systemd_service: enabled for good anyway
    (0, 'indirect\n', False),
    (0, 'alias\n', False),
    (1, 'disabled\n', False),
    (1, '', False),                    # no such unit
])
def test_is_enabled(rc, out, enabled):
    assert rf.is_enabled(rc, out) is enabled


def test_text_diff():
    assert rf.text_diff('/etc/x', 'a\n', 'b\n') == {'before_header': '/etc/x', 'after_header': '/etc/x',
                                                    'before': 'a\n', 'after': 'b\n'}
    new = rf.text_diff('/etc/x', None, 'b\n')
    assert new['before'] == '' and new['before_header'] == '/etc/x (absent)'
    gone = rf.text_diff('/etc/x', 'a\n', None)
    assert gone['after'] == '' and gone['after_header'] == '/etc/x (absent)'


# systemd-analyze verify's lines as systemd 252 prints them (Debian 12), for a unit given as /tmp/d/sglang.service.
VERIFY_PATH = '/tmp/d/sglang.service'


def test_unit_verify_verdict_takes_the_warnings_systemd_goes_on_after_as_problems():
    """rc 0 after a ReadWritePaths= split at a space: systemd would run another unit than the one written."""
    output = ('/tmp/d/sglang.service:31: ReadWritePaths= path is not absolute, ignoring: work/modèles\n'
              '/tmp/d/sglang.service:8: Unknown key \'ProtectFoo\' in section [Service], ignoring.\n')
    problems, notes = rf.unit_verify_verdict(0, output, VERIFY_PATH, 'sglang.service')
    assert problems == output.splitlines() and notes == []


def test_unit_verify_verdict_notes_a_command_that_does_not_exist_yet():
    output = 'sglang.service: Command /opt/sglang/venvs/0.5.9/bin/python3 is not executable: No such file or directory\n'
    problems, notes = rf.unit_verify_verdict(1, output, VERIFY_PATH, 'sglang.service')
    assert problems == [] and notes == [output.strip()]


def test_unit_verify_verdict_fails_a_command_that_exists_and_cannot_run_and_a_fatal_setting():
    output = ('sglang.service: Command /opt/x/python3 is not executable: Permission denied\n'
              '/tmp/d/sglang.service:21: WorkingDirectory= path is not absolute: "/srv/a b"\n'
              'sglang.service: Unit configuration has fatal error, unit will not be started.\n'
              'Unit sglang.service has a bad unit file setting.\n')
    problems, notes = rf.unit_verify_verdict(1, output, VERIFY_PATH, 'sglang.service')
    assert problems == output.splitlines() and notes == []


def test_unit_verify_verdict_leaves_other_units_aside_and_fails_a_silent_error():
    other = '/lib/systemd/system/foo.service:3: Unknown key \'X\' in section [Unit], ignoring.\n'
    assert rf.unit_verify_verdict(0, other, VERIFY_PATH, 'sglang.service') == ([], [])
    assert rf.unit_verify_verdict(0, '', VERIFY_PATH, 'sglang.service') == ([], [])
    problems, notes = rf.unit_verify_verdict(1, 'Failed to initialize manager: Permission denied\n', VERIFY_PATH,
                                             'sglang.service')
    assert problems == ['systemd-analyze verify exited with status 1: Failed to initialize manager: Permission denied']


@pytest.mark.parametrize('rc,out,err,verdict', [
    (0, '{"error": null, "missing": []}\n', '', ([], [])),
    (0, '{"error": "ValueError: badly formatted", "missing": ["/var/log/sglang"]}\n', '',
     (['ValueError: badly formatted'], ['the directory /var/log/sglang does not exist yet'])),
    (0, '{"error": null, "missing": ["/var/log/sglang"], "users": ["sglang"]}\n', '',
     ([], ['the directory /var/log/sglang does not exist yet', 'the user sglang does not exist yet'])),
    (1, '', 'ModuleNotFoundError: No module named \'supervisor\'\n',
     (["the supervisor check did not answer (rc 1): ModuleNotFoundError: No module named 'supervisor'"], [])),
    # The venv is made but supervisor is not installed in it yet (the role installs it after the pre-flight).
    (0, '{"absent": "ModuleNotFoundError: No module named \'supervisor\'"}\n', '',
     ([], ["supervisor is not installed for this interpreter yet (ModuleNotFoundError: No module named 'supervisor'; "
           "the role installs it later in the run): the file was not checked"])),
])
def test_supervisor_check_verdict(rc, out, err, verdict):
    assert rf.supervisor_check_verdict(rc, out, err) == verdict
