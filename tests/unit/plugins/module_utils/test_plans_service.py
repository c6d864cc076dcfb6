# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of the service role's plan (module_utils/_plans/service.py, filter service_plan): its derived values
and every problem it can report."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import os

import pytest
import yaml

from ansible_collections.inferops.sglang.plugins.module_utils._plans import service, service_host, service_model
from ansible_collections.inferops.sglang.plugins.module_utils._plans.deployed import service_deployed
from ansible_collections.inferops.sglang.plugins.module_utils._plans.service import service_plan

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
with open(os.path.join(ROOT, 'roles', 'service', 'defaults', 'main.yml')) as _handle:
    DEFAULTS = yaml.safe_load(_handle)
# The defaults that are templates, as the role resolves them on a root-run host.
DEFAULTS.update(service_python='/root/ml-env/bin/python3', service_replica_address='h1',
                service_cuda_home='/usr/local/cuda-13.0', service_working_directory='/root',
                service_cuda_env_file='/etc/sglang/cuda.env')
del DEFAULTS['service_host_facts']
HOST = {'name': 'h1', 'address': '10.0.0.1', 'replica_group_exists': False, 'replica_hosts': [], 'replica_args': {}}
FACTS = {'init': {'system': 'systemd', 'pid1': 'systemd', 'systemd_booted': True, 'systemd_version': 252},
         'python': {'executable': '/root/ml-env/bin/python3', 'pythonpath': ''},
         'gpus': [{'index': i, 'mig_mode': 'Disabled'} for i in range(2)], 'gpu_count': 2, 'interconnect': 'nvlink',
         'lost_gpus': [], 'gpu_error': None, 'servers': [], 'strays': [], 'listeners': [], 'foreign': []}
STRAY = {'main_pid': 4242, 'port': 30000, 'user': 'sglang', 'cwd': '/srv/sglang',
         'executable': '/opt/env/bin/python3', 'argv': ['/opt/env/bin/python3', '-m', 'sglang.launch_server',
                                                        '--model-path', '/models/m', '--port', '30000'],
         'args': ['--model-path', '/models/m', '--port', '30000'], 'redacted_args': [],
         'env': {'CUDA_HOME': '/usr/local/cuda', 'HF_TOKEN': '********', 'PATH': '/opt/env/bin:/usr/bin', 'HOME': '/x'},
         'env_readable': True}


def inputs(**overrides):
    """The role's inputs (defaults, model-path set), overridden by ``name=value`` without the service_ prefix."""
    found = copy.deepcopy(DEFAULTS)
    found['service_server_args'] = {'model-path': '/models/m'}
    found['host'] = dict(HOST)
    for key, value in overrides.items():
        found[key if key == 'host' else 'service_' + key] = value
    return found


def facts(**overrides):
    found = copy.deepcopy(FACTS)
    found.update(overrides)
    return found


def checks(plan):
    return [problem['check'] for problem in plan['problems']]


def message(plan, check):
    return [problem['message'] for problem in plan['problems'] if problem['check'] == check][0]


# ---- derived values ---------------------------------------------------------------------------------------------------

def test_a_plain_server_passes_with_its_values():
    plan = service_plan(inputs(), facts())
    assert plan['problems'] == []
    assert plan['manager'] == 'systemd' and plan['unit'] == 'sglang.service' and plan['user'] == 'root'
    assert plan['command'] == ['/root/ml-env/bin/python3', '-m', 'sglang.launch_server', '--model-path', '/models/m',
                               '--tp-size', '2', '--nccl-port', '28000']
    assert plan['port'] == 30000 and plan['scheme'] == 'http' and plan['gpus_needed'] == 2
    assert plan['group'] == 'root' and plan['home'] is None and plan['working_directory'] == '/root'
    assert plan['write_paths'] == ['/var/cache/sglang', '/root', '-/root/.cache']
    assert plan['files'] == [{'src': '/etc/systemd/system/sglang.service', 'mode': '0644',
                              'template': 'sglang.service.j2'}]
    assert plan['path'].startswith('/root/ml-env/bin:/usr/local/cuda-13.0/bin:/usr/local/sbin')
    assert plan['environment']['SGLANG_LOGGING_CONFIG_PATH'] == '/etc/sglang/sglang-logging.json'
    assert plan['environment']['PYTHONPATH'] == service.LOG_MODULE_DIR
    assert plan['sandbox'] and plan['capabilities'] is None


@pytest.mark.parametrize('manager, units', [
    ({}, []),
    ({'load_state': 'not-found', 'persistenced_load_state': 'not-found'}, []),
    ({'load_state': 'loaded', 'active_state': 'active', 'persistenced_load_state': 'loaded'},
     ['nvidia-fabricmanager.service', 'nvidia-persistenced.service']),
    ({'load_state': 'not-found', 'persistenced_load_state': 'loaded'}, ['nvidia-persistenced.service']),
])
def test_nvidia_units_the_unit_starts_after(manager, units):
    """Issue 28 (C39): the unit orders itself after Fabric Manager and the persistence daemon where they exist."""
    assert service_plan(inputs(), facts(fabric_manager=manager))['nvidia_units'] == units


def test_the_prefix_of_the_inputs_is_optional():
    plain = dict((key[len('service_'):] if key.startswith('service_') else key, value)
                 for key, value in inputs().items())
    assert service_plan(plain, facts())['command'] == service_plan(inputs(), facts())['command']


@pytest.mark.parametrize('manager, init, expected', [
    ('auto', 'systemd', 'systemd'), ('auto', 'other', 'supervisord'), ('supervisord', 'systemd', 'supervisord'),
])
def test_manager(manager, init, expected):
    plan = service_plan(inputs(manager=manager), facts(init={'system': init, 'systemd_version': None}))
    assert plan['manager'] == expected
    if expected == 'supervisord':
        assert [entry['template'] for entry in plan['files']] == ['sglang-run.sh.j2', 'supervisor-program.conf.j2']
        assert plan['files'][1]['src'] == '/etc/inferops-sglang/supervisor.d/sglang.conf'
        assert plan['supervisord_command'] == (
            '/usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 '
            '/opt/inferops-sglang/supervisor/bin/supervisord -c /etc/inferops-sglang/supervisord.conf')


@pytest.mark.parametrize('cron, boot_file, job_prefix', [
    ({'reads_cron_d': True}, '/etc/cron.d/inferops-sglang', ''),
    ({'reads_cron_d': False, 'crontabs_dir': '/etc/crontabs'}, '/etc/crontabs/root', ''),
    ({'reads_cron_d': True, 'reboot_marker': '/run/crond.reboot', 'reboot_marker_persists': True},
     '/etc/cron.d/inferops-sglang', 'rm -f /run/crond.reboot; '),
    ({}, '', ''),
])
def test_boot_hook(cron, boot_file, job_prefix):
    plan = service_plan(inputs(), facts(init={'system': 'other', 'cron': cron}))
    assert plan['boot_file'] == boot_file
    assert plan['boot_job'] == job_prefix + plan['supervisord_command']


def test_port_and_scheme_from_the_config_file_and_tls():
    seen = {'config': {'config': {'content': 'port: 31000\n'}}}
    plan = service_plan(inputs(server_args={'model-path': '/m', 'config': 'server.yaml', 'ssl-certfile': '/c.pem'}),
                        facts(), seen)
    assert plan['user_config_path'] == '/root/server.yaml'
    assert plan['port'] == 31000 and plan['port_wanted'] == 31000 and plan['scheme'] == 'https'


def test_a_non_integer_port_is_refused():
    with pytest.raises(ValueError):
        service_plan(inputs(server_args={'model-path': '/m', 'port': 'x'}), facts())


def test_topology_defaults_and_replica_args():
    plan = service_plan(inputs(host=dict(HOST, replica_args={'nnodes': 2, 'node-rank': 0, 'dist-init-addr': 'h1:5000'})),
                        facts(interconnect='pcie'))
    assert plan['server_args'] == {'model-path': '/models/m', 'disable-custom-all-reduce': True, 'tp-size': 2,
                                   'nnodes': 2, 'node-rank': 0, 'dist-init-addr': 'h1:5000'}
    assert service_plan(inputs(topology_defaults=False), facts())['server_args'] == {'model-path': '/models/m'}


def test_adopting_a_hand_started_server():
    plan = service_plan(inputs(adopt=True, server_args={}), facts(strays=[STRAY]))
    assert plan['adopted'] == STRAY and plan['problems'] == []
    assert plan['command'] == STRAY['argv'] + ['--nccl-port', '28000']
    assert plan['user'] == 'sglang' and plan['working_directory'] == '/srv/sglang'
    assert plan['seed']['command'] == STRAY['argv']  # the first known-good configuration: the command as it ran
    assert plan['adopted_env'] == {'CUDA_HOME': '/usr/local/cuda', 'PATH': '/opt/env/bin:/usr/bin'}
    assert plan['path'] == '/opt/env/bin:/usr/bin' and plan['masked_names'] == ['HF_TOKEN']
    assert plan['environment']['CUDA_HOME'] == '/usr/local/cuda' and 'PATH' not in plan['environment']
    assert plan['home'] == '/var/cache/sglang'  # a user the pre-flight has not read yet: the role would create it


def test_adopting_with_a_managed_version_takes_the_new_venv():
    plan = service_plan(inputs(adopt=True, server_args={}, sglang_version='sglang==0.5.10'), facts(strays=[STRAY]))
    assert plan['command'][0] == '/opt/sglang/venvs/0.5.10/bin/python3'
    assert plan['path'].startswith('/opt/sglang/venvs/0.5.10/bin:')


def test_the_adopted_config_file_is_relative_to_the_servers_directory():
    stray = dict(STRAY, args=['--config', 'c.yaml'], argv=['/opt/env/bin/python3', '--config', 'c.yaml'])
    seen = {'info': {'adopted_config': {'content': 'model-path: /m\nport: 32000\n'}}}
    plan = service_plan(inputs(adopt=True, server_args={}), facts(strays=[stray]), seen)
    assert plan['adopted_config_path'] == '/srv/sglang/c.yaml' and plan['port'] == 32000


def test_the_service_user_as_the_host_shows_it():
    seen = {'info': {'user': {'exists': True, 'groups': ['sglang', 'video'], 'home': '/home/sglang'},
                     'gpu_devices': [{'path': '/dev/nvidia1'}, {'path': '/dev/nvidia0'}]}}
    plan = service_plan(inputs(user='sglang', user_groups=['render'], working_directory='/srv'), facts(), seen)
    assert (plan['user_exists'], plan['group'], plan['home']) == (True, 'sglang', '/home/sglang')
    assert plan['user_groups'] == ['sglang', 'video', 'render'] and not plan['creates_user']
    assert plan['gpu_device_paths'] == ['/dev/nvidia0', '/dev/nvidia1']
    assert plan['device_allow'][-2:] == ['/dev/nvidia0 rw', '/dev/nvidia1 rw']
    assert plan['capabilities'] == [] and plan['environment']['HOME'] == '/home/sglang'
    created = service_plan(inputs(user='sglang', user_create=True, working_directory='/srv'), facts())
    assert created['creates_user'] and created['group'] == 'sglang' and created['home'] == '/var/cache/sglang'


def test_a_low_port_gives_a_non_root_user_the_bind_capability():
    plan = service_plan(inputs(user='sglang', working_directory='/srv', server_args={'model-path': '/m', 'port': 80}),
                        facts(), {'info': {'user': {'exists': True, 'groups': ['sglang']}}})
    assert plan['capabilities'] == ['CAP_NET_BIND_SERVICE']


def test_environment_pythonpath_proxy_and_unread_names():
    env = {'SGLANG_OLD': '1', 'SGLANG_NEW': '1', 'https_proxy': 'http://proxy:3128'}
    plan = service_plan(inputs(environment=env, sglang_version='sglang==0.5.10'), facts(python={'pythonpath': '/opt/site'}),
                        {'args_checked': {'env_names_unread': ['SGLANG_OLD']}})
    assert plan['sglang_env_names'] == ['SGLANG_OLD', 'SGLANG_NEW'] and plan['env_unread'] == ['SGLANG_OLD']
    assert 'SGLANG_OLD' not in plan['environment'] and plan['environment']['SGLANG_NEW'] == '1'
    assert plan['environment']['PYTHONPATH'] == '/opt/site:' + service.LOG_MODULE_DIR
    assert 'h1' in plan['environment']['NO_PROXY'] and '10.0.0.1' in plan['environment']['no_proxy']


def test_secret_args_go_through_the_config_file():
    plan = service_plan(inputs(secret_args={'api-key': 'k'}), facts())
    assert plan['command'][-2:] == ['--config', '/etc/sglang/sglang-secrets.yaml'] and plan['problems'] == []


def test_the_port_holders_leave_out_the_server_being_replaced():
    listeners = [{'port': 30000, 'pid': 10}, {'port': 30000, 'pid': None}, {'port': 30000, 'pid': 99}]
    plan = service_plan(inputs(), facts(servers=[{'port': 30000, 'pids': [10]}], listeners=listeners))
    assert plan['port_holders'] == [{'port': 30000, 'pid': 99}]


def test_a_skipped_read_counts_as_not_read():
    seen = {'info': {'skipped': True, 'failures': [{'check': 'x', 'message': 'y'}]}, 'config': None}
    assert service_plan(inputs(), facts(), seen)['problems'] == []


# ---- problems ---------------------------------------------------------------------------------------------------------

GPU_DEVICE = {'path': '/dev/nvidia0', 'mode': '0660', 'pw_name': 'root', 'gr_name': 'video'}
# What service_preflight_info read of the model: C37's heads, an architecture the registry knows.
MODEL = {'ref': '/models/m', 'path': '/models/m/config.json', 'note': '',
         'config': {'architectures': ['LlamaForCausalLM'], 'num_attention_heads': 64, 'num_key_value_heads': 8}}
KIMI = {'architectures': ['KimiK25ForConditionalGeneration'],
        'text_config': {'num_attention_heads': 64, 'num_key_value_heads': 64, 'kv_lora_rank': 512}}
REGISTRY = {'sglang': {'LlamaForCausalLM': True, 'KimiK25ForConditionalGeneration': True}, 'transformers': None}
MODEL_SEEN = {'info': {'model_configs': [MODEL], 'registry': REGISTRY}}


def seen_models(*entries):
    return {'info': {'model_configs': list(entries), 'registry': REGISTRY}}


@pytest.mark.parametrize('check, role_inputs, host_facts, seen, words', [
    (service.CHECK_INIT, {'manager': 'systemd'}, {'init': {'system': 'other', 'pid1': 'tini', 'systemd_booted': False}},
     None, ['PID 1 on this host is tini', 'is missing', 'auto or supervisord']),
    (service.CHECK_REPLICA, {'replica_group': 'replica'}, {}, None, ["'replica'", 'at least two hosts', 'none']),
    (service.CHECK_REPLICA, {'replica_group': 'replica', 'dist_init_port': 0,
                             'host': dict(HOST, replica_group_exists=True, replica_hosts=['h1', 'h2'])}, {}, None,
     ['service_dist_init_port: 0', 'h1, h2']),
    (service.CHECK_REPLICA, {'replica_group': 'replica', 'server_args': {'model-path': '/m', 'nnodes': 2},
                             'host': dict(HOST, replica_group_exists=True, replica_hosts=['h1', 'h2'])}, {}, None,
     ['must not set them']),
    (service.CHECK_SECRET_FLAGS, {'server_args': {'model-path': '/m', 'api-key': 'sekrit'}}, {}, None,
     ['sets api-key', 'service_secret_args']),
    (service.CHECK_SECRET_ARGS, {'secret_args': {'tp-size': '2'}}, {}, None, ['(none of 1 keys are)']),
    (service.CHECK_SECRET_ARGS, {'secret_args': {'api-key': ''}}, {}, None, ['non-empty string']),
    (service.CHECK_SECRET_ARGS, {'secret_args': {'api-key': 'k'}, 'server_args': {'model-path': '/m', 'config': '/c'}},
     {}, {'config': {'config': {'content': ''}}}, ['must not set config']),
    (service.CHECK_SECRET_ARGS, {'config_file': 'secrets.yaml'}, {}, None, ['absolute path']),
    (service.CHECK_ADOPT_SECRETS, {'adopt': True, 'server_args': {}},
     {'strays': [dict(STRAY, redacted_args=['--api-key'])]}, None, ['passes --api-key', 'without service_adopt']),
    (service.CHECK_ADOPT, {'adopt': True, 'server_args': {}}, {}, None, ['0 stray SGLang servers qualify', 'none']),
    (service.CHECK_ADOPT, {'adopt': True, 'server_args': {}},
     {'strays': [STRAY, dict(STRAY, main_pid=4343)]}, None, ['2 stray', 'ports: 30000, 30000']),
    (service.CHECK_ADOPT, {'adopt': True, 'server_args': {'port': 1}},
     {'strays': [STRAY, dict(STRAY, port=30001)]}, None, ['0 stray', 'ports: 30000, 30001']),
    (service.CHECK_ARGS, {'server_args': {}}, {}, None, ['needs at least model-path']),
    (service.CHECK_ARGS, {'python': 'python3'}, {}, None, ['absolute paths']),
    (service.CHECK_ARGS, {'server_args': {'model-path': '/m', 'log-level': 'trace'}}, {}, None,
     ["--log-level 'trace' is no level", 'SGLang would not start']),
    (service.CHECK_WRITABLE, {'name': 'a b'}, {}, None, ['service_name', 'systemd files']),
    (service.CHECK_ENV, {'environment': {'1BAD': 'x'}}, {}, None, ['1BAD']),
    (service.CHECK_ADOPTED_ENV_READABLE, {'adopt': True, 'server_args': {}},
     {'strays': [dict(STRAY, env_readable=False)]}, None, ['pid 4242, user sglang', 'CAP_SYS_PTRACE']),
    (service.CHECK_ADOPTED_ENV, {'adopt': True, 'server_args': {}},
     {'strays': [dict(STRAY, env={'CUDA_HOME': 'a\nb'})]}, None, ['pid 4242', 'CUDA_HOME']),
    (service.CHECK_GPUS, {}, {'gpus': [], 'gpu_count': 0}, None, ['GPU']),
    (service.CHECK_PORT, {}, {'listeners': [{'port': 30000, 'pid': 77, 'process': 'nginx'}]}, None,
     ['held by nginx (pid 77)', 'Free the port']),
    (service.CHECK_PORT, {}, {'listeners': [{'port': 30000, 'pid': None, 'user': 'bob', 'uid': 1001}]}, None,
     ['user bob (uid 1001)', 'CAP_SYS_PTRACE']),
    (service.CHECK_FOREIGN, {}, {'foreign': [{'pid': 5, 'title': 'sglang::http_server', 'port': 30000,
                                              'holds_port': True, 'runtime': 'docker', 'container_id': 'abc',
                                              'gpus': []}]}, None, ['5']),
    (service.CHECK_PATHS, {'cache_dir': '/tmp/sglang'}, {}, None, ['(/tmp/sglang)', 'outside /tmp']),
    (service.CHECK_PATHS, {'read_write_paths': ['-relative']}, {}, None, ['service_read_write_paths']),
    (service.CHECK_PATHS, {'device_allow': ['/dev/x rw']}, {}, None, ['needs a service_device_policy']),
    (service.CHECK_GPU_ACCESS, {'user': 'sglang', 'working_directory': '/srv'}, {},
     {'info': {'user': {'exists': True, 'groups': ['sglang']}, 'gpu_devices': [GPU_DEVICE]}},
     ['cannot open /dev/nvidia0 (mode 0660, group video)', 'service_user_groups: [video]']),
    (service.CHECK_VERSION, {'sglang_version': 'not a version'}, {}, None, ['']),
    (service.CHECK_VERSION, {'sglang_version': 'sglang==0.5.10', 'venv_python': 'python3', 'venvs_keep': -1,
                             'sglang_requirements': [1]}, {}, None,
     ['service_venv_python (python3)', 'service_venvs_keep', 'service_sglang_requirements']),
    (service.CHECK_VENV, {'sglang_version': 'sglang==0.5.10'}, {}, {'sglang_venv': {'conflict': 'the venv is not a venv'}},
     ['the venv is not a venv']),
    (service.CHECK_VENV_PIP, {'sglang_version': 'sglang==0.5.10'}, {},
     {'sglang_venv': {'changed': True, 'route': None, 'venv_package': 'python3.11-venv'}},
     ['/usr/bin/python3 has neither ensurepip nor pip', '/opt/sglang/venvs/0.5.10', 'python3.11-venv']),
    (service.CHECK_SUPERVISOR_PIP, {'manager': 'supervisord'}, {},
     {'supervisor_venv': {'changed': True, 'route': None, 'package_manager': None, 'venv_package': 'python3-venv'}},
     ['h1 has no package manager', 'python3-venv', '/opt/inferops-sglang/supervisor']),
    (service_model.CHECK_DISAGG, {'server_args': {'model-path': '/m', 'disaggregation-mode': 'prefill'}}, {}, None,
     ['--disaggregation-mode prefill', 'not supported', "router's PD mode", 'Nothing was changed']),
    (service_model.CHECK_DISAGG, {'server_args': {'model-path': '/m', 'config': '/c.yaml'}}, {},
     {'config': {'config': {'content': 'disaggregation-mode: decode\n'}}}, ['--disaggregation-mode decode']),
    # C37: 64 heads and 8 KV heads, tp 3 on an 8-GPU host
    (service_model.CHECK_MODEL_TP, {'server_args': {'model-path': '/models/m', 'tp-size': 3}}, {}, MODEL_SEEN,
     ['/models/m/config.json: num_attention_heads is 64', 'sizes that divide it: 1, 2, 4, 8, 16, 32, 64',
      'num_key_value_heads is 8', 'Set tp-size in service_server_args']),
    (service_model.CHECK_MODEL_TP, {'server_args': {'model-path': '/models/m', 'tp-size': 8, 'attn-dp-size': 3}}, {},
     MODEL_SEEN, ['must divide --tp-size 8']),
    (service_model.CHECK_MODEL_TP, {'server_args': {'model-path': '/models/m', 'tp-size': 6, 'dp-size': 2,
                                                    'enable-dp-attention': True}}, {}, MODEL_SEEN,
     ['an attention tp of 3']),
    (service_model.CHECK_MODEL_TP, {'server_args': {'model-path': '/models/m', 'tp-size': 16,
                                                    'speculative-draft-model-path': '/models/d'}}, {},
     seen_models(MODEL, dict(MODEL, ref='/models/d', path='/models/d/config.json', config={'num_attention_heads': 24})),
     ['/models/d/config.json: num_attention_heads is 24']),
    (service_model.CHECK_MODEL_TP, {'server_args': {'model-path': '/models/k', 'tp-size': 3}}, {},
     seen_models(dict(MODEL, path='/models/k/config.json', config=KIMI)),
     ['text_config.num_attention_heads is 64']),
    (service_model.CHECK_MODEL_ARCH, {}, {}, {'info': {'model_configs': [MODEL], 'registry': {
        'sglang': {'LlamaForCausalLM': False}, 'transformers': {'LlamaForCausalLM': False}}}},
     ['/models/m/config.json: architectures is [LlamaForCausalLM]', 'service_sglang_version']),
    (service_model.CHECK_MODEL_ARCH, {'server_args': {'model-path': '/models/m', 'model-impl': 'sglang'}}, {},
     {'info': {'model_configs': [MODEL], 'registry': {'sglang': {'LlamaForCausalLM': False}, 'transformers': None}}},
     ['--model-impl sglang forbids']),
    (service_model.CHECK_MODEL_QUANT, {'server_args': {'model-path': '/models/m', 'quantization': 'awq'}}, {},
     seen_models(dict(MODEL, config=dict(MODEL['config'], quantization_config={'quant_method': 'fp8'}))),
     ['/models/m/config.json: quantization_config.quant_method is fp8, but --quantization is awq', 'set it to fp8']),
])
def test_each_problem(check, role_inputs, host_facts, seen, words):
    plan = service_plan(inputs(**role_inputs), facts(**host_facts), seen)
    assert check in checks(plan), plan['problems']
    text = message(plan, check)
    assert text and text == text.strip()
    for word in words:
        assert word in text


def test_every_check_is_tested():
    source = open(__file__).read()
    for name, dummy in service.CHECKS:
        module = [module for module in (service, service_host, service_model) if name in vars(module).values()][0]
        constant = [key for key, value in vars(module).items() if key.startswith('CHECK_') and value == name][0]
        assert '%s.%s,' % (module.__name__.rsplit('.', 1)[1], constant) in source


def test_the_host_reads_fail_first_and_every_failure_comes_at_once():
    seen = {'info': {'failures': [{'check': 'Check the model directories', 'message': '/models/m is missing'}]}}
    plan = service_plan(inputs(environment={'1BAD': 'x'}, cache_dir='/tmp/x'), facts(gpus=[], gpu_count=0), seen)
    assert checks(plan) == ['Check the model directories', service.CHECK_WRITABLE, service.CHECK_ENV, service.CHECK_GPUS,
                            service.CHECK_PATHS]


def test_a_secret_flag_is_reported_not_raised_and_its_value_never_planned():
    plan = service_plan(inputs(server_args={'model-path': '/m', 'api-key': 'sekrit'}), facts())
    assert checks(plan) == [service.CHECK_SECRET_FLAGS]
    assert 'sekrit' not in repr((plan['command'], plan['argv_args'], plan['args_map'], plan['problems']))


def test_a_sandbox_the_writers_refuse_is_reported_not_raised():
    plan = service_plan(inputs(device_policy='bogus'), facts())
    assert plan['sandbox'] == [] and checks(plan) == [service.CHECK_PATHS]
    assert message(plan, service.CHECK_PATHS).startswith("The sandbox of the unit cannot be written: device_policy must")


def test_a_relative_cache_directory_is_reported_not_raised():
    plan = service_plan(inputs(cache_dir='cache'), facts())
    assert checks(plan) == [service.CHECK_PATHS] and plan['cache_env'] == {}


def test_no_gpu_check_when_not_required():
    assert service_plan(inputs(require_gpus=False), facts(gpus=[], gpu_count=0))['problems'] == []


def test_an_adopted_server_secret_is_never_in_a_message():
    plan = service_plan(inputs(adopt=True, server_args={}),
                        facts(strays=[dict(STRAY, env={'HF_TOKEN': 'hf_realsecret\n'}, redacted_args=['--api-key'])]))
    assert 'hf_realsecret' not in repr(plan['problems'])


def test_the_seed_is_the_hand_started_server_as_it_runs():
    plan = service_plan(inputs(sglang_version='sglang==0.5.10', environment={'X': '1'}), facts(strays=[STRAY]))
    seed = plan['seed']
    assert plan['adopted'] == {} and plan['command'][0] == '/opt/sglang/venvs/0.5.10/bin/python3'
    assert seed['command'] == STRAY['argv'] and seed['user'] == 'sglang' and seed['path'] == '/opt/env/bin:/usr/bin'
    assert seed['environment'] == {'CUDA_HOME': '/usr/local/cuda', 'PYTHONPATH': service.LOG_MODULE_DIR,
                                   'SGLANG_LOGGING_CONFIG_PATH': '/etc/sglang/sglang-logging.json'}
    assert 'problems' not in seed and service_plan(inputs(), facts())['seed'] == {}


@pytest.mark.parametrize('init, boot', [
    ({'system': 'systemd'}, 'enabled (systemd)'),
    ({'system': 'other', 'cron': {}}, 'none: the container entrypoint must run /usr/bin/env -i '),
    ({'system': 'other', 'cron': {'reads_cron_d': True, 'daemon': 'cron'}}, 'cron @reboot (/etc/cron.d/inferops-sglang, cron)'),
    ({'system': 'other', 'cron': {'crontabs_dir': '/etc/crontabs', 'daemon': 'busybox crond', 'reboot_marker': '/run/m',
                                  'reboot_marker_persists': True}},
     'cron @reboot (/etc/crontabs/root, busybox crond), removes the stale /run/m that survives a restart here'),
])
def test_output_boot(init, boot):
    assert service_plan(inputs(), facts(init=init))['output']['boot'].startswith(boot)


def test_output_is_the_declared_service_output():
    plan = service_plan(inputs(secret_args={'api-key': 'k'}, manager='supervisord',
                               server_args={'model-path': '/m', 'nnodes': 2, 'node-rank': 1}),
                        facts(python={'executable': '/root/ml-env/bin/python3', 'sglang_version': '0.5.9'},
                              servers=[{'executable': '/a/bin/python3', 'pids': []}], strays=[{'executable': None}]))
    out = plan['output']
    assert (out['manager'], out['unit'], out['env_file_owner'], out['sandbox']) == ('supervisord', 'sglang', 'root', [])
    assert out['unit_path'] == '/etc/inferops-sglang/supervisor.d/sglang.conf' and out['port'] == 30000
    assert (out['nnodes'], out['node_rank'], out['adopted_pid'], out['scheme']) == (2, 1, None, 'http')
    assert out['sglang'] == {'managed': False, 'version': '0.5.9', 'requirement': '', 'venv': '/root/ml-env',
                             'python': '/root/ml-env/bin/python3', 'environment_not_read': []}
    assert out['secret_files'] == [{'src': '/etc/sglang/sglang-secrets.yaml', 'mode': '0600', 'owner': 'root',
                                    'group': 'root'}]
    assert out['supervisor']['log_file'] == '/var/log/sglang/sglang.log'
    assert set(out['environment_names']) == set(plan['environment'])
    assert plan['protected_executables'] == ['/a/bin/python3', '/root/ml-env/bin/python3']


def test_stray_secrets_and_sglang_installs():
    plan = service_plan(inputs(sglang_version='sglang==0.5.10'), facts(strays=[dict(STRAY, redacted_args=['--api-key'])]),
                        {'sglang_venv': {'changed': True, 'route': 'ensurepip'}})
    assert plan['stray_secrets'] == ['--api-key'] and plan['sglang_installs']
    assert not service_plan(inputs(), facts(), {'sglang_venv': {'changed': True}})['sglang_installs']


def test_the_logging_configuration_is_json_text_with_the_log_level():
    import json
    plan = service_plan(inputs(server_args={'model-path': '/m', 'log-level': 'debug'}), facts())
    assert plan['log_config'].endswith('}\n') and json.loads(plan['log_config'])['root']['level'] == 'DEBUG'


@pytest.mark.parametrize('pythonpath', ['', service.LOG_MODULE_DIR])
def test_the_environment_is_the_same_whatever_pythonpath_the_running_server_had(pythonpath):
    """The first run sees the hand-started server (no PYTHONPATH), the next the unit's (the logging module's): the
    environment file must read the same, order included, or a converged run rewrites it and restarts the server."""
    plan = service_plan(inputs(environment={'LD_LIBRARY_PATH': '/l'}), facts(python={'pythonpath': pythonpath}))
    first = service_plan(inputs(environment={'LD_LIBRARY_PATH': '/l'}), facts(python={'pythonpath': ''}))
    assert list(plan['environment'].items()) == list(first['environment'].items())
    assert list(plan['environment']) == sorted(plan['environment'])


def test_log_level_any_logging_name_and_no_logging_config_for_an_interpreter_that_ignores_pythonpath():
    plan = service.service_plan(inputs(server_args={'model-path': '/m', 'log-level': 'warn'}), FACTS)
    assert '"level": "WARN"' in plan['log_config'] and plan['problems'] == []
    assert plan['environment']['SGLANG_LOGGING_CONFIG_PATH'].endswith('-logging.json')
    isolated = service.service_plan(inputs(entry_point=['-I', '-m', 'sglang.launch_server']), FACTS)
    assert 'SGLANG_LOGGING_CONFIG_PATH' not in isolated['environment'], isolated['command']


# ---- the model checks: what passes, what is only a warning or a note --------------------------------------------------

EIGHT_GPUS = {'gpus': [{'index': i, 'mig_mode': 'Disabled'} for i in range(8)], 'gpu_count': 8}


@pytest.mark.parametrize('server_args, seen', [
    ({'model-path': '/models/m', 'tp-size': 8}, MODEL_SEEN),
    ({'model-path': '/models/k', 'tp-size': 8}, seen_models(dict(MODEL, config=KIMI))),   # MLA: KV heads not split
    ({'model-path': '/models/m', 'tp-size': 3}, None),                                   # nothing read: nothing known
    ({'model-path': '/models/m', 'tp-size': 3}, seen_models(dict(MODEL, config=None, note='not here'))),
    ({'model-path': '/models/m', 'tp-size': 8, 'quantization': 'fp8'}, MODEL_SEEN),      # online quantization
    ({'model-path': '/models/m', 'tp-size': 8, 'json-model-override-args': '{"architectures": ["X"]}'},
     {'info': {'model_configs': [MODEL], 'registry': {'sglang': {'LlamaForCausalLM': False}, 'transformers': None}}}),
    ({'model-path': '/models/m', 'tp-size': 8, 'disaggregation-mode': 'null'}, MODEL_SEEN),
])
def test_a_model_the_arguments_fit_passes(server_args, seen):
    plan = service_plan(inputs(server_args=server_args), facts(**EIGHT_GPUS), seen)
    assert plan['problems'] == []
    assert [text for text in plan['warnings'] if 'stay idle' not in text] == []


def test_c37_tp_3_is_refused_and_tp_4_warns_of_the_idle_gpus():
    refused = service_plan(inputs(server_args={'model-path': '/models/m', 'tp-size': 3}), facts(**EIGHT_GPUS), MODEL_SEEN)
    assert checks(refused) == [service_model.CHECK_MODEL_TP]
    plan = service_plan(inputs(server_args={'model-path': '/models/m', 'tp-size': 4}), facts(**EIGHT_GPUS), MODEL_SEEN)
    assert plan['problems'] == []
    assert plan['warnings'] == ['tp 4 x pp 1 x dp 1 uses 4 of the 8 GPUs of h1: GPU(s) 4, 5, 6, 7 stay idle. Set tp-size '
                                '(or dp-size) so that tp x pp x dp uses them, or run another server on them.']


@pytest.mark.parametrize('server_args, environment, gpus, idle', [
    ({'tp-size': 2, 'base-gpu-id': 2}, {}, EIGHT_GPUS, '0, 1, 4, 5, 6, 7'),
    ({'tp-size': 2}, {'CUDA_VISIBLE_DEVICES': '6,7'}, EIGHT_GPUS, '0, 1, 2, 3, 4, 5'),
    ({'tp-size': 4, 'dp-size': 2}, {}, EIGHT_GPUS, None),
    ({'tp-size': 2}, {}, {'gpus': [{'index': i, 'mig_mode': 'Enabled'} for i in range(8)], 'gpu_count': 8}, None),
])
def test_which_gpus_stay_idle(server_args, environment, gpus, idle):
    plan = service_plan(inputs(server_args=dict(server_args, **{'model-path': '/models/m'}), environment=environment),
                        facts(**gpus), MODEL_SEEN)
    if idle is None:
        assert plan['warnings'] == []
    else:
        assert 'GPU(s) %s stay idle' % idle in plan['warnings'][0]


def test_an_architecture_only_transformers_knows_is_a_warning():
    seen = {'info': {'model_configs': [MODEL], 'registry': {'sglang': {'LlamaForCausalLM': False},
                                                            'transformers': {'LlamaForCausalLM': True}}}}
    plan = service_plan(inputs(server_args={'model-path': '/models/m', 'tp-size': 2}), facts(), seen)
    assert plan['problems'] == []
    assert 'falls back to the Transformers implementation' in plan['warnings'][0]


def test_notes_say_what_the_model_checks_skipped():
    seen = {'info': {'model_configs': [dict(MODEL, ref='org/m', path=None, config=None,
                                            note='org/m is no directory on this host: its config.json was not checked')],
                     'registry': {'sglang': None, 'transformers': None}}}
    plan = service_plan(inputs(server_args={'model-path': 'org/m', 'tp-size': 2}), facts(), seen)
    assert plan['model_notes'] == ['org/m is no directory on this host: its config.json was not checked.']
    plan = service_plan(inputs(server_args={'model-path': '/models/m', 'tp-size': 2}), facts(),
                        {'info': {'model_configs': [MODEL], 'registry': {'sglang': None, 'transformers': None}}})
    assert plan['model_notes'] == ['The model registry of the server\'s SGLang (sglang/srt/models) was not found in '
                                   '/root/ml-env/lib/python*/site-packages: the architecture was not checked.']


def test_what_the_host_read_is_given_for_the_models():
    plan = service_plan(inputs(server_args={'model-path': 'org/m', 'speculative-draft-model-path': '/d', 'revision': 'v1'},
                               environment={'HF_HOME': '/hf'}), facts())
    assert (plan['model_refs'], plan['model_revision'], plan['hub_cache']) == (['org/m', '/d'], 'v1', '/hf/hub')
    assert plan['sglang_site'] == ['/root/ml-env/lib/python*/site-packages']
    probed = facts(python={'executable': '/root/ml-env/bin/python3', 'pythonpath': '',
                           'site_packages': ['/root/ml-env/lib/python3.12/site-packages']})
    plan = service_plan(inputs(user='sglang', working_directory='/srv'), probed)
    assert plan['sglang_site'] == ['/root/ml-env/lib/python3.12/site-packages']
    assert plan['hub_cache'] == '/var/cache/sglang/.cache/huggingface/hub'


# ---- service_deployed (the entry point deployed) --------------------------------------------------------------------

DEPLOYED_EMPTY = {'manager': 'systemd', 'unit': 'sglang.service', 'command': [], 'args': {}, 'config': '', 'files': [],
                  'boot': '-', 'cache_dir': '', 'sandbox': [], 'exposure': {}, 'environment_names': [], 'python': None,
                  'venv': '', 'sglang_version': None, 'nnodes': 1, 'node_rank': 0}
DEPLOYED_PLAN = {'manager': 'systemd', 'unit': 'sglang.service'}
DEPLOYED_FACTS = {'python': {'executable': '/opt/venv/bin/python3', 'sglang_version': '0.5.23'}}


@pytest.mark.parametrize('manifest, plan, expected', [
    # no known-good configuration (or the hand-started seed without a record): the plan's manager and unit
    (None, DEPLOYED_PLAN, {}),
    ({'manager': '', 'unit': None, 'record': None}, DEPLOYED_PLAN, {}),
    # a supervisor program is named after service_name
    ({}, {'manager': 'supervisord', 'unit': 'sglang.service'}, {'manager': 'supervisord', 'unit': 'sglang'}),
    # the manifest's manager and unit win; its record as it was saved (empty values as none recorded)
    ({'manager': 'supervisord', 'unit': 'sglang-a', 'files': ['/etc/sglang/config.yaml'],
      'record': {'boot': True, 'cache_dir': '/var/cache/sglang', 'sandbox': [['ProtectSystem', 'strict']],
                 'exposure': {'after': {'score': 2.0, 'level': 'OK'}}, 'environment_names': ['HF_HOME']}},
     DEPLOYED_PLAN,
     {'manager': 'supervisord', 'unit': 'sglang-a', 'files': ['/etc/sglang/config.yaml'], 'boot': True,
      'cache_dir': '/var/cache/sglang', 'sandbox': [['ProtectSystem', 'strict']],
      'exposure': {'after': {'score': 2.0, 'level': 'OK'}}, 'environment_names': ['HF_HOME']}),
    ({'record': {'boot': None, 'cache_dir': None, 'sandbox': None, 'exposure': None, 'environment_names': None}},
     DEPLOYED_PLAN, {}),
    # the exposure the unit had when it was deployed; what was measured before that cutover is not this run's before
    ({'record': {'exposure': {'before': {'score': 9.6, 'level': 'UNSAFE'}, 'after': {'score': 2.0, 'level': 'OK'}}}},
     DEPLOYED_PLAN, {'exposure': {'after': {'score': 2.0, 'level': 'OK'}}}),
    # the command: flags, --config, the interpreter, its venv; the facts' version only for the examined interpreter
    ({'command': ['/opt/venv/bin/python3', '-m', 'sglang.launch_server', '--config', '/etc/sglang/config.yaml',
                  '--nnodes', '2', '--node-rank', '1']}, DEPLOYED_PLAN,
     {'command': ['/opt/venv/bin/python3', '-m', 'sglang.launch_server', '--config', '/etc/sglang/config.yaml',
                  '--nnodes', '2', '--node-rank', '1'],
      'args': {'config': '/etc/sglang/config.yaml', 'nnodes': '2', 'node-rank': '1'}, 'config': '/etc/sglang/config.yaml',
      'python': '/opt/venv/bin/python3', 'venv': '/opt/venv', 'sglang_version': '0.5.23', 'nnodes': 2, 'node_rank': 1}),
    ({'command': ['/other/bin/python3', '-m', 'sglang.launch_server', '--nnodes', 'x']}, DEPLOYED_PLAN,
     {'command': ['/other/bin/python3', '-m', 'sglang.launch_server', '--nnodes', 'x'], 'args': {'nnodes': 'x'},
      'python': '/other/bin/python3', 'venv': '/other', 'nnodes': 0}),
])
def test_service_deployed(manifest, plan, expected):
    assert service_deployed(manifest, plan, DEPLOYED_FACTS, 'sglang') == dict(DEPLOYED_EMPTY, **expected)


# ---- the NCCL port and the replica's interface (issue 28, item 4; plans/service_host.py) ------------------------------

@pytest.mark.parametrize('setting, args, config, expected', [
    ('auto', {'port': 30000}, None, 28000),
    ('auto', {'port': 31000}, None, 29000),
    ('auto', {'port': 8000}, None, 22000),
    (29500, {}, None, 29500),
    (0, {}, None, None),
    ('auto', {'nccl-port': 25001}, None, 25001),            # the user's own, kept
    ('auto', {'config': '/c.yaml'}, 'nccl_port: 25002\n', 25002),
    ('auto', {'dist-init-addr': 'h0:5000', 'nnodes': 2, 'node-rank': 1}, None, None),   # a replica: no NCCL port
])
def test_the_nccl_port_is_pinned_below_the_ephemeral_ports(setting, args, config, expected):
    server_args = dict({'model-path': '/models/m'}, **args)
    seen = {'info': {'config': {'content': config}}} if config else None
    plan = service_plan(inputs(server_args=server_args, nccl_port=setting), facts(), seen)
    assert plan['nccl_port'] == expected
    added = plan['command'][plan['command'].index('--nccl-port') + 1] if '--nccl-port' in plan['command'] else None
    assert added == (str(expected) if expected and 'nccl-port' not in args and not config else
                     str(args['nccl-port']) if 'nccl-port' in args else None)


def test_a_held_nccl_port_is_refused_unless_the_replaced_server_holds_it():
    listener = {'port': 28000, 'proto': 'tcp', 'host': '0.0.0.0', 'pid': 777, 'process': 'redis-server'}
    plan = service_plan(inputs(), facts(listeners=[listener]))
    assert tuple(checks(plan)) == (service_host.CHECK_NCCL_PORT,)
    assert 'NCCL port 28000' in message(plan, service_host.CHECK_NCCL_PORT)
    assert 'redis-server (pid 777)' in message(plan, service_host.CHECK_NCCL_PORT)
    server = {'port': 30000, 'pids': [777, 778], 'main_pid': 777}
    plan = service_plan(inputs(), facts(listeners=[dict(listener, process='python3')], servers=[server]))
    assert plan['problems'] == []


def test_a_held_nccl_port_whose_pid_is_hidden_is_the_replaced_servers_when_it_names_that_port():
    """The secure scenario: the server runs as a service user, root without CAP_SYS_PTRACE sees the socket's uid but
    not its pid; the server's own --nccl-port is its, another user's listener or another port is not."""
    hidden = {'port': 28000, 'proto': 'tcp', 'host': '0.0.0.0', 'pid': None, 'uid': 999}
    server = {'port': 30000, 'pids': [777, 778], 'main_pid': 777, 'uid': 999,
              'args': ['--model-path', '/models/m', '--nccl-port', '28000']}
    assert service_plan(inputs(), facts(listeners=[hidden], servers=[server]))['problems'] == []
    for other in (dict(server, uid=1000), dict(server, args=['--model-path', '/models/m']),
                  dict(server, args=['--nccl-port', '28001'])):
        plan = service_plan(inputs(), facts(listeners=[hidden], servers=[other]))
        assert checks(plan) == [service_host.CHECK_NCCL_PORT], other
        assert 'a process of uid 999 whose pid this run cannot see' in message(plan, service_host.CHECK_NCCL_PORT)


@pytest.mark.parametrize('setting', ['sometimes', -1, 70000, True])
def test_a_bad_nccl_port_setting_is_a_problem(setting):
    plan = service_plan(inputs(nccl_port=setting), facts())
    assert checks(plan) == [service_host.CHECK_NCCL_PORT]
    assert "service_nccl_port must be 'auto' or a port number" in message(plan, service_host.CHECK_NCCL_PORT)


NETWORK = {'hostname': 'gpu-01', 'hostname_addresses': ['127.0.1.1'],
           'interfaces': {'lo': ['127.0.0.1', '::1'], 'ens5': ['10.0.0.11', 'fe80::1'], 'ib0': ['192.168.50.11']}}
REPLICA_HOST = dict(HOST, replica_group_exists=True, replica_hosts=['gpu-00', 'h1'],
                    replica_args={'nnodes': 2, 'node-rank': 1, 'dist-init-addr': '192.168.50.10:5000'})


@pytest.mark.parametrize('address, environment, network, ifname, problem', [
    ('192.168.50.11', {}, NETWORK, 'ib0', False),        # C45: the replica network's interface, not the hostname's
    ('10.0.0.11', {}, NETWORK, 'ens5', False),
    ('gpu-01', {}, dict(NETWORK, hostname_addresses=['127.0.1.1', '10.0.0.11']), 'ens5', False),
    ('gpu-01', {}, NETWORK, '', True),                   # stock /etc/hosts: 127.0.1.1 only, nothing names an interface
    ('gpu-01', {'GLOO_SOCKET_IFNAME': 'ib0', 'NCCL_SOCKET_IFNAME': 'ib0'}, NETWORK, 'ib0', False),
    ('gpu-01', {}, None, '', False),                     # facts without the network (an older host_facts): no guess
])
def test_a_replica_node_names_its_interface_or_is_refused_on_loopback(address, environment, network, ifname, problem):
    plan = service_plan(inputs(replica_group='replica', replica_address=address, environment=environment,
                               host=REPLICA_HOST), facts(network=network))
    assert plan['socket_ifname'] == ifname
    if ifname:
        assert plan['environment']['GLOO_SOCKET_IFNAME'] == ifname and plan['environment']['NCCL_SOCKET_IFNAME'] == ifname
    assert tuple(checks(plan)) == ((service_host.CHECK_SOCKET_IFNAME,) if problem else ())
    if problem:
        assert 'gpu-01 resolves to 127.0.1.1' in message(plan, service_host.CHECK_SOCKET_IFNAME)
    assert '--nccl-port' not in plan['command']


def test_a_single_node_server_gets_no_interface_variables():
    plan = service_plan(inputs(), facts(network=NETWORK))
    assert plan['socket_ifname'] == '' and 'GLOO_SOCKET_IFNAME' not in plan['environment']


# ---- the hand-started server's Hugging Face cache, offline hosts (issue 28, item 5) ----------------------------------

@pytest.mark.parametrize('stray_env, user, expected', [
    ({'HOME': '/x'}, 'sglang', {'HF_HOME': '/x/.cache/huggingface'}),           # HOME moves with the unit: keep the cache
    ({'HOME': '/x', 'XDG_CACHE_HOME': '/data/cache'}, 'sglang', {'HF_HOME': '/data/cache/huggingface'}),
    ({'HOME': '/x', 'HF_HUB_CACHE': '/models/hub'}, 'sglang', {'HF_HUB_CACHE': '/models/hub'}),
    ({'HOME': '/root'}, 'root', {}),                                             # root keeps /root: nothing moves
    ({}, 'root', {}),
])
def test_an_adopted_server_keeps_its_hugging_face_cache(stray_env, user, expected):
    stray = dict(STRAY, user=user, env=dict(stray_env, PATH='/opt/env/bin:/usr/bin'))
    plan = service_plan(inputs(adopt=True, server_args={}), facts(strays=[stray]))
    assert dict((key, value) for key, value in plan['environment'].items() if key.startswith('HF_')) == expected
    if expected:
        assert plan['hub_cache'] == list(expected.values())[0] + ('' if 'HF_HUB_CACHE' in expected else '/hub')


def test_the_users_hub_variable_wins_over_the_adopted_cache():
    stray = dict(STRAY, env={'HOME': '/x', 'PATH': '/usr/bin'})
    plan = service_plan(inputs(adopt=True, server_args={}, environment={'HF_HOME': '/srv/hf'}), facts(strays=[stray]))
    assert plan['environment']['HF_HOME'] == '/srv/hf' and plan['hub_cache'] == '/srv/hf/hub'


@pytest.mark.parametrize('environment, refused', [
    ({'HF_HUB_OFFLINE': '1'}, True), ({'TRANSFORMERS_OFFLINE': 'true'}, True), ({}, False), ({'HF_HUB_OFFLINE': '0'}, False),
])
def test_an_offline_server_whose_model_is_not_in_its_cache_is_refused(environment, refused):
    seen = {'info': {'model_configs': [{'ref': 'moonshotai/Kimi-K2.5', 'path': None, 'config': None, 'note': (
        'moonshotai/Kimi-K2.5 is no directory on this host and not in the Hugging Face cache /root/.cache/huggingface/hub: '
        'its config.json was not checked')}]}}
    plan = service_plan(inputs(server_args={'model-path': 'moonshotai/Kimi-K2.5'}, environment=environment), facts(), seen)
    assert (service_host.CHECK_OFFLINE_MODEL in checks(plan)) is refused
    if refused:
        assert 'moonshotai/Kimi-K2.5 is not in the Hugging Face cache' in message(plan, service_host.CHECK_OFFLINE_MODEL)
    assert tuple(checks(plan)) in ((), (service_host.CHECK_OFFLINE_MODEL,))


@pytest.mark.parametrize('stray, environment, expected_base, expected_writes', [
    # a root server started by hand keeps /root (FlashInfer's default base); the unit writes /root/.cache already
    ({'user': 'root', 'env': {'PATH': '/usr/bin'}}, {}, '/root', []),
    ({'user': 'root', 'env': {'PATH': '/usr/bin', 'HOME': '/root'}}, {}, '/root', []),
    # a service user's server with its own HOME: its hub cache and FlashInfer's stay there, and the sandbox writes them
    ({'user': 'sglang', 'env': {'PATH': '/usr/bin', 'HOME': '/x'}}, {}, '/x',
     ['-/x/.cache/huggingface/hub', '-/x/.cache/flashinfer']),
    # the user's own base wins; a base the hand-started server named is adopted as it was
    ({'user': 'root', 'env': {'PATH': '/usr/bin'}}, {'FLASHINFER_WORKSPACE_BASE': '/srv/fi'}, '/srv/fi', []),
    ({'user': 'root', 'env': {'PATH': '/usr/bin', 'FLASHINFER_WORKSPACE_BASE': '/data/fi'}}, {}, '/data/fi', []),
    # a masked or unknown HOME of another user moves nothing
    ({'user': 'sglang', 'env': {'PATH': '/usr/bin', 'HOME': '********'}}, {}, '/var/cache/sglang/flashinfer', []),
])
def test_an_adopted_server_keeps_its_flashinfer_cache(stray, environment, expected_base, expected_writes):
    """Issue 28, item 5: FlashInfer's cubins and compiled kernels live under FLASHINFER_WORKSPACE_BASE (default HOME,
    flashinfer/jit/env.py); the collection's cache directory would move them away from an adopted server."""
    stray = dict(STRAY, **stray)
    plan = service_plan(inputs(adopt=True, server_args={}, environment=environment, cache_dir='/var/cache/sglang'),
                        facts(strays=[stray]))
    assert plan['environment']['FLASHINFER_WORKSPACE_BASE'] == expected_base
    assert plan['cache_write_paths'] == expected_writes
    assert all(path in plan['write_paths'] for path in expected_writes)
    assert plan['problems'] == []


def test_a_server_the_role_starts_anew_gets_the_collections_flashinfer_cache():
    plan = service_plan(inputs(cache_dir='/var/cache/sglang'), facts())
    assert plan['environment']['FLASHINFER_WORKSPACE_BASE'] == '/var/cache/sglang/flashinfer'
    assert plan['cache_write_paths'] == []


@pytest.mark.parametrize('init, manager_files', [
    ({'system': 'systemd'}, ['/etc/systemd/system/sglang.service']),
    ({'system': 'other', 'cron': {}}, ['/etc/sglang/sglang-run.sh', '/etc/inferops-sglang/supervisor.d/sglang.conf']),
])
def test_rendered_paths_are_every_path_the_role_renders(init, manager_files):
    """The pre-flight reads these (filter rendered_current): the directories, the environment file, the logging
    configuration and its two modules, the secret --config file, then the service manager's files."""
    plan = service_plan(inputs(cache_dir='/var/cache/sglang'), facts(init=init))
    paths = plan['rendered_paths']
    assert paths[:3] == ['/var/cache/sglang', '/etc/sglang', plan['log_module_dir']]
    assert paths[3:5] == ['/etc/sglang/sglang.env', plan['log_config_file']]
    assert paths[5:7] == [plan['log_module_dir'] + '/inferops_sglang_log.py', plan['log_module_dir'] + '/inferops_sglang_secrets.py']
    assert paths[-len(manager_files):] == manager_files == [entry['src'] for entry in plan['files']]
    assert service_plan(inputs(cache_dir=''), facts(init=init))['rendered_paths'][0] == '/etc/sglang'


# ---- the command-line check's memo, found by the pre-flight's host read (issue 26) -----------------------------------

def _memo_seen(plan, result=None, **change):
    """What service_preflight_info returns for a lookup of the check ``plan`` asks (``change`` alters what was asked)."""
    from ansible_collections.inferops.sglang.plugins.module_utils import _args_check_cache
    asked = dict(python=plan['command'][0], args=plan['argv_args'], env_names=plan['sglang_env_names'])
    asked.update(change)
    verdict = {'checked': True, 'valid': True, 'sglang_version': '0.5.10', 'env_names_unread': [], 'cached': True}
    return {'info': {'args_check': {'request': _args_check_cache.request_digest(asked['python'], asked['args'],
                                                                                asked['env_names']),
                                    'result': verdict if result is None else result}}}


def test_a_memo_of_the_same_check_counts_as_the_check():
    plan = service_plan(inputs(), facts())
    assert plan['args_memo'] == {}
    found = service_plan(inputs(), facts(), _memo_seen(plan))
    assert found['args_memo']['valid'] is True and found['args_memo']['cached'] is True
    assert found['command'] == plan['command'] and found['environment'] == plan['environment']


@pytest.mark.parametrize('change', [{'args': ['--port', '31000']}, {'python': '/other/bin/python3'},
                                    {'env_names': ['SGLANG_X']}], ids=['args', 'python', 'env_names'])
def test_a_memo_of_another_check_is_not_used(change):
    plan = service_plan(inputs(), facts())
    assert service_plan(inputs(), facts(), _memo_seen(plan, **change))['args_memo'] == {}


@pytest.mark.parametrize('result', [None, {}, {'cached': False, 'valid': True}, 'text'], ids=['none', 'empty', 'run', 'text'])
def test_no_verdict_no_memo(result):
    plan = service_plan(inputs(), facts())
    seen = _memo_seen(plan)
    seen['info']['args_check']['result'] = result
    assert service_plan(inputs(), facts(), seen)['args_memo'] == {}
    assert service_plan(inputs(), facts(), {'info': {'skipped': True}})['args_memo'] == {}


def test_a_check_that_ran_wins_over_the_memo():
    plan = service_plan(inputs(), facts())
    seen = dict(_memo_seen(plan), args_checked={'checked': True, 'valid': True, 'env_names_unread': []})
    assert service_plan(inputs(), facts(), seen)['args_memo'] == {}
    skipped = dict(_memo_seen(plan), args_checked={'skipped': True})
    assert service_plan(inputs(), facts(), skipped)['args_memo']['cached'] is True


def test_a_memo_of_a_managed_version_leaves_out_the_names_it_does_not_read_as_the_check_would():
    env = {'SGLANG_OLD': '1', 'SGLANG_NEW': '1'}
    role = inputs(environment=env, sglang_version='sglang==0.5.10')
    plan = service_plan(role, facts())
    assert plan['sglang_env_names'] == ['SGLANG_OLD', 'SGLANG_NEW']
    verdict = {'checked': True, 'valid': True, 'env_names_unread': ['SGLANG_OLD'], 'cached': True}
    found = service_plan(role, facts(), _memo_seen(plan, result=verdict))
    checked = service_plan(role, facts(), {'args_checked': verdict})
    assert found['args_memo'] == verdict
    assert found['environment'] == checked['environment'] and 'SGLANG_OLD' not in found['environment']
    assert found['env_unread'] == ['SGLANG_OLD'] and found['sglang_env_names'] == checked['sglang_env_names']


def test_a_version_this_run_installs_is_not_taken_from_the_memo():
    """The venv read may be an older install of the wanted version (changed requirements): its own parser checks
    after the install, so the memo of the old one does not count (its unread names would shape the environment)."""
    env = {'SGLANG_OLD': '1'}
    role = inputs(environment=env, sglang_version='sglang==0.5.10')
    plan = service_plan(role, facts())
    verdict = {'checked': True, 'valid': True, 'env_names_unread': ['SGLANG_OLD'], 'cached': True}
    seen = dict(_memo_seen(plan, result=verdict), sglang_venv={'changed': True})
    found = service_plan(role, facts(), seen)
    assert found['sglang_installs'] is True and found['args_memo'] == {}
    assert found['env_unread'] == [] and found['environment']['SGLANG_OLD'] == '1'


# ---- what the change steps saw (filter service_steps) -----------------------------------------------------------------

EXPOSED = 'Overall exposure level for sglang.service: 9.6 UNSAFE\n'
CONFINED = 'Overall exposure level for sglang.service: 4.2 OK\n'
SKIPPED = {'skipped': True, 'changed': False}


def test_a_converged_host_publishes_the_exposure_its_read_measured_and_no_change():
    from ansible_collections.inferops.sglang.plugins.module_utils._plans.service_files import service_steps
    steps = service_steps('systemd', SKIPPED, SKIPPED, SKIPPED, {'exposure': CONFINED, 'enabled': True})
    assert steps == {'exposure': {'before': {'score': 4.2, 'level': 'OK'}, 'after': {'score': 4.2, 'level': 'OK'}},
                     'changed': False, 'unit_status': {}}
    # The same as the unit's write returns when nothing changed (the call the skip saves).
    written = {'files_changed': False, 'exposure': {'before': CONFINED, 'after': None}}
    assert service_steps('systemd', SKIPPED, SKIPPED, written, {}) == steps
    assert service_steps('systemd', SKIPPED, SKIPPED, SKIPPED, {})['exposure'] == {'before': None, 'after': None}


@pytest.mark.parametrize('env,config,unit,changed', [
    ({'files_changed': True}, SKIPPED, SKIPPED, True),
    ({'files_changed': False, 'changed': True}, SKIPPED, SKIPPED, False),  # a directory handed over: no file changed
    (SKIPPED, {'changed': True}, SKIPPED, True),
    (SKIPPED, SKIPPED, {'files_changed': True, 'exposure': {'before': EXPOSED, 'after': CONFINED}}, True),
    (None, None, None, False)])
def test_changed_is_a_file_the_server_reads(env, config, unit, changed):
    from ansible_collections.inferops.sglang.plugins.module_utils._plans.service_files import service_steps
    assert service_steps('systemd', env, config, unit, {'exposure': ''})['changed'] is changed


def test_a_new_unit_is_measured_before_and_after_and_supervisord_has_no_exposure():
    from ansible_collections.inferops.sglang.plugins.module_utils._plans.service_files import service_steps
    unit = {'files_changed': True, 'exposure': {'before': EXPOSED, 'after': CONFINED}}
    assert service_steps('systemd', SKIPPED, SKIPPED, unit, {})['exposure'] == {
        'before': {'score': 9.6, 'level': 'UNSAFE'}, 'after': {'score': 4.2, 'level': 'OK'}}
    checked = {'files_changed': True, 'exposure': {'before': EXPOSED, 'after': None}}  # check mode: not written
    assert service_steps('systemd', SKIPPED, SKIPPED, checked, {})['exposure']['after'] is None
    program = {'files_changed': True}
    assert service_steps('supervisord', SKIPPED, SKIPPED, program, {}) == {'exposure': {}, 'changed': True, 'unit_status': {}}


STATUS = {'LoadState': 'loaded', 'ActiveState': 'active', 'SubState': 'running', 'MainPID': '4242', 'NRestarts': '0'}


def test_a_converged_host_hands_the_status_its_read_found_to_the_cutover():
    """unit_status: the pre-flight read's status stands where nothing was written or installed since (the cutover then
    reads none)."""
    from ansible_collections.inferops.sglang.plugins.module_utils._plans.service_files import service_steps
    read = {'exposure': CONFINED, 'enabled': True, 'status': STATUS}
    assert service_steps('systemd', SKIPPED, SKIPPED, SKIPPED, read, False, 1.4)['unit_status'] == STATUS
    assert service_steps('systemd', SKIPPED, SKIPPED, SKIPPED, read, False, '9.9')['unit_status'] == STATUS
    # The secret --config file's template runs every time: unchanged, it hands nothing to systemd.
    assert service_steps('systemd', SKIPPED, {'changed': False}, SKIPPED, read, False, 1)['unit_status'] == STATUS
    # A directory handed over changes no file the server reads.
    assert service_steps('systemd', {'files_changed': False, 'changed': True}, SKIPPED, SKIPPED, read, False, 1)['unit_status'] == STATUS


@pytest.mark.parametrize('age', [10.5, 300, None, 'soon', -1, 10 ** 400, float('nan')])
def test_a_status_read_too_long_ago_or_at_an_unknown_time_is_read_again(age):
    """A batch that waited for another host's install (or a parser check importing torch) is past STATUS_MAX_AGE_S:
    systemd may have acted meanwhile (Restart=, the OOM killer), so the cutover reads the unit itself."""
    from ansible_collections.inferops.sglang.plugins.module_utils._plans.service_files import service_steps
    read = {'exposure': CONFINED, 'enabled': True, 'status': STATUS}
    assert service_steps('systemd', SKIPPED, SKIPPED, SKIPPED, read, False, age)['unit_status'] == {}


@pytest.mark.parametrize('env,config,unit,installed', [
    ({'files_changed': True}, SKIPPED, SKIPPED, False),         # the environment file changed
    (SKIPPED, {'changed': True}, SKIPPED, False),               # the --config file changed
    (SKIPPED, SKIPPED, {'files_changed': False, 'exposure': {'before': CONFINED, 'after': None}}, False),  # written (enabled)
    (SKIPPED, SKIPPED, {'files_changed': True, 'exposure': {'before': CONFINED, 'after': CONFINED}}, False),
    (SKIPPED, SKIPPED, SKIPPED, True)])                         # a new SGLang venv: minutes may have passed
def test_the_cutover_reads_the_status_itself_after_any_step_that_ran(env, config, unit, installed):
    from ansible_collections.inferops.sglang.plugins.module_utils._plans.service_files import service_steps
    read = {'exposure': CONFINED, 'enabled': True, 'status': STATUS}
    assert service_steps('systemd', env, config, unit, read, installed, 1)['unit_status'] == {}


def test_no_status_under_supervisord_or_from_a_read_without_one():
    from ansible_collections.inferops.sglang.plugins.module_utils._plans.service_files import service_steps
    read = {'exposure': CONFINED, 'enabled': True, 'status': STATUS}
    assert service_steps('supervisord', SKIPPED, SKIPPED, SKIPPED, read, False, 1)['unit_status'] == {}
    assert service_steps('systemd', SKIPPED, SKIPPED, SKIPPED, {'exposure': CONFINED}, False, 1)['unit_status'] == {}
    assert service_steps('systemd', SKIPPED, SKIPPED, SKIPPED, {'status': 'active'}, False, 1)['unit_status'] == {}


def test_a_unit_read_that_is_no_mapping_counts_as_not_read():
    from ansible_collections.inferops.sglang.plugins.module_utils._plans.service_files import service_steps
    assert service_steps('systemd', SKIPPED, SKIPPED, SKIPPED, 'oops')['exposure'] == {'before': None, 'after': None}


MIG_GPUS = {'gpus': [{'index': i, 'mig_mode': 'Enabled'} for i in range(8)], 'gpu_count': 8}


@pytest.mark.parametrize('server_args, topology_defaults, noted', [
    ({}, True, True),
    ({'tp-size': 1}, True, False),           # set by the user: nothing to explain
    ({}, False, False),                      # no topology defaults: none was to be derived
])
def test_the_notes_say_why_no_tp_size_was_derived_from_the_gpu_count(server_args, topology_defaults, noted):
    plan = service_plan(inputs(server_args=dict(server_args, **{'model-path': '/models/m'}), topology_defaults=topology_defaults),
                        facts(**MIG_GPUS), MODEL_SEEN)
    note = ("No tp-size was added from the 8 GPU(s) seen: 8 of 8 GPUs are in MIG mode. The server runs with tp 1 "
            "(SGLang's default).")
    assert (note in plan['model_notes']) is noted, plan['model_notes']
    assert plan['tp_unusable'] == '8 of 8 GPUs are in MIG mode'


def test_the_run_notes_show_each_stray_against_the_unit_and_what_was_left_out():
    stray = dict(STRAY, args=['--model-path', '/models/m', '--port', '30000', '--mem-fraction-static', '0.7'],
                 argv=STRAY['argv'] + ['--mem-fraction-static', '0.7'])
    plan = service_plan(inputs(adopt=False), facts(strays=[stray]))
    note = plan['run_notes'][0]
    assert note['server'] == 'pid 4242 on port 30000' and note['argv'] == ' '.join(stray['argv'])
    assert note['unit'] == ' '.join(plan['command']) and note['same_interpreter'] is (plan['command'][0] == '/opt/env/bin/python3')
    assert note['difference']['removed'].get('mem-fraction-static') == '0.7', note['difference']
    assert service_plan(inputs(), facts())['run_notes'] == []


def test_the_run_notes_name_masked_and_unread_variables():
    from ansible_collections.inferops.sglang.plugins.module_utils._plans.service_host import run_notes
    plan = {'command': ['/v/bin/python3'], 'args_map': {}, 'masked_names': ['HF_TOKEN'], 'env_unread': ['SGLANG_X', 'SGLANG_Y'],
            'sglang': {'version': '0.5.23', 'venv': '/opt/sglang/venvs/0.5.23'}}
    notes = run_notes({'env_file': '/etc/sglang/sglang.env'}, plan, {})
    assert notes[0].startswith("The hand-started server's environment holds HF_TOKEN, which look like secrets")
    assert notes[1] == ('SGLANG_X, SGLANG_Y are left out of /etc/sglang/sglang.env: SGLang 0.5.23 does not read them (no source '
                        'of its sglang package in /opt/sglang/venvs/0.5.23 mentions them).')
    one = run_notes({'env_file': '/e'}, dict(plan, masked_names=[], env_unread=['SGLANG_X']), {})
    assert one == ['SGLANG_X is left out of /e: SGLang 0.5.23 does not read it (no source of its sglang package in '
                   '/opt/sglang/venvs/0.5.23 mentions it).']
