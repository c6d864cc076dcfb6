# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The service's templates write outside values only through the writers: rendered with odd but writable values
they hold them as their formats read them; with a value a format cannot hold they fail instead of writing it.

Rendered with plain Jinja2 and the collection's filters (Ansible renders them the same way, with more filters)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import configparser
import datetime
import os
import re
import shlex

import jinja2
import pytest
import yaml

from ansible.errors import AnsibleFilterError
from ansible.plugins.filter.core import FilterModule as CoreFilters

from ansible_collections.inferops.sglang.plugins.filter.operations import FilterModule as OperationsFilters
from ansible_collections.inferops.sglang.plugins.filter.rules import FilterModule as RulesFilters
from ansible_collections.inferops.sglang.plugins.filter.writers import FilterModule as WriterFilters
from ansible_collections.inferops.sglang.plugins.module_utils._plans.cutover import cutover_record
from ansible_collections.inferops.sglang.plugins.module_utils._sandbox import sandbox_directives

ROLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'roles')
INJECTED = 'w\nExecStartPre=+/bin/sh -c "id > /pwned-root"'


def render(role, template, **variables):
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(os.path.join(ROLES, role, 'templates')),
                             trim_blocks=True)
    for name, func in CoreFilters().filters().items():
        env.filters.setdefault(name, func)
    for module in (WriterFilters, RulesFilters, OperationsFilters):
        for name, func in module().filters().items():
            env.filters['inferops.sglang.' + name] = func
    return env.get_template(template).render(**variables)


def service_vars(working_directory='/srv/sglang', **overrides):
    """The variables the service templates read: the role's, and the plan (filter service_plan) as _service_render."""
    plan = dict(
        adopted={'main_pid': 123, 'cwd': working_directory}, args_map={'port': 30000}, user='sglang', group='sglang',
        working_directory=working_directory, path='/opt/my env/bin:/usr/bin',
        sandbox=sandbox_directives(252, ['/opt/my env/bin/python3'], ['/var/cache/sglang', working_directory]),
        command=['/opt/my env/bin/python3', '-m', 'sglang.launch_server', '--model-path', '/data/m %h',
                 '--served-model-name', 'a $b'],
        wrapper='/etc/sglang/sglang-run.sh', supervisor_socket='/run/inferops-sglang-supervisor.sock',
        supervisor_dir='/etc/inferops-sglang/supervisor.d',
        supervisord_command='/usr/bin/env -i supervisord -c /etc/inferops-sglang/supervisord.conf',
        nvidia_units=[],
    )
    plan.update(overrides.pop('plan', {}))
    variables = dict(
        ansible_managed='Ansible managed', _service_render=plan,
        service_cuda_env_file='/etc/sglang/cuda.env', service_env_file='/etc/sglang/sglang.env',
        service_start_limit_interval_sec=600, service_start_limit_burst=5, service_user_groups=['video'],
        service_restart='on-failure', service_restart_sec=5, service_timeout_stop_sec=120, service_limit_nofile=1048576,
        service_limit_memlock='infinity', service_tasks_max='infinity', service_success_exit_status=['SIGKILL'],
        service_name='sglang', _service_facts={'init': {'systemd_version': 252}},
        service_log_dir='/var/log/sglang',
    )
    variables.update(overrides)
    return variables


def unit_lines(text):
    return [line for line in text.splitlines() if line and not line.startswith('#')]


def test_unit_holds_an_odd_working_directory_as_one_path():
    # Field case: a working directory with a specifier and a space.
    unit = render('service', 'sglang.service.j2', **service_vars('/data/models %h'))
    lines = unit_lines(unit)
    assert 'WorkingDirectory=/data/models %%h' in lines
    assert 'ReadWritePaths=/var/cache/sglang "/data/models %%h"' in lines
    assert 'Environment="PATH=/opt/my env/bin:/usr/bin"' in lines
    assert 'ExecStart=/opt/my env/bin/python3 -m sglang.launch_server \\' not in lines
    assert 'ExecStart="/opt/my env/bin/python3" -m sglang.launch_server \\' in lines
    assert '    --model-path "/data/m %%h" \\' in lines
    assert '    --served-model-name "a $$b"' in lines
    assert not [line for line in lines if line.startswith('ExecStartPre=+/bin/sh')]


@pytest.mark.parametrize('template', ['sglang.service.j2', 'supervisor-program.conf.j2'])
def test_an_injected_working_directory_fails_the_render(template):
    with pytest.raises(AnsibleFilterError) as caught:
        render('service', template, **service_vars('/x' + INJECTED))
    assert 'pwned' not in str(caught.value)


def test_supervisor_program_reads_back_with_configparser():
    text = render('service', 'supervisor-program.conf.j2', **service_vars('/data/50% x;y'))
    parser = configparser.RawConfigParser(inline_comment_prefixes=(';', '#'), strict=False)
    parser.read_string(text)
    assert parser.sections() == ['program:sglang']
    assert parser.get('program:sglang', 'directory') == '/data/50%% x;y'  # supervisord's % expansion makes it 50%


def test_supervisor_program_refuses_a_comment_in_the_directory():
    with pytest.raises(AnsibleFilterError, match='comment'):
        render('service', 'supervisor-program.conf.j2', **service_vars('/data/a ;b'))


def test_wrapper_script_holds_even_a_line_break_as_one_word():
    text = render('service', 'sglang-run.sh.j2', **service_vars('/x' + INJECTED))
    assert shlex.split(text.split('\ncd ', 1)[1].split(' || ')[0]) == ['/x' + INJECTED]


def test_wrapper_script_quotes_every_word():
    text = render('service', 'sglang-run.sh.j2', **service_vars("/data/it's $HOME"))
    cd = [line for line in text.splitlines() if line.startswith('cd ')][0]
    assert shlex.split(cd) == ['cd', "/data/it's $HOME", '||', 'exit', '1']
    exec_line = [line for line in text.splitlines() if line.startswith('exec ')][0]
    assert shlex.split(exec_line)[1:] == service_vars()['_service_render']['command']


def test_secrets_yaml_reads_back():
    text = render('service', 'sglang-secrets.yaml.j2', ansible_managed='x',
                  service_secret_args={'api-key': 'k: "v"\n# x', 'admin-api-key': 'yes'})
    assert yaml.safe_load(text) == {'api-key': 'k: "v"\n# x', 'admin-api-key': 'yes'}


def test_environment_files_and_sitecustomize():
    env = {'NCCL_DEBUG': 'WARN', 'ODD': 'a "b" $c `d` %h'}
    text = render('cuda_env', 'cuda.env.j2', ansible_managed='x', _cuda_env_environment=env, _cuda_env_sitecustomize='')
    assert 'ODD="a \\"b\\" \\$c \\`d\\` %h"' in text.splitlines()
    block = render('cuda_env', 'sitecustomize_block.py.j2', _cuda_env_environment=env)
    namespace = {}
    exec(compile(block.replace('_inferops_os.environ.setdefault', 'seen.__setitem__'), 'block', 'exec'),
         dict(seen=namespace))
    assert namespace == env


def test_router_workers_file_is_an_environment_file():
    text = render('router', 'router-workers.env.j2', ansible_managed='x',
                  router_worker_urls=['http://a:30000', 'http://b:30000/%h'])
    assert text.splitlines()[-1] == 'SGLANG_ROUTER_WORKER_URLS="http://a:30000 http://b:30000/%h"'


def test_fleet_summary_cells_hold_pipes_and_line_breaks():
    row = {'host': 'h|1', 'batch': 1, 'result': 'failed', 'failure': 'boom\n# heading', 'failed_task': 't',
           'args_diff': {'changed': {'x': {'old': 'a|b', 'new': 'c'}}}, 'dark_window_text': '12.8 (0.5 + 10.0 + 2.3)',
           'shown': 'failed', 'changes': ['--x a|b -> c'], 'time_to_healthy_text': '-', 'rolled_back_text': 'no'}
    text = render('fleet', 'fleet-summary.md.j2', _fleet_run_id='r1', _fleet_run={'started': 's'},
                  __fleet_heading={'kind': 'restart', 'title': 'SGLang fleet restart', 'done': 'restarted'},
                  __fleet_finished='f', __fleet_wall_s=1, _fleet_plan={'batches': [['h|1']], 'canary': ['h|1']},
                  __fleet_bad_rows=[row], __fleet_done=False, __fleet_rows=[row])
    table = [line for line in text.splitlines() if line.startswith('| h\\|1 ')]
    assert len(table) == 1 and re.findall(r'(?<!\\)\|', table[0]).__len__() == 9
    assert '| 12.8 (0.5 + 10.0 + 2.3) |' in table[0]  # the dark window column (issue 32)
    assert '# heading' not in [line.strip() for line in text.splitlines()]
    assert text.startswith('# SGLang fleet restart r1') and '--x a\\|b -> c' in table[0] and '<br>' not in text
    assert '| - | 12.8 (0.5 + 10.0 + 2.3) | no |' in table[0] and '- Started s, written f (1 s)' in text


def test_fleet_summary_in_check_mode_says_it_was_not_written():
    text = render('fleet', 'fleet-summary.md.j2', _fleet_run_id='r1', _fleet_run={'started': 's'},
                  __fleet_heading={'kind': 'check', 'title': 'SGLang fleet check (rollout, nothing changed)', 'done': 'would change'},
                  __fleet_finished='f', __fleet_wall_s=1, _fleet_plan={'batches': [['h']], 'canary': ['h']},
                  __fleet_bad_rows=[], __fleet_done=True, __fleet_rows=[])
    assert '- Started s, as of f (1 s); check mode: not written to disk' in text


def record_vars(**overrides):
    """The variables the deployment record is rendered with, a stray with odd values among the facts."""
    stray = {'main_pid': 7, 'port': 30000, 'user': 'u', 'cwd': '/srv/a`b', 'env_readable': True,
             'argv': ['python3', '--x', '```\n# injected heading'], 'env': {'A|B': 'x|y\nz'}}
    values = dict(
        inventory_hostname='h1', now=lambda utc=True: datetime.datetime(2026, 1, 1),
        cutover_unit='sglang.service', _cutover_manager='systemd',
        cutover_service={'unit_path': '/etc/systemd/system/sglang.service', 'command': ['/venv/bin/python3', '--m', 'a b'],
                         'path': '/usr/bin', 'environment_files': ['/etc/sglang/sglang.env'], 'environment_names': ['X'],
                         'user': 'sglang', 'group': 'sglang'},
        __cutover_mgr={'state': 'active', 'pid': 1, 'restarts': 0}, _cutover_url='http://h1',
        __cutover={'action': 'restart', 'degraded': '', 'failure': '', 'failed_task': '', 'rollback_failure': '',
                   'failure_log': [], 'previous': {'exists': False},
                   'outcome': {'record': 'healthy', 'output': {'versions': {}, 'previous_versions': {}}}},
        __cutover_gate={}, cutover_cuda_env={},
        inferops_sglang_known_good={'dir': '/var/lib/sglang/known-good'}, __cutover_stopped={},
        _cutover_facts={'strays': [stray], 'init': {'system': 'systemd', 'pid1': 'systemd', 'container': 'none'},
                        'gpu_count': 0, 'gpus': [], 'interconnect': 'none', 'cuda': {'toolkits': []},
                        'python': {'executable': '/venv/bin/python3'}})
    values.update(overrides)
    values['__cutover_record'] = cutover_record(
        values['__cutover'], values['cutover_service'], values['cutover_cuda_env'], values['_cutover_facts'],
        values['inferops_sglang_known_good'], values['__cutover_gate'], values['__cutover_stopped'], '/var/lib/kg')
    return values


def test_deployment_record_holds_odd_values_in_code_spans_and_fences():
    text = render('cutover', 'deployment_record.md.j2', **record_vars())
    lines = text.splitlines()
    fences = [i for i, line in enumerate(lines) if line == '````']
    assert len(fences) == 2, 'the stray argv (holding ```) is fenced by four backticks'
    assert fences[0] < lines.index('# injected heading') < fences[1]
    assert '### pid 7 on port 30000 (user `u`, cwd ``/srv/a`b``)' in lines
    assert '| `A\\|B` | `x\\|y z` |' in lines


def test_deployment_record_of_a_restored_entry_without_a_block_or_files():
    """A rollback to a known-good entry that kept no sitecustomize block (nor the file names) says so."""
    facts = record_vars()['_cutover_facts']
    facts['python']['sitecustomize'] = {'path': '/usr/lib/python3/sitecustomize.py', 'is_link': False}
    text = render('cutover', 'deployment_record.md.j2', **record_vars(
        _cutover_facts=facts,
        cutover_cuda_env={'sitecustomize': '/usr/lib/python3/sitecustomize.py', 'block': None, 'env_file': None,
                          'environment': {}},
        inferops_sglang_known_good={'dir': '/var/lib/sglang/known-good', 'history_dir': None}))
    assert 'The known-good configuration restored here holds no copy of the block.' in text
    assert '`None`' not in text and '```python\nNone' not in text


def test_c46_c47_unit_limits_clean_stop_and_nvidia_units():
    """C46: TasksMax= as data (infinity by default); C47: SGLang's SIGKILL to itself after a drain is a clean end;
    issue 28: the unit starts after (and wants) Fabric Manager and the persistence daemon where they are installed."""
    lines = unit_lines(render('service', 'sglang.service.j2', **service_vars(
        plan={'nvidia_units': ['nvidia-fabricmanager.service', 'nvidia-persistenced.service']})))
    assert 'TasksMax=infinity' in lines and 'SuccessExitStatus=SIGKILL' in lines
    assert 'After=nvidia-fabricmanager.service nvidia-persistenced.service' in lines
    assert 'Wants=nvidia-fabricmanager.service nvidia-persistenced.service' in lines
    overrides = {'service_tasks_max': 16384, 'service_success_exit_status': []}
    lines = unit_lines(render('service', 'sglang.service.j2', **service_vars(**overrides)))
    assert 'TasksMax=16384' in lines
    assert not [line for line in lines if line.startswith(('SuccessExitStatus=', 'After=nvidia', 'Wants=nvidia'))]
