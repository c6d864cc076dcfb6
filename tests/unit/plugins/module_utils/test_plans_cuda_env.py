# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of the cuda_env role's plan (module_utils/_plans/cuda_env.cuda_env_plan): its values and every problem
it can report, before the host read and with it; and of the one pre-flight message (_plans/problems)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils._plans import cuda_env as plan_mod
from ansible_collections.inferops.sglang.plugins.module_utils._plans.cuda_env import cuda_env_plan
from ansible_collections.inferops.sglang.plugins.module_utils._plans.problems import preflight_message, problem

INPUTS = {'cuda_home': '/usr/local/cuda-13.0', 'variables': {'CUDA_MODULE_LOADING': 'LAZY'},
          'nccl': {'NCCL_NVLS_ENABLE': '0'}, 'extra': {}, 'manage_sitecustomize': True, 'env_file': '/etc/sglang/cuda.env'}
FACTS = {'init': 'systemd',
         'python': {'executable': '/opt/venv/bin/python3', 'pythonpath': '/srv/lib',
                    'sitecustomize': {'realpath': '/usr/lib/python3.11/sitecustomize.py',
                                      'candidate': '/opt/venv/lib/python3.11/site-packages/sitecustomize.py'}},
         'cuda': {'toolkits': [{'path': '/usr/local/cuda-13.0'}, {'path': '/usr/local/cuda-12.8'}]}}
STATE = {'tools': {'nvcc': True, 'ptxas': True},
         'sitecustomize': {'exists': True, 'isreg': True, 'isdir': False, 'dir_isdir': True, 'marker_problem': ''}}


def checks(plan):
    return [item['check'] for item in plan['problems']]


def test_values_of_a_host_that_passes():
    plan = cuda_env_plan(INPUTS, FACTS, STATE)
    assert plan['problems'] == []
    assert plan['environment'] == {'CUDA_HOME': '/usr/local/cuda-13.0', 'TRITON_PTXAS_PATH': '/usr/local/cuda-13.0/bin/ptxas',
                                   'CUDA_MODULE_LOADING': 'LAZY', 'NCCL_NVLS_ENABLE': '0'}
    assert list(plan['environment'])[:2] == ['CUDA_HOME', 'TRITON_PTXAS_PATH']
    assert plan['sitecustomize'] == '/usr/lib/python3.11/sitecustomize.py'
    assert (plan['python'], plan['pythonpath']) == ('/opt/venv/bin/python3', '/srv/lib')
    assert plan['marker'] == '# {mark} inferops.sglang managed block: CUDA/NCCL environment'


def test_role_variable_names_with_their_prefix_and_later_layers_win():
    inputs = {'cuda_env_cuda_home': '/c', 'cuda_env_variables': {'A': '1', 'CUDA_HOME': '/x'}, 'cuda_env_nccl': {'A': '2'},
              'cuda_env_extra': {'A': '3'}}
    env = cuda_env_plan(inputs, FACTS)['environment']
    assert env == {'CUDA_HOME': '/x', 'TRITON_PTXAS_PATH': '/c/bin/ptxas', 'A': '3'}


def test_the_candidate_where_no_sitecustomize_is_imported_yet():
    facts = copy.deepcopy(FACTS)
    facts['python']['sitecustomize'] = {'realpath': None, 'candidate': '/opt/venv/lib/sitecustomize.py'}
    assert cuda_env_plan(INPUTS, facts)['sitecustomize'] == '/opt/venv/lib/sitecustomize.py'


def test_no_facts_is_the_one_problem():
    plan = cuda_env_plan(dict(INPUTS, cuda_home='relative'), {})
    assert checks(plan) == [plan_mod.CHECK_FACTS]
    assert 'run the role inferops.sglang.facts' in plan['problems'][0]['message']
    assert cuda_env_plan(INPUTS, None)['problems'][0]['check'] == plan_mod.CHECK_FACTS


def broken(where, **change):
    facts = copy.deepcopy(FACTS)
    inputs = dict(INPUTS)
    if where == 'facts':
        facts['python'].update(change)
    else:
        inputs.update(change)
    return inputs, facts


@pytest.mark.parametrize('inputs, facts, check, words', [
    (broken('facts', sitecustomize={'realpath': '/s/sitecustomize.py', 'error': 'SyntaxError: line 3'})[0],
     broken('facts', sitecustomize={'realpath': '/s/sitecustomize.py', 'error': 'SyntaxError: line 3'})[1],
     plan_mod.CHECK_IMPORT, ['/opt/venv/bin/python3 fails to import', 'SyntaxError: line 3']),
    (dict(INPUTS, cuda_home='usr/local/cuda'), FACTS, plan_mod.CHECK_CUDA_HOME, ['(got usr/local/cuda)']),
    (dict(INPUTS, cuda_home=''), FACTS, plan_mod.CHECK_CUDA_HOME, ['absolute path']),
    (dict(INPUTS, nccl={'NCCL_IB_DISABLE': 1, 'BAD-NAME': 'x'}), FACTS, plan_mod.CHECK_ENV,
     ['BAD-NAME, NCCL_IB_DISABLE', 'quote numbers']),
    (dict(INPUTS, extra={'HF_TOKEN': 'hf_abc'}), FACTS, plan_mod.CHECK_SECRETS,
     ['cuda_env_extra.HF_TOKEN look like secrets', '/etc/sglang/cuda.env']),
    (dict(INPUTS, variables={'HTTPS_PROXY': 'http://u:pw@proxy:3128'}), FACTS, plan_mod.CHECK_SECRETS,
     ['cuda_env_variables.HTTPS_PROXY']),
    (INPUTS, broken('facts', executable='')[1], plan_mod.CHECK_LOCATION, ['the server interpreter imports']),
    (INPUTS, broken('facts', sitecustomize={'realpath': '', 'candidate': ''})[1], plan_mod.CHECK_LOCATION, ['(got nothing)']),
    (INPUTS, broken('facts', sitecustomize={'realpath': '/s/usercustomize.py'})[1], plan_mod.CHECK_LOCATION,
     ['(got /s/usercustomize.py)']),
])
def test_every_problem_before_the_read(inputs, facts, check, words):
    plan = cuda_env_plan(inputs, facts)
    # A relative CUDA_HOME is also an invalid value of the environment (one path, absolute); an empty one is not.
    relative = check == plan_mod.CHECK_CUDA_HOME and inputs['cuda_home']
    assert checks(plan) == ([check, plan_mod.CHECK_ENV] if relative else [check])
    for word in words:
        assert word in plan['problems'][0]['message']


def test_no_value_is_ever_in_a_message():
    inputs = dict(INPUTS, extra={'HF_TOKEN': 'hf_secret_value', 'X': 'bad\nvalue'})
    plan = cuda_env_plan(inputs, FACTS)
    assert set(checks(plan)) == {plan_mod.CHECK_ENV, plan_mod.CHECK_SECRETS}
    text = preflight_message(plan['problems'], 'h')
    assert 'hf_secret_value' not in text and 'bad' not in text


def test_every_problem_is_reported_at_once():
    inputs = dict(INPUTS, cuda_home='cuda', extra={'API_KEY': 'k'})
    facts = broken('facts', executable='')[1]
    assert checks(cuda_env_plan(inputs, facts)) == [plan_mod.CHECK_CUDA_HOME, plan_mod.CHECK_ENV, plan_mod.CHECK_SECRETS,
                                                    plan_mod.CHECK_LOCATION]


@pytest.mark.parametrize('manage', [False, 'False', 'no'])
def test_without_a_managed_block_no_location_or_file_is_needed(manage):
    inputs = dict(INPUTS, manage_sitecustomize=manage)
    facts = broken('facts', executable='', sitecustomize={})[1]
    state = {'tools': {'nvcc': True, 'ptxas': True}}
    assert cuda_env_plan(inputs, facts, state)['problems'] == []


def state_with(**site):
    state = copy.deepcopy(STATE)
    state['sitecustomize'].update(site)
    return state


@pytest.mark.parametrize('state, check, words', [
    (dict(STATE, tools={'nvcc': False, 'ptxas': True}), plan_mod.CHECK_TOOLS,
     ['/usr/local/cuda-13.0 lacks bin/nvcc', 'toolkits seen: /usr/local/cuda-13.0, /usr/local/cuda-12.8']),
    (state_with(isreg=False, isdir=True), plan_mod.CHECK_FILE, ['(it is a directory)']),
    (state_with(exists=False, isreg=False, dir_isdir=False), plan_mod.CHECK_FILE, ['(it is missing its directory)']),
    (state_with(isreg=False), plan_mod.CHECK_FILE, ['(it is not a regular file)']),
    (state_with(marker_problem='the managed block\'s markers are unbalanced at lines 3, 9'), plan_mod.CHECK_MARKERS,
     ['/usr/lib/python3.11/sitecustomize.py: the managed block\'s markers are unbalanced at lines 3, 9']),
])
def test_every_problem_of_the_host_read(state, check, words):
    plan = cuda_env_plan(INPUTS, FACTS, state)
    assert checks(plan) == [check]
    for word in words:
        assert word in plan['problems'][0]['message']


def test_no_toolkit_seen_and_a_new_file_in_an_existing_directory():
    facts = dict(FACTS, cuda={})
    plan = cuda_env_plan(INPUTS, facts, dict(state_with(exists=False, isreg=False), tools={'nvcc': False}))
    assert checks(plan) == [plan_mod.CHECK_TOOLS]
    assert '(toolkits seen: none)' in plan['problems'][0]['message']


def test_the_read_is_not_judged_while_the_settings_fail():
    plan = cuda_env_plan(dict(INPUTS, cuda_home='x'), FACTS, dict(STATE, tools={'nvcc': False}))
    assert checks(plan) == [plan_mod.CHECK_CUDA_HOME, plan_mod.CHECK_ENV]


def test_a_read_left_out_for_failed_settings_gives_their_problems_alone():
    """The pre-flight skips the host read while the settings or the facts fail, and checks both calls' problems in one
    task: the second call gets Ansible's result of a skipped task."""
    skipped = {'changed': False, 'skipped': True, 'skip_reason': 'Conditional result was False', 'false_condition': 'x'}
    assert checks(cuda_env_plan(dict(INPUTS, cuda_home='x'), FACTS, skipped)) == [plan_mod.CHECK_CUDA_HOME, plan_mod.CHECK_ENV]
    assert checks(cuda_env_plan(INPUTS, {}, skipped)) == [plan_mod.CHECK_FACTS]


def test_preflight_message():
    assert preflight_message([], 'h') == '0 pre-flight check(s) failed on h; nothing was changed.'
    items = [problem('Check A', ' a is wrong.\n'), problem('Check B', 'b too.')]
    assert preflight_message(items, 'gpu-1') == ('2 pre-flight check(s) failed on gpu-1; nothing was changed. '
                                                 '[Check A] a is wrong. [Check B] b too.')


@pytest.mark.parametrize('manage, expected', [(True, True), ('false', False), ('yes', True), (0, False), (None, False)])
def test_manage_sitecustomize_is_one_bool_for_every_task(manage, expected):
    """The role's tasks read the plan's manage_sitecustomize, not the variable: '-e cuda_env_manage_sitecustomize=false'
    (a string) turns the checks and the block off together."""
    plan = cuda_env_plan(dict(INPUTS, manage_sitecustomize=manage), FACTS, STATE)
    assert plan['manage_sitecustomize'] is expected


@pytest.mark.parametrize('facts', ['abc', [1], {'init': 'systemd', 'python': 'x', 'cuda': 'y'},
                                   {'init': 'systemd', 'python': {'sitecustomize': 'z'}}])
def test_facts_that_are_not_mappings_count_as_missing(facts):
    plan = cuda_env_plan(INPUTS, facts, {'tools': 'x', 'sitecustomize': 'y'})
    assert plan['problems'], plan
    assert set(checks(plan)) <= {plan_mod.CHECK_FACTS, plan_mod.CHECK_LOCATION}


def test_the_plan_task_never_shows_the_environment():
    import os
    import yaml
    path = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'roles', 'cuda_env', 'tasks', 'preflight.yml')
    with open(path) as handle:
        tasks = yaml.safe_load(handle)
    planning = [task for task in tasks if '__cuda_env_plan' in (task.get('ansible.builtin.set_fact') or {})]
    assert planning and all(task.get('no_log') is True for task in planning)


def _spawned(seen):
    from ansible_collections.inferops.sglang.plugins.module_utils._python_probe import SPAWN_MARKER
    import json
    return {'rc': 0, 'stdout': 'x\n%s%s\n' % (SPAWN_MARKER, json.dumps(seen)), 'stderr': ''}


ALL_SEEN = {'CUDA_HOME': '/usr/local/cuda-13.0', 'TRITON_PTXAS_PATH': '/usr/local/cuda-13.0/bin/ptxas',
            'CUDA_MODULE_LOADING': 'LAZY', 'NCCL_NVLS_ENABLE': '0'}


def test_with_nothing_to_write_the_preflight_checks_the_spawned_child():
    """The block in place already (the read found everything current): what its spawned child saw is checked in the
    pre-flight, before any role changes anything; after a write, the apply step checks it with the same rule."""
    state = dict(STATE, current=True, spawn=_spawned(dict(ALL_SEEN, NCCL_NVLS_ENABLE='1')))
    plan = cuda_env_plan(INPUTS, FACTS, state)
    assert checks(plan) == [plan_mod.CHECK_SPAWN]
    assert plan['problems'][0]['message'] == (
        'A child process spawned by /opt/venv/bin/python3 (as SGLang starts its schedulers), from a clean environment '
        'with PYTHONPATH=/srv/lib, does not see NCCL_NVLS_ENABLE although the block was written into '
        '/usr/lib/python3.11/sitecustomize.py: that interpreter does not import this file at start-up. Check facts_python '
        'and the PYTHONPATH the server runs with (facts_pythonpath).')
    failed = dict(state, spawn={'rc': 1, 'stdout': '', 'stderr': 'Traceback ...\nImportError: no module x\n'})
    message = cuda_env_plan(INPUTS, FACTS, failed)['problems'][0]['message']
    assert 'does not see CUDA_HOME, CUDA_MODULE_LOADING, NCCL_NVLS_ENABLE, TRITON_PTXAS_PATH' in message
    assert 'at start-up (ImportError: no module x).' in message


@pytest.mark.parametrize('state, inputs', [
    (dict(STATE, current=True, spawn=_spawned(ALL_SEEN)), INPUTS),                          # the child sees them all
    (dict(STATE, current=False, spawn=_spawned({})), INPUTS),                               # a write comes: apply checks
    (dict(STATE, current=True, spawn=None), INPUTS),                                        # no child was run
    (dict(STATE, current=True, spawn=_spawned({})), dict(INPUTS, manage_sitecustomize=False)),  # no block managed
])
def test_no_spawned_child_problem_where_the_preflight_cannot_judge_it(state, inputs):
    assert plan_mod.CHECK_SPAWN not in checks(cuda_env_plan(inputs, FACTS, state))
