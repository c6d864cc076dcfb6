# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of the rules filters (plugins/filter/rules.py): the contracts the roles rely on."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

import pytest
import yaml

from ansible.errors import AnsibleFilterError
from ansible_collections.inferops.sglang.plugins.filter.rules import FilterModule

FILTERS = FilterModule().filters()
HERE = os.path.dirname(os.path.abspath(__file__))
FILTER_DIR = os.path.join(HERE, '..', '..', '..', '..', 'plugins', 'filter')


def test_every_filter_has_its_documentation():
    for name in FILTERS:
        with open(os.path.join(FILTER_DIR, name + '.yml')) as handle:
            doc = yaml.safe_load(handle)
        assert doc['DOCUMENTATION']['name'] == name
        assert doc['RETURN']['_value']['description'] and doc['EXAMPLES'].strip()


# ---- secret_flags / redact_args -------------------------------------------------------------------

@pytest.mark.parametrize('args, expected', [
    ({'model-path': '/m', 'api-key': 'k', 'admin_api_key': 'a', 'max-total-tokens': 8192, 'tokenizer-path': '/t',
      'tokenizer-mode': 'auto', 'ssl-keyfile': '/k.pem', 'ssl-keyfile-password': 'p'},
     ['admin-api-key', 'api-key', 'ssl-keyfile-password']),
    ({'--control-plane-api-keys': ['a'], 'oracle-password': 'p', 'postgres-db-url': 'postgres://u:p@h/d',
      'redis-url': 'redis://:p@h', 'policy': 'cache_aware', 'host': '0.0.0.0'},
     ['control-plane-api-keys', 'oracle-password', 'postgres-db-url', 'redis-url']),
    ({'hf-token': 'x', 'speculative-token-map': '/m.pt'}, ['hf-token']),
    (['--model-path', '/m', '--api-key', 'k', '--tp', 8], ['api-key']),
    ({}, []),
])
def test_secret_flags(args, expected):
    assert FILTERS['secret_flags'](args) == expected


def test_secret_flags_refuses_text():
    with pytest.raises(AnsibleFilterError, match='secret_flags'):
        FILTERS['secret_flags']('api-key')


def test_redact_args():
    args = {'api-key': 'sk-1', 'max-total-tokens': 8192, 'redis_url': 'redis://:p@h'}
    assert FILTERS['redact_args'](args) == {'api-key': '********', 'max-total-tokens': 8192, 'redis_url': '********'}
    with pytest.raises(AnsibleFilterError, match='redact_args'):
        FILTERS['redact_args'](['--api-key', 'x'])


def test_redact_env():
    env = {'HF_TOKEN': 'hf_x', 'db_password': 'p', 'NCCL_PROTO': 'LL', 'PATH': '/usr/bin'}
    assert FILTERS['redact_env'](env) == {'HF_TOKEN': '********', 'db_password': '********', 'NCCL_PROTO': 'LL',
                                          'PATH': '/usr/bin'}
    assert env['HF_TOKEN'] == 'hf_x'
    with pytest.raises(AnsibleFilterError, match='redact_env'):
        FILTERS['redact_env'](['HF_TOKEN=x'])


def test_secret_env_names():
    env = {'HF_TOKEN': 'hf_x', 'HTTPS_PROXY': 'http://u:pw@proxy:3128', 'NCCL_PROTO': 'LL', 'http_proxy': 'http://p:3128'}
    assert FILTERS['secret_env_names'](env) == ['HF_TOKEN', 'HTTPS_PROXY']
    with pytest.raises(AnsibleFilterError, match='secret_env_names'):
        FILTERS['secret_env_names'](['HF_TOKEN=x'])


def test_masking_filters_hide_url_passwords_and_abbreviations():
    args = {'model-path': '/models/m', 'api': 'KEY123', 'otlp-traces-endpoint': 'http://u:PASS@otel.example:4317'}
    assert FILTERS['secret_flags'](args) == ['api', 'otlp-traces-endpoint']
    shown = FILTERS['redact_args'](args)
    assert shown == {'model-path': '/models/m', 'api': '********',
                     'otlp-traces-endpoint': 'http://u:********@otel.example:4317'}


# ---- gpus_needed ----------------------------------------------------------------------------------

@pytest.mark.parametrize('args, gpus', [
    ({}, 1),
    ({'tp': 8}, 8),
    ({'tp-size': '4'}, 4),
    ({'tensor-parallel-size': 2}, 2),
    ({'tensor_parallel_size': 2, 'pp-size': 2}, 4),
    ({'tp': 2, 'pipeline-parallel-size': 2, 'dp': 2}, 8),
    ({'tp': 2, 'data-parallel-size': 4}, 8),
    ({'tp-size': 8, 'dp-size': 8, 'enable-dp-attention': True}, 8),
    ({'tp-size': 8, 'dp-size': 8, 'enable-dp-attention': False}, 64),
    ({'tp': 16, 'nnodes': 2}, 8),
    ({'--tp': '16', '--nnodes': '2', '--pp-size': '2'}, 16),
    (['--model-path', '/m', '--tensor-parallel-size', '4', '--dp', '2'], 8),
    (['--tp', '8', '--dp', '8', '--enable-dp-attention'], 8),
    (['--tp=4', '--tp', '2'], 2),
])
def test_gpus_needed(args, gpus):
    assert FILTERS['gpus_needed'](args) == gpus


@pytest.mark.parametrize('args', [{'tp': 'x'}, {'tp': 0}, {'nnodes': 0}, 'tp'])
def test_gpus_needed_refuses(args):
    with pytest.raises(AnsibleFilterError, match='gpus_needed'):
        FILTERS['gpus_needed'](args)


# ---- server_settings ------------------------------------------------------------------------------

@pytest.mark.parametrize('args, expected', [
    ({}, {'host': '127.0.0.1', 'port': 30000, 'tp': 1, 'dp': 1, 'pp': 1}),
    ({'host': '0.0.0.0', 'port': 30001, 'tensor-parallel-size': 8, 'data_parallel_size': '2', 'pp': 2},
     {'host': '0.0.0.0', 'port': 30001, 'tp': 8, 'dp': 2, 'pp': 2}),
    ({'--port': '31000', 'tp-size': 4, 'model-path': '/m'}, {'host': '127.0.0.1', 'port': 31000, 'tp': 4, 'dp': 1, 'pp': 1}),
    (['--model-path', '/m', '--port=30002', '--dp-size', '2'], {'host': '127.0.0.1', 'port': 30002, 'tp': 1, 'dp': 2, 'pp': 1}),
])
def test_server_settings(args, expected):
    assert FILTERS['server_settings'](args) == expected


@pytest.mark.parametrize('args', [{'port': 'http'}, {'tp': 'x'}, 30000])
def test_server_settings_refuses(args):
    with pytest.raises(AnsibleFilterError, match='server_settings'):
        FILTERS['server_settings'](args)


# ---- service_active -------------------------------------------------------------------------------

@pytest.mark.parametrize('state, manager, active', [
    ('active', 'systemd', True), ('activating', 'systemd', True), ('reloading', 'systemd', True),
    ('failed', 'systemd', False), ('inactive', 'systemd', False),
    ('RUNNING', 'supervisord', True), ('STARTING', 'supervisord', True), ('FATAL', 'supervisord', False),
    ('BACKOFF', 'supervisord', False),
])
def test_service_active(state, manager, active):
    assert FILTERS['service_active'](state, manager) is active


def test_service_active_unknown_manager():
    with pytest.raises(AnsibleFilterError, match='service_active'):
        FILTERS['service_active']('active', 'runit')


# ---- gpu_blockers / tp_unusable_reason / settings from a --config file ------------------------------

def test_c14_filters_take_the_config_file_text():
    """C14: the filters the service role uses read the --config file's settings too."""
    args = {'model-path': '/models/m', 'config': '/etc/sglang/server.yaml'}
    text = 'host: 0.0.0.0\nport: 8000\ntp-size: 4\n'
    assert FILTERS['server_settings'](args, text)['port'] == 8000
    assert FILTERS['gpus_needed'](args, text) == 4
    assert FILTERS['server_settings'](args, None)['port'] == 30000


def test_c18_gpu_blockers_filter():
    """C18: the filter is the rule of _nvidia_smi.gpu_blockers; bad input is a filter error."""
    facts = {'gpus': [], 'gpu_count': 0, 'lost_gpus': [],
             'gpu_error': {'kind': 'driver_library_mismatch', 'message': 'Failed to initialize NVML: Driver/library version mismatch',
                           'rc': 18, 'nvml_library_version': '570.195', 'kernel_module_version': '570.172.08'}}
    blockers = FILTERS['gpu_blockers'](facts, 1, False, 'service_require_gpus')
    assert [b['kind'] for b in blockers] == ['driver_library_mismatch']
    assert FILTERS['tp_unusable_reason'](facts).startswith('nvidia-smi fails')
    assert FILTERS['tp_unusable_reason']({'gpus': [], 'gpu_count': 0}) == ''
    with pytest.raises(AnsibleFilterError, match='gpu_blockers'):
        FILTERS['gpu_blockers']('facts', 1)


def test_sglang_requirement_filter():
    """Issue 15: the role reads the wanted SGLang (its venv, interpreter, or the pre-flight's problem) from one rule."""
    got = FILTERS['sglang_requirement']('sglang==0.5.10', '/opt/sglang/venvs')
    assert got['venv'] == '/opt/sglang/venvs/0.5.10' and got['python'] == '/opt/sglang/venvs/0.5.10/bin/python3'
    assert FILTERS['sglang_requirement']('sglang>=0.5.10', '/opt/sglang/venvs')['problem']


def test_redact_argv():
    argv = ['--model-path', '/m', '--api', 'k1', '--otlp-traces-endpoint', 'http://u:p@otel:4317']
    assert FILTERS['redact_argv'](argv) == ['--model-path', '/m', '--api', '********', '--otlp-traces-endpoint',
                                            'http://u:********@otel:4317']
    with pytest.raises(AnsibleFilterError, match='redact_argv'):
        FILTERS['redact_argv']('--api-key x')
