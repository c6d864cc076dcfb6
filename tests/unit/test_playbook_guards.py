# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The guards of the playbooks that change servers (site, restart, rollback):

- the first task of the first play checks the role variables of every host (filter undeclared_role_vars) and stops
  the whole run (any_errors_fatal) before any play changes a host; status.yml checks them in each host's block;
- the play that changes the hosts takes each host's lock in its first task, the facts call (the facts role's
  ``facts_lock``: host_facts takes it before it reads anything), and gives it back in the block's ``always``
  (host_lock ``state=absent``) with the same run id, so every exit path releases it;
- with tags, both lock tasks run whatever is selected (tag ``always`` where the play uses tags).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
CHANGING = ['site', 'restart', 'rollback']
LOCK = 'inferops.sglang.host_lock'


def plays(name):
    with open(os.path.join(ROOT, 'playbooks', name + '.yml')) as handle:
        return yaml.safe_load(handle)


def is_variable_check(task):
    return 'inferops.sglang.undeclared_role_vars' in str(task.get('vars', {})) and 'ansible.builtin.assert' in task


def uses_tags(play):
    return 'tags:' in yaml.safe_dump(play)


@pytest.mark.parametrize('name', CHANGING)
def test_the_variables_are_checked_first_and_stop_the_whole_run(name):
    first = plays(name)[0]['tasks'][0]
    assert is_variable_check(first), first
    assert first.get('any_errors_fatal') is True
    assert "hostvars[inventory_hostname] | list" in first['vars']['__unknown_role_vars']


def test_status_notes_unknown_variables_in_the_hosts_row():
    block = plays('status')[0]['tasks'][0]
    assert is_variable_check(block['block'][0]) and 'rescue' in block


@pytest.mark.parametrize('name', CHANGING)
def test_the_lock_is_taken_before_the_facts_and_given_back_on_every_path(name):
    play = plays(name)[-1]
    block = play['tasks'][0]
    take = block['block'][0]
    assert take['name'] == 'Gather the facts' and take['ansible.builtin.import_role']['name'] == 'inferops.sglang.facts'
    lock = take['vars']['facts_lock']
    assert LOCK not in yaml.safe_dump(block['block']), 'the lock is taken by the facts call alone'
    give = block['always'][-1]
    assert give[LOCK]['state'] == 'absent'
    assert give[LOCK]['run_id'] == lock['run_id']
    assert 'inferops_sglang_lock_wait' in lock['wait'] and 'inferops_sglang_lock_timeout' in lock['timeout']
    assert lock['controller'] and lock['playbook']
    if uses_tags(play):
        assert 'always' in take.get('tags', []) and 'always' in give.get('tags', [])


def test_the_facts_role_hands_the_lock_to_host_facts():
    with open(os.path.join(ROOT, 'roles', 'facts', 'tasks', 'main.yml')) as handle:
        tasks = yaml.safe_load(handle)
    gather = [task for task in tasks if 'inferops.sglang.host_facts' in task][0]
    assert 'facts_lock' in gather['inferops.sglang.host_facts']['lock']


@pytest.mark.parametrize('name', CHANGING)
def test_the_run_is_named_once_on_the_controller(name):
    named = [task for task in plays(name)[0]['tasks'] if 'inferops_sglang_lock_owner' in str(task)]
    assert len(named) == 1
    task = named[0]
    assert task['run_once'] and task['delegate_to'] == 'localhost' and task['delegate_facts'] and not task['become']
    assert task['ansible.builtin.set_fact']['inferops_sglang_lock_owner']['playbook'] == 'inferops.sglang.' + name


def test_status_takes_no_lock_whatever_the_inventory_sets():
    """status.yml is read-only and gives no lock back: its facts call gets an empty facts_lock over the inventory's."""
    text = yaml.safe_dump(plays('status'))
    assert LOCK not in text
    facts = [task for task in plays('status')[0]['tasks'][0]['block'] if task.get('name') == 'Gather the facts'][0]
    assert facts['vars']['facts_lock'] == {}
