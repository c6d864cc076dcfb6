# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The cutover's answer to server_process's reboot_required (a stray SIGKILL could not end holds the GPUs):
no rollback start, no stop or eviction of the service, the host fails saying so, and the record says so.
Read from the role's files (the molecule scenario runs it for real)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

import yaml

ROLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'roles', 'cutover')


def load(*parts):
    with open(os.path.join(ROLE, *parts)) as f:
        return f.read()


def tasks(name):
    return dict((task['name'], task) for task in yaml.safe_load(load('tasks', name)))


def conditions(task):
    when = task.get('when', [])
    return when if isinstance(when, list) else [when]


def test_rollback_starts_nothing_when_a_reboot_is_required():
    """Stuck process: the failure's reboot_required is noted; the rollback (restore + start) and the stop and
    eviction of the service are skipped."""
    rollback = tasks('rollback.yml')
    noted = rollback['Note what failed']['ansible.builtin.set_fact']['__cutover']
    # cutover_failure takes reboot_required from the failed result (test_plans_cutover.py::test_failure)
    assert 'ansible_failed_result | inferops.sglang.cutover_failure(' in noted
    for name in ('Roll back to the last known-good configuration', 'Stop the new server',
                 'Take the new server out of the router before it is stopped (it may have been put back already)'):
        assert 'not __cutover.reboot_required' in conditions(rollback[name]), name


def test_reboot_required_is_reset_reported_and_recorded():
    decide = tasks('decide.yml')
    assert decide['Decide - start a stopped service, restart a changed one, leave an unchanged one'][
        'vars']['__cutover_reset']['reboot_required'] is False
    assert tasks('report.yml')['Fail the host']['ansible.builtin.fail']['msg'] == '{{ __cutover.outcome.text }}'
    assert '__cutover.outcome.record' in load('templates', 'deployment_record.md.j2')
    assert '__cutover_record.stuck' in load('templates', 'deployment_record.md.j2')
    # The wording (the reboot message, the record's line, the output's reboot_required) is cutover_outcome's:
    # tests/unit/plugins/module_utils/test_plans_cutover.py.
