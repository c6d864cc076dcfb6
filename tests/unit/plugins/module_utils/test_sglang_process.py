# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of the private module_utils _sglang_process.

Pure functions are tested with parametrize tables (every decoy of the brief is in the classification
table). Discovery is tested against fake /proc trees written to a temporary directory and read by the
real ProcFS reader. The stop engine and the release waits are tested with real, short-lived child
processes of this test (a few hundred milliseconds each).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import _sglang_process as sp


# ------------------------------------------------------------------------------------------------
# parse_python_argv / classify_argv
# ------------------------------------------------------------------------------------------------

PY = '/root/ml-env/bin/python3'


@pytest.mark.parametrize('argv, expected', [
    ([PY, '-m', 'sglang.launch_server', '--tp', '8'], {'module': 'sglang.launch_server', 'args': ['--tp', '8']}),
    ([PY, '-msglang.launch_server', '--port=1'], {'module': 'sglang.launch_server', 'args': ['--port=1']}),
    ([PY, '-u', '-X', 'faulthandler', '-W', 'ignore', '-m', 'x.y'], {'module': 'x.y', 'args': []}),
    ([PY, '-uBm', 'x.y', 'a'], {'module': 'x.y', 'args': ['a']}),
    ([PY, '-Wignore', '-m', 'x.y'], {'module': 'x.y', 'args': []}),
    ([PY, '--check-hash-based-pycs', 'never', '-m', 'x'], {'module': 'x', 'args': []}),
    ([PY, '-c', 'import time; time.sleep(60)', 'launch_server.py'],
     {'code': 'import time; time.sleep(60)', 'args': ['launch_server.py'], 'module': None, 'script': None}),
    ([PY, '-Ec', 'pass', '-m', 'sglang.launch_server'], {'code': 'pass', 'module': None}),
    ([PY, '/venv/bin/sglang', 'serve', '--tp', '2'], {'script': '/venv/bin/sglang', 'args': ['serve', '--tp', '2']}),
    ([PY, '-s', '--', '-script.py', 'x'], {'script': '-script.py', 'args': ['x']}),
    ([PY, '-', 'a'], {'script': '-', 'args': ['a']}),
    ([PY], {'module': None, 'script': None, 'code': None, 'args': []}),
    ([PY, '-m'], {'module': None}),
    (['python3.12', '-m', 'm'], {'module': 'm'}),
    (['/usr/bin/python3.13t', '-m', 'm'], {'module': 'm'}),
    (['pypy3', '-m', 'm'], {'module': 'm'}),
])
def test_parse_python_argv(argv, expected):
    parsed = sp.parse_python_argv(argv)
    assert parsed is not None
    for key, value in expected.items():
        assert parsed[key] == value, key


@pytest.mark.parametrize('argv', [
    [], ['bash', '-c', 'python -m x'], ['/usr/bin/vim', 'launch_server.py'], ['python-config'],
    ['pythonista'], ['sglang::scheduler_TP0'],
])
def test_parse_python_argv_not_python(argv):
    assert sp.parse_python_argv(argv) is None


CLASSIFY_TABLE = [
    # id, argv, kind, module, args
    ('launch_server', [PY, '-m', 'sglang.launch_server', '--model-path', '/m', '--tp', '8'],
     sp.SERVER, 'sglang.launch_server', ['--model-path', '/m', '--tp', '8']),
    ('launch_server_python_opts', ['python3', '-u', '-X', 'dev', '-m', 'sglang.launch_server'],
     sp.SERVER, 'sglang.launch_server', []),
    ('launch_server_attached', ['python', '-msglang.launch_server', '--port=30001'],
     sp.SERVER, 'sglang.launch_server', ['--port=30001']),
    ('sglang_serve_console_script', ['/venv/bin/python3', '/venv/bin/sglang', 'serve', '--model-path', '/m'],
     sp.SERVER, 'sglang serve', ['--model-path', '/m']),
    ('sglang_serve_binary', ['/venv/bin/sglang', 'serve', '/m'], sp.SERVER, 'sglang serve', ['/m']),
    ('sglang_cli_main_serve', ['python3', '-m', 'sglang.cli.main', 'serve', '--tp', '2'],
     sp.SERVER, 'sglang serve', ['--tp', '2']),
    ('launch_server_script', ['python3', '/src/sglang/python/sglang/launch_server.py', '--tp', '2'],
     sp.SERVER, 'sglang.launch_server', ['--tp', '2']),
    ('srt_module_candidate', ['python3', '-m', 'sglang.srt.entrypoints.http_server', '--port', '1'],
     sp.CANDIDATE, 'sglang.srt.entrypoints.http_server', ['--port', '1']),
    ('data_parallel_candidate', ['python3', '-m', 'sglang.data_parallel_server'],
     sp.CANDIDATE, 'sglang.data_parallel_server', []),
    ('scheduler_title', ['sglang::scheduler_TP0'], sp.TITLED, None, []),
    ('dp_scheduler_title', ['sglang::scheduler_DP1_TP1_EP1'], sp.TITLED, None, []),
    ('detokenizer_title', ['sglang::detokenizer'], sp.TITLED, None, []),
    ('controller_title', ['sglang::data_parallel_controller'], sp.TITLED, None, []),
    ('tokenizer_worker_title', ['sglang::tokenizer_worker:1234'], sp.TITLED, None, []),
    ('diffusion_title', ['sgl_diffusion::scheduler_0'], sp.TITLED, None, []),
    # Decoys: never a server.
    ('router_title', ['sglang::router'], sp.ROUTER, None, []),
    ('router_title_exec_a', ['sglang::router', '60'], sp.ROUTER, None, []),
    ('router_module', ['python3', '-m', 'sglang_router.launch_router', '--worker-urls', 'x'],
     sp.ROUTER, 'sglang_router.launch_router', ['--worker-urls', 'x']),
    ('pd_launch_lb', ['python3', '-m', 'sglang.srt.disaggregation.launch_lb', '--port', '8000'],
     sp.ROUTER, 'sglang.srt.disaggregation.launch_lb', ['--port', '8000']),
    ('pd_mini_lb', ['python3', '-m', 'sglang.srt.disaggregation.mini_lb'],
     sp.ROUTER, 'sglang.srt.disaggregation.mini_lb', []),
    ('bench_serving', ['python3', '-m', 'sglang.bench_serving', '--port', '30000'],
     sp.CLIENT, 'sglang.bench_serving', ['--port', '30000']),
    ('bench_one_batch_server', ['python3', '-m', 'sglang.bench_one_batch_server', '--model-path', '/m'],
     sp.CLIENT, 'sglang.bench_one_batch_server', ['--model-path', '/m']),
    ('bench_offline', ['python3', '-m', 'sglang.bench_offline_throughput'], sp.CLIENT,
     'sglang.bench_offline_throughput', []),
    ('sglang_test', ['python3', '-m', 'sglang.test.run_eval'], sp.CLIENT, 'sglang.test.run_eval', []),
    ('check_env', ['python3', '-m', 'sglang.check_env'], sp.TOOL, 'sglang.check_env', []),
    ('sglang_version', ['/venv/bin/python3', '/venv/bin/sglang', 'version'], sp.TOOL, 'sglang', ['version']),
    ('grep', ['grep', 'sglang.launch_server'], sp.MENTION, None, []),
    ('pgrep', ['pgrep', '-f', 'sglang::'], sp.MENTION, None, []),
    ('vim', ['vim', '/src/sglang/python/sglang/launch_server.py'], sp.MENTION, None, []),
    ('tail', ['tail', '-f', 'sglang.log'], sp.MENTION, None, []),
    ('python_c_decoy', ['python3', '-c', 'import time; time.sleep(60)', 'launch_server.py'], sp.MENTION, None, []),
    ('python_c_mentions_module', ['python3', '-c', 'import os; os.system("python -m sglang.launch_server")'],
     sp.MENTION, None, []),
    ('pip_install', ['/venv/bin/python3', '/venv/bin/pip', 'install', 'sglang'], sp.MENTION, None, []),
    ('python_m_pip', ['python3', '-m', 'pip', 'install', 'sglang[all]'], sp.MENTION, None, []),
    ('pip_binary', ['pip', 'install', 'sglang'], sp.MENTION, None, []),
    ('bash_c_wrapper', ['bash', '-c', 'python -m sglang.launch_server --tp 2 > sglang.log 2>&1'],
     sp.MENTION, None, []),
    ('sh_c_wrapper', ['/bin/sh', '-c', 'exec python3 -m sglang.launch_server'], sp.MENTION, None, []),
    ('nohup_not_execd_yet', ['nohup', 'python3', '-m', 'sglang.launch_server'], sp.MENTION, None, []),
    ('unrelated_python_script', ['python3', '/opt/app/serve.py', '--model', 'sglang'], sp.MENTION, None, []),
    ('ansible_adhoc', ['/venv/bin/python3', '/venv/bin/ansible', 'localhost', '-m', 'inferops.sglang.server_process'],
     sp.MENTION, None, []),
    ('spawn_child', ['python3', '-c', 'from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=5, '
                     'pipe_handle=7)', '--multiprocessing-fork'], sp.MENTION, None, []),
    ('unrelated', ['sleep', '60'], None, None, []),
]


@pytest.mark.parametrize('case, argv, kind, module, args', CLASSIFY_TABLE, ids=[row[0] for row in CLASSIFY_TABLE])
def test_classify_argv(case, argv, kind, module, args):
    c = sp.classify_argv(argv)
    if case == 'unrelated':
        # Only processes whose command line mentions sgl are classified by discovery; anything else
        # with no sglang module reads as a mention (harmless) - never as a server.
        assert c.kind != sp.SERVER
        return
    assert c.kind == kind
    assert c.module == module
    assert c.args == args
    if kind not in (sp.SERVER,):
        assert c.reason


@pytest.mark.parametrize('comm, kind', [
    ('sglang::schedul', sp.TITLED),   # only comm set (15 chars), argv untouched
    ('sglang::router', sp.ROUTER),
    ('python3', sp.MENTION),
])
def test_classify_by_comm(comm, kind):
    argv = ['python3', '-c', 'from multiprocessing.spawn import spawn_main; spawn_main()', '--multiprocessing-fork']
    assert sp.classify_argv(argv, comm).kind == kind


@pytest.mark.parametrize('title, role', [
    ('sglang::scheduler', 'scheduler'),
    ('sglang::scheduler_TP0', 'scheduler'),
    ('sglang::scheduler_DP1_TP1', 'scheduler'),
    ('sglang::scheduler_DP0_TP0_EP0', 'scheduler'),
    ('sglang::scheduler_DP0_PP1_ATTN_CP0_TP3_EP3', 'scheduler'),
    ('sglang::detokenizer', 'detokenizer'),
    ('sglang::detokenizer_router', 'detokenizer_router'),
    ('sglang::data_parallel_controller', 'data_parallel_controller'),
    ('sglang::tokenizer_worker:4242', 'tokenizer_worker'),
    ('sgl_diffusion::scheduler_3', 'scheduler'),
    ('sgl_diffusion::scheduler_DP0_TP1', 'scheduler'),
    ('sglang::', 'sglang'),
])
def test_role_from_title(title, role):
    assert sp.role_from_title(title) == role


# ------------------------------------------------------------------------------------------------
# Server settings, config file, redaction
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('args, config, expected', [
    ([], None, {'host': '127.0.0.1', 'port': 30000, 'tp': 1, 'dp': 1, 'pp': 1}),
    (['--port', '30001', '--host', '0.0.0.0'], None, {'host': '0.0.0.0', 'port': 30001}),
    (['--port=30002'], None, {'port': 30002}),
    (['--port', '1', '--port', '2'], None, {'port': 2}),
    (['--tp-size', '8'], None, {'tp': 8}),
    (['--tp', '4'], None, {'tp': 4}),
    (['--tensor-parallel-size=2'], None, {'tp': 2}),
    (['--dp-size', '2', '--pp-size', '3'], None, {'dp': 2, 'pp': 3}),
    (['--dp=2', '--pipeline-parallel-size', '2', '--data-parallel-size', '4'], None, {'dp': 4, 'pp': 2}),
    (['--port', 'abc'], None, {'port': None}),
    (['--port'], None, {'port': 30000}),
    (['--model-path', '--port'], None, {'port': 30000}),
    (['--portx', '1'], None, {'port': 30000}),
    (['--port', '030001'], None, {'port': 30001}),
    ([], {'--port': '31000', '--tp-size': '8', '--host': '0.0.0.0'}, {'port': 31000, 'tp': 8, 'host': '0.0.0.0'}),
    (['--port', '32000'], {'--port': '31000'}, {'port': 32000}),
])
def test_server_settings(args, config, expected):
    settings = sp.server_settings(args, config)
    for key, value in expected.items():
        assert settings[key] == value, key


def test_parse_config_scalars():
    text = '\n'.join([
        '# SGLang config',
        'model-path: /models/m',
        'port: 31000   # the port',
        'tp_size: 8',
        'host: "0.0.0.0"',
        "served-model-name: 'x: y'",
        'json-model-override-args:',
        '  rope_scaling: 2',
        '- list',
        'empty:',
    ])
    assert sp.parse_config_scalars(text) == {
        '--model-path': '/models/m', '--port': '31000', '--tp-size': '8', '--host': '0.0.0.0',
        '--served-model-name': 'x: y',
    }


@pytest.mark.parametrize('args, path', [
    (['--config', 'c.yaml'], 'c.yaml'),
    (['--tp', '2', '--config', '/etc/c.yaml'], '/etc/c.yaml'),
    (['--config'], None),
    ([], None),
])
def test_config_path_of(args, path):
    assert sp.config_path_of(args) == path


@pytest.mark.parametrize('argv, expected, hidden', [
    (['--api-key', 'sk-1', '--port', '1'], ['--api-key', sp.MASK, '--port', '1'], ['--api-key']),
    (['--api-key=sk-1'], ['--api-key=' + sp.MASK], ['--api-key']),
    (['--admin-api-key', 'a', '--hf-token=b'], ['--admin-api-key', sp.MASK, '--hf-token=' + sp.MASK],
     ['--admin-api-key', '--hf-token']),
    (['--ssl-keyfile-password', 'p'], ['--ssl-keyfile-password', sp.MASK], ['--ssl-keyfile-password']),
    (['--max-total-tokens', '8192', '--tokenizer-path', '/t', '--skip-tokenizer-init'],
     ['--max-total-tokens', '8192', '--tokenizer-path', '/t', '--skip-tokenizer-init'], []),
    (['--kv-cache-dtype', 'fp8', '--ssl-keyfile', '/k.pem'], ['--kv-cache-dtype', 'fp8', '--ssl-keyfile', '/k.pem'],
     []),
    (['--api-key'], ['--api-key'], ['--api-key']),
    (['python3', '-m', 'sglang.launch_server'], ['python3', '-m', 'sglang.launch_server'], []),
])
def test_redact_argv(argv, expected, hidden):
    assert sp.redact_argv(argv) == (expected, hidden)


def test_redact_env():
    env = {'HF_TOKEN': 'hf_x', 'OPENAI_API_KEY': 'k', 'db_password': 'p', 'AWS_SECRET_ACCESS_KEY': 's',
           'GOOGLE_APPLICATION_CREDENTIALS': '/c.json', 'PATH': '/bin', 'CUDA_HOME': '/usr/local/cuda'}
    redacted, hidden = sp.redact_env(env)
    assert redacted['PATH'] == '/bin' and redacted['CUDA_HOME'] == '/usr/local/cuda'
    assert hidden == ['AWS_SECRET_ACCESS_KEY', 'GOOGLE_APPLICATION_CREDENTIALS', 'HF_TOKEN', 'OPENAI_API_KEY',
                      'db_password']
    assert all(redacted[name] == sp.MASK for name in hidden)


# ------------------------------------------------------------------------------------------------
# cgroups
# ------------------------------------------------------------------------------------------------

V2_UNIT = '0::/system.slice/sglang.service\n'
V1_UNIT = ('12:cpu,cpuacct:/system.slice/sglang.service\n'
           '1:name=systemd:/system.slice/sglang.service\n0::/system.slice/sglang.service\n')
V1_ONLY = '4:memory:/system.slice/sglang.service\n1:name=systemd:/system.slice/sglang.service\n'
DOCKER_HOSTNS = '0::/docker/0123abcd/system.slice/sglang.service\n'
DELEGATED = '0::/system.slice/sglang.service/payload\n'
SESSION = '0::/user.slice/user-0.slice/session-3.scope\n'
OTHER_UNIT = '0::/system.slice/sglang-old.service\n'
CONTROLLER_ONLY = '4:memory:/system.slice/sglang.service\n1:name=systemd:/user.slice/user-0.slice/session-1.scope\n'
ROOT = '0::/\n'


@pytest.mark.parametrize('text, unit, expected', [
    (V2_UNIT, 'sglang.service', True),
    (V2_UNIT, 'sglang', True),
    (V1_UNIT, 'sglang.service', True),
    (V1_ONLY, 'sglang.service', True),
    (DOCKER_HOSTNS, 'sglang.service', True),
    (DELEGATED, 'sglang.service', True),
    (SESSION, 'sglang.service', False),
    (OTHER_UNIT, 'sglang.service', False),
    (V2_UNIT, 'sglang-old.service', False),
    (V2_UNIT, 'glang.service', False),
    (CONTROLLER_ONLY, 'sglang.service', False),   # only a controller hierarchy: not systemd's tracking
    (ROOT, 'sglang.service', False),
    ('', 'sglang.service', False),
    (V2_UNIT, '', False),
])
def test_cgroup_in_unit(text, unit, expected):
    assert sp.cgroup_in_unit(sp.parse_cgroup(text), unit) is expected


@pytest.mark.parametrize('unit, expected', [
    ('sglang', 'sglang.service'), ('sglang.service', 'sglang.service'), ('run-u7.scope', 'run-u7.scope'),
    ('sglang@1', 'sglang@1.service'), ('', ''),
])
def test_normalize_unit(unit, expected):
    assert sp.normalize_unit(unit) == expected


@pytest.mark.parametrize('path, expected', [
    ('/', False), ('', False), (None, False),
    ('/init.scope', False),
    ('/user.slice/user-0.slice/session-3.scope', False),
    ('/user.slice/user-1000.slice/user@1000.service', False),
    ('/system.slice', False),
    ('/system.slice/sglang-old.service', True),
    ('/system.slice/docker-0123.scope', True),
    ('/docker/0123abcd', True),
    ('/user.slice/user-0.slice/user@0.service/app.slice/run-r1.service', True),
])
def test_is_specific_cgroup(path, expected):
    assert sp.is_specific_cgroup(path) is expected


@pytest.mark.parametrize('text, expected', [
    (V2_UNIT, '/system.slice/sglang.service'),
    ('9:name=systemd:/system.slice/x.service\n1:cpu:/\n0::/\n', '/system.slice/x.service'),
    ('9:name=systemd:/\n0::/\n', '/'),
    ('1:cpu:/a\n', '/a'),
    ('', None),
])
def test_primary_cgroup(text, expected):
    assert sp.primary_cgroup(sp.parse_cgroup(text)) == expected


# ------------------------------------------------------------------------------------------------
# /proc parsers
# ------------------------------------------------------------------------------------------------

def stat_line(pid, comm, state='S', ppid=1, pgid=None, sid=None, flags=0x400100, starttime=100):
    rest = [state, ppid, pgid if pgid is not None else pid, sid if sid is not None else pid, 0, -1, flags,
            0, 0, 0, 0, 0, 0, 0, 0, 20, 0, 1, 0, starttime, 1000, 100]
    return '%d (%s) %s\n' % (pid, comm, ' '.join(str(x) for x in rest))


@pytest.mark.parametrize('comm', ['python3', 'sglang::schedul', 'a) b (c', 'with space', ')'])
def test_parse_stat(comm):
    st = sp.parse_stat(stat_line(42, comm, state='R', ppid=7, pgid=8, sid=9, starttime=123456).encode())
    assert (st.pid, st.comm, st.state, st.ppid, st.pgid, st.sid, st.starttime) == (42, comm, 'R', 7, 8, 9, 123456)


@pytest.mark.parametrize('data', [b'', b'garbage', b'1 (x) S 1', b'x (y) S 1 2 3 4 5 6'])
def test_parse_stat_malformed(data):
    assert sp.parse_stat(data) is None


@pytest.mark.parametrize('raw, argv', [
    (b'python3\0-m\0sglang.launch_server\0', ['python3', '-m', 'sglang.launch_server']),
    (b'sglang::scheduler_TP0', ['sglang::scheduler_TP0']),
    (b'sglang::scheduler_TP0\0\0\0\0', ['sglang::scheduler_TP0']),
    (b'sglang::detokenizer          ', ['sglang::detokenizer']),
    (b'a\0\0b\0', ['a', '', 'b']),
    (b'', []),
    (b'caf\xc3\xa9\0\xff\0', ['caf\xe9', '\ufffd']),
])
def test_parse_cmdline(raw, argv):
    assert sp.parse_cmdline(raw) == argv


def test_parse_environ_and_status():
    assert sp.parse_environ(b'A=1\0B=x=y\0A=2\0NOEQ\0\0') == {'A': '1', 'B': 'x=y'}
    assert sp.parse_status_uid('Name:\tx\nUid:\t1000\t1000\t1000\t1000\n') == 1000
    assert sp.parse_status_uid('Name:\tx\n') is None


# The h200x2 fixtures (/work/shared/fixtures/nvidia-smi/h200x2): one python process holding 4 GiB per GPU.
COMPUTE_APPS_BUSY_CSV = (
    'gpu_uuid, pid, process_name, used_gpu_memory [MiB]\n'
    'GPU-264e02ee-af98-d893-82ae-4ec1afc463e1, 568, python3, 4334 MiB\n'
    'GPU-4f3f9924-c31b-11ce-1a00-cd855da98952, 568, python3, 4334 MiB\n')
MEMORY_BUSY_CSV = '0, 4343, 143771\n1, 4343, 143771\n'


@pytest.mark.parametrize('text, expected', [
    ('568, 4334\n568, 4334\n', [{'pid': 568, 'used_memory_mib': 4334}] * 2),
    ('568, 4334 MiB\n', [{'pid': 568, 'used_memory_mib': 4334}]),
    ('pid, used_gpu_memory [MiB]\n568, 4334 MiB\n', [{'pid': 568, 'used_memory_mib': 4334}]),
    ('568, [N/A]\n', [{'pid': 568, 'used_memory_mib': None}]),
    ('No running processes found\n', []),
    ('', []),
])
def test_parse_compute_apps(text, expected):
    assert sp.parse_compute_apps(text) == expected


def test_parse_compute_apps_fixture_with_uuid_column():
    # The fixture has gpu_uuid first: not a pid, so every row is skipped rather than misread.
    assert sp.parse_compute_apps(COMPUTE_APPS_BUSY_CSV) == []


@pytest.mark.parametrize('text, expected', [
    (MEMORY_BUSY_CSV, [{'index': 0, 'memory_used_mib': 4343}, {'index': 1, 'memory_used_mib': 4343}]),
    ('0, 0\n1, 12 MiB\n', [{'index': 0, 'memory_used_mib': 0}, {'index': 1, 'memory_used_mib': 12}]),
    ('index, memory.used [MiB]\n0, [Not Supported]\n', [{'index': 0, 'memory_used_mib': None}]),
    ('', []),
])
def test_parse_gpu_memory(text, expected):
    assert sp.parse_gpu_memory(text) == expected


@pytest.mark.parametrize('apps, gpus, pids, listed, hot', [
    ([{'pid': 568, 'used_memory_mib': 4334}], [{'index': 0, 'memory_used_mib': 4343}], [568], [568], [0]),
    ([], [{'index': 0, 'memory_used_mib': 4343}], [568], [], [0]),
    ([{'pid': 9, 'used_memory_mib': 10}], [{'index': 0, 'memory_used_mib': 1023}], [568], [], []),
    ([], [{'index': 0, 'memory_used_mib': 1024}], [568], [], [0]),
    ([], [{'index': 0, 'memory_used_mib': None}], [568], [], []),
])
def test_gpu_release_state(apps, gpus, pids, listed, hot):
    state = sp.gpu_release_state(apps, gpus, pids, 1024)
    assert state['stopped_pids_listed'] == listed
    assert [g['index'] for g in state['gpus_over_threshold']] == hot


NET_TCP = '\n'.join([
    '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
    '   0: 0100007F:7530 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 111 1 0 100 0',
    '   1: 00000000:7531 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 222 1 0 100 0',
    '   2: 0100007F:7530 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 333 1 0 20 4',
    '   3: 0100007F:7530 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 0 1 0 100 0',
])
NET_TCP6 = '\n'.join([
    '  sl  local_address                         remote_address                        st tx_queue rx_queue',
    '   0: 00000000000000000000000000000000:7530 00000000000000000000000000000000:0000 0A 00000000:00000000 '
    '00:00000000 00000000     0        0 444 1 0 100 0',
])


@pytest.mark.parametrize('text, port, inodes', [
    (NET_TCP, 30000, {'111'}),
    (NET_TCP, 30001, {'222'}),
    (NET_TCP, 1, set()),
    (NET_TCP6, 30000, {'444'}),
    ('', 30000, set()),
])
def test_parse_proc_net_tcp(text, port, inodes):
    assert sp.parse_proc_net_tcp(text, port) == inodes


@pytest.mark.parametrize('pattern, target, expected', [
    ('/dev/nvidia*', '/dev/nvidia0', True),
    ('/dev/nvidia*', '/dev/nvidiactl', True),
    ('/dev/nvidia*', '/dev/nvidia-caps/nvidia-cap1', True),
    ('/dev/nvidia*', '/dev/null', False),
    ('/dev/nvidia*', '/tmp/dev/nvidia0', False),
    ('/dev/nvidia[0-9]', '/dev/nvidia7', True),
    ('/dev/nvidia[0-9]', '/dev/nvidiactl', False),
    ('/tmp/gpu/*', '/tmp/gpu/nvidia1', True),
])
def test_compile_device_glob(pattern, target, expected):
    assert sp.compile_device_glob(pattern)(target) is expected


@pytest.mark.parametrize('target, path', [
    ('/dev/nvidia0', '/dev/nvidia0'), ('/tmp/x/nvidia1 (deleted)', '/tmp/x/nvidia1'),
    ('socket:[123]', None), ('pipe:[4]', None), ('anon_inode:[eventfd]', None), ('', None),
])
def test_device_path_of(target, path):
    assert sp.device_path_of(target) == path


@pytest.mark.parametrize('path, expected', [
    ('/dev/nvidia0', True), ('/dev/nvidia15', True), ('/tmp/gpu/nvidia3', True), ('/dev/dri/renderD128', True),
    ('/dev/nvidiactl', False), ('/dev/nvidia-uvm', False), ('/dev/nvidia-caps/nvidia-cap1', False),
])
def test_is_per_gpu_device(path, expected):
    assert sp.is_per_gpu_device(path) is expected


def test_tree_helpers():
    parent_of = {10: 1, 11: 10, 12: 11, 13: 10, 20: 1, 30: 30}
    children = sp.children_map(parent_of)
    assert children[10] == [11, 13]
    assert sp.descendants(children, 10) == {11, 12, 13}
    assert sp.descendants(children, 10, stop={11}) == {13}
    assert sp.ancestors(parent_of, 12) == [11, 10, 1]
    assert sp.ancestors(parent_of, 30) == []       # a self-loop ends the walk
    assert sp.own_tree(parent_of, children, 11) == {11, 12, 10, 1}


def test_render_process_lines():
    members = [{'pid': 12, 'role': 'scheduler', 'title': 'sglang::scheduler_TP1'},
               {'pid': 3, 'role': 'server', 'title': 'python3 -m sglang.launch_server ' + 'x' * 400}]
    text = sp.render_process_lines(members)
    lines = text.splitlines()
    assert lines[0].startswith('3 [server] python3 -m sglang.launch_server xxx') and lines[0].endswith('...')
    assert len(lines[0]) < 260
    assert lines[1] == '12 [scheduler] sglang::scheduler_TP1'
    assert text.endswith('\n')
    assert sp.render_process_lines([]) == ''


@pytest.mark.parametrize('argv0, path_env, cwd, exe, venv, executables, expected', [
    ('/root/ml-env/bin/python3', None, '/', '/usr/bin/python3.12', None, set(), '/root/ml-env/bin/python3'),
    ('python3', '/root/ml-env/bin:/usr/bin', '/', '/usr/bin/python3.12', None,
     {'/root/ml-env/bin/python3', '/usr/bin/python3'}, '/root/ml-env/bin/python3'),
    ('python3', 'relative/bin::/usr/bin', '/', '/usr/bin/python3.12', None, {'/usr/bin/python3'}, '/usr/bin/python3'),
    ('./venv/bin/python', None, '/srv', '/usr/bin/python3.12', None, set(), '/srv/venv/bin/python'),
    ('python3', '/nowhere', '/', '/usr/bin/python3.12', None, set(), '/usr/bin/python3.12'),
    ('sglang::scheduler_TP0', '/usr/bin', '/', '/usr/bin/python3.12', None, {'/usr/bin/sglang::scheduler_TP0'},
     '/usr/bin/python3.12'),
    (None, None, None, None, None, set(), None),
])
def test_resolve_executable(argv0, path_env, cwd, exe, venv, executables, expected):
    assert sp.resolve_executable(argv0, path_env, cwd, exe, venv, is_executable=executables.__contains__) == expected


def test_resolve_executable_prefers_venv_python_for_retitled(tmp_path):
    real = tmp_path / 'python3.11'
    real.write_text('')
    real.chmod(0o755)
    (tmp_path / 'venv' / 'bin').mkdir(parents=True)
    os.symlink(str(real), str(tmp_path / 'venv' / 'bin' / 'python3'))
    got = sp.resolve_executable('sglang::scheduler_TP0', '/usr/bin', '/', str(real), str(tmp_path / 'venv'))
    assert got == str(tmp_path / 'venv' / 'bin' / 'python3')


# ------------------------------------------------------------------------------------------------
# Discovery on fake /proc trees
# ------------------------------------------------------------------------------------------------

class FakeProc(object):
    """Writes a fake procfs: <root>/<pid>/{stat,cmdline,environ,status,cgroup,fd/,cwd,exe}, stat, net/."""

    def __init__(self, root, btime=1700000000):
        self.root = root
        root.mkdir(exist_ok=True)
        (root / 'stat').write_text('cpu  1 2 3\nbtime %d\nprocesses 9\n' % btime)
        (root / 'net').mkdir()
        (root / 'net' / 'tcp').write_text(NET_TCP.splitlines()[0] + '\n')

    def add(self, pid, argv, ppid=1, pgid=None, comm=None, state='S', starttime=None, env=None, cwd='/srv',
            uid=0, cgroup='0::/\n', fds=(), exe='/usr/bin/python3.11', flags=0x400100, cmdline=None):
        d = self.root / str(pid)
        d.mkdir()
        if comm is None:
            comm = os.path.basename(argv[0])[:15] if argv else 'x'
        (d / 'stat').write_text(stat_line(pid, comm, state, ppid, pgid if pgid is not None else pid,
                                          starttime=starttime if starttime is not None else 1000 + pid,
                                          flags=flags))
        if cmdline is None:
            cmdline = ''.join(a + '\0' for a in argv)
        (d / 'cmdline').write_bytes(cmdline.encode() if isinstance(cmdline, str) else cmdline)
        env = env if env is not None else {'PATH': '/usr/bin'}
        (d / 'environ').write_text(''.join('%s=%s\0' % kv for kv in env.items()))
        (d / 'status').write_text('Name:\t%s\nUid:\t%d\t%d\t%d\t%d\n' % (comm, uid, uid, uid, uid))
        (d / 'cgroup').write_text(cgroup)
        (d / 'fd').mkdir()
        for i, target in enumerate(fds):
            os.symlink(target, str(d / 'fd' / str(i + 3)))
        if cwd:
            os.symlink(cwd, str(d / 'cwd'))
        if exe:
            os.symlink(exe, str(d / 'exe'))
        return pid

    def source(self):
        return sp.ProcFS(str(self.root))


SELF = 900   # the fake "module" process: 900 <- 899 (ansible) <- 898 (shell) <- 1
LAUNCH = [PY, '-m', 'sglang.launch_server', '--model-path', '/models/m', '--tp', '2', '--port', '30000']
SPAWN = [PY, '-c', 'from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=5, pipe_handle=7)',
         '--multiprocessing-fork']
TRACKER = [PY, '-B', '-c', 'from multiprocessing.resource_tracker import main;main(5)']


@pytest.fixture
def proc(tmp_path):
    fake = FakeProc(tmp_path / 'proc')
    fake.add(1, ['/sbin/init'], ppid=0, exe='/sbin/init')
    fake.add(2, [], ppid=0, comm='kthreadd', flags=0x00208040, cmdline=b'', exe=None)
    fake.add(898, ['-bash'], ppid=1)
    fake.add(899, ['/venv/bin/python3', '/venv/bin/ansible', 'localhost', '-m', 'inferops.sglang.server_process'],
             ppid=898, pgid=899)
    fake.add(SELF, ['/usr/bin/python3', '/root/.ansible/tmp/AnsiballZ_server_process.py'], ppid=899, pgid=899)
    return fake


def add_reference_server(proc, main=100, port=30000, gpus=(0, 1), cgroup='0::/user.slice/user-0.slice/session-3.scope\n',
                         env=None, extra_args=()):
    argv = [PY, '-m', 'sglang.launch_server', '--model-path', '/models/m', '--tp', str(len(gpus)),
            '--port', str(port)] + list(extra_args)
    proc.add(main, argv, ppid=1, env=env or {'PATH': '/root/ml-env/bin:/usr/bin', 'CUDA_HOME': '/usr/local/cuda',
                                             'HF_TOKEN': 'hf_secret'}, cgroup=cgroup,
             fds=['/dev/nvidiactl', '/dev/nvidia-uvm'], cwd='/root')
    proc.add(main + 1, TRACKER, ppid=main, pgid=main, cgroup=cgroup)
    for i, gpu in enumerate(gpus):
        proc.add(main + 2 + i, ['sglang::scheduler_TP%d' % i], ppid=main, pgid=main, cgroup=cgroup,
                 fds=['/dev/nvidiactl', '/dev/nvidia%d' % gpu, '/dev/nvidia-uvm', 'socket:[9%d]' % i])
    proc.add(main + 2 + len(gpus), ['sglang::detokenizer'], ppid=main, pgid=main, cgroup=cgroup)
    return [main, main + 1] + [main + 2 + i for i in range(len(gpus))] + [main + 2 + len(gpus)]


def run(proc, **kwargs):
    kwargs.setdefault('self_pid', SELF)
    kwargs.setdefault('now', 1700001000.0)
    return sp.discover(source=proc.source(), **kwargs)


def by_main(found):
    return dict((s['main_pid'], s) for s in found.servers)


def ignored_pids(found):
    return dict((i['pid'], i['reason']) for i in found.ignored)


def test_discover_reference_server(proc):
    pids = add_reference_server(proc)
    proc.add(110, SPAWN, ppid=100, pgid=100)   # a spawn child not retitled yet
    found = run(proc)
    assert [s['main_pid'] for s in found.servers] == [100]
    server = found.servers[0]
    assert server['pids'] == sorted(pids + [110])
    roles = dict((m['pid'], m['role']) for m in server['members'])
    assert roles == {100: 'server', 101: 'resource_tracker', 102: 'scheduler', 103: 'scheduler',
                     104: 'detokenizer', 110: 'spawn_child'}
    assert server['module'] == 'sglang.launch_server'
    assert server['args'] == ['--model-path', '/models/m', '--tp', '2', '--port', '30000']
    assert server['executable'] == PY
    assert (server['host'], server['port'], server['tp'], server['dp'], server['pp']) == ('127.0.0.1', 30000, 2, 1, 1)
    assert server['env']['HF_TOKEN'] == sp.MASK and server['env']['CUDA_HOME'] == '/usr/local/cuda'
    assert server['redacted_env'] == ['HF_TOKEN']
    assert server['cwd'] == '/root' and server['user'] == 'root' and server['uid'] == 0
    assert server['gpu_devices'] == ['/dev/nvidia-uvm', '/dev/nvidia0', '/dev/nvidia1', '/dev/nvidiactl']
    assert server['cgroup'] == '/user.slice/user-0.slice/session-3.scope'
    assert server['managed'] is False and server['orphaned'] is False
    assert server['start_time'] == pytest.approx(1700000000 + 1100 / 100.0)
    assert server['uptime_seconds'] == pytest.approx(1000 - 11)
    assert server['parent'] is None and server['ppid'] == 1
    assert [s['main_pid'] for s in found.strays] == [100] and found.managed == []
    assert found.gpu_holders_unrelated == []
    # The module's own ancestor (the ansible command line mentions inferops.sglang) is protected.
    assert ignored_pids(found)[899].startswith('runs this module')


def test_discover_decoys_are_never_servers(proc):
    add_reference_server(proc)
    decoys = {
        200: ['grep', 'sglang.launch_server'],
        201: ['tail', '-f', 'sglang.log'],
        202: ['vim', '/src/sglang/python/sglang/launch_server.py'],
        203: ['python3', '-c', 'import time; time.sleep(60)', 'launch_server.py'],
        204: ['python3', '-m', 'sglang.bench_serving', '--port', '30000'],
        206: ['sglang::router'],
        207: ['/venv/bin/python3', '/venv/bin/pip', 'install', 'sglang'],
        208: ['bash', '-c', 'python3 -m sglang.launch_server --port 30001; sleep 1'],
        210: ['python3', '-m', 'sglang.bench_one_batch_server', '--model-path', '/m'],
        212: ['python3', '-m', 'sglang.srt.disaggregation.launch_lb', '--port', '8000'],
        213: ['python3', '-m', 'sglang.srt.mem_cache.flush_cache'],
    }
    for pid, argv in decoys.items():
        proc.add(pid, argv, ppid=898, pgid=pid)
    # The router's own child stays with the router.
    proc.add(215, ['sglang-router-worker'], ppid=206, pgid=206, fds=['/dev/nvidia0'])
    # The shell wrapper's child is the server; the wrapper is not.
    proc.add(209, ['python3', '-m', 'sglang.launch_server', '--port', '30001'], ppid=208, pgid=208)
    # bench_one_batch_server launches a server: the child is matched by its own argv, the client is not.
    proc.add(211, ['python3', '-m', 'sglang.launch_server', '--port', '30002'], ppid=210, pgid=210)
    found = run(proc)
    assert sorted(by_main(found)) == [100, 209, 211]
    reasons = ignored_pids(found)
    for pid in decoys:
        if pid != 203:   # its command line does not mention sglang at all: simply unrelated
            assert pid in reasons, pid
    assert 'router' in reasons[206] and 'client' in reasons[204] and 'client' in reasons[210]
    assert 'shell wrapper' in reasons[208]
    assert 'load balancer' in reasons[212] and 'runs no engine' in reasons[213]
    all_members = set(pid for s in found.servers for pid in s['pids'])
    assert not all_members & (set(decoys) | {215, 1, 898, 899, SELF})
    assert found.gpu_holders_unrelated and [h['pid'] for h in found.gpu_holders_unrelated] == [215]


def test_discover_sglang_serve_and_candidate(proc):
    proc.add(300, ['/venv/bin/python3', '/venv/bin/sglang', 'serve', '/models/m', '--port=31000', '--dp', '2'],
             ppid=1)
    proc.add(301, ['sglang::scheduler'], ppid=300, pgid=300)
    proc.add(310, ['python3', '-m', 'sglang.srt.some_server', '--port', '32000'], ppid=1)
    proc.add(311, ['sglang::scheduler_TP0'], ppid=310, pgid=310)
    proc.add(320, ['python3', '-m', 'sglang.srt.weight_cache.daemon'], ppid=1)
    proc.add(321, ['python3', '-c', 'x'], ppid=320, pgid=320)
    found = run(proc)
    servers = by_main(found)
    assert sorted(servers) == [300, 310]
    assert servers[300]['module'] == 'sglang serve'
    assert (servers[300]['port'], servers[300]['dp']) == (31000, 2)
    assert servers[310]['module'] == 'sglang.srt.some_server' and servers[310]['port'] == 32000
    assert 'runs no engine' in ignored_pids(found)[320]


def test_discover_c01_orphaned_dp_schedulers(proc):
    # Launcher (pgid 400) and controller were killed -9: the schedulers are children of PID 1 now.
    proc.add(402, ['sglang::scheduler_DP0_TP0_EP0'], ppid=1, pgid=400, fds=['/dev/nvidia0', '/dev/nvidiactl'])
    proc.add(403, ['sglang::scheduler_DP1_TP1_EP1'], ppid=1, pgid=400, fds=['/dev/nvidia1', '/dev/nvidiactl'])
    proc.add(404, TRACKER, ppid=402, pgid=400)
    found = run(proc)
    assert len(found.servers) == 1
    orphan = found.servers[0]
    assert orphan['orphaned'] is True and orphan['main_pid'] == 402
    assert orphan['pids'] == [402, 403, 404]
    assert orphan['module'] is None and orphan['port'] is None and orphan['args'] == []
    assert orphan['gpu_devices'] == ['/dev/nvidia0', '/dev/nvidia1', '/dev/nvidiactl']
    assert orphan['_roots'] == [402, 403]
    targets = sp.plan_targets(found.strays, found.identity)
    assert [(t.pid, t.term) for t in targets] == [(402, True), (403, True), (404, False)]


def test_discover_orphans_of_two_servers_form_two_groups(proc):
    proc.add(402, ['sglang::scheduler_DP0'], ppid=1, pgid=400)
    proc.add(403, ['sglang::scheduler_DP1'], ppid=1, pgid=400)
    proc.add(502, ['sglang::scheduler_DP0'], ppid=1, pgid=500)
    found = run(proc)
    assert [(s['main_pid'], s['pids']) for s in found.servers] == [(402, [402, 403]), (502, [502])]


@pytest.mark.parametrize('relation', ['gpu', 'pgid', 'cgroup', 'none', 'ambiguous_gpu'])
def test_discover_orphans_attach_to_live_server(proc, relation):
    cg = '0::/system.slice/run-r1.service\n'
    add_reference_server(proc, main=100, gpus=(0, 3) if relation == 'ambiguous_gpu' else (0, 1),
                         cgroup=cg if relation == 'cgroup' else '0::/\n')
    add_reference_server(proc, main=150, port=30001, gpus=(2, 3) if relation != 'ambiguous_gpu' else (3, 4))
    fds = ['/dev/nvidia3'] if relation in ('gpu', 'ambiguous_gpu') else []
    proc.add(450, ['sglang::data_parallel_controller'], ppid=1, pgid=100 if relation == 'pgid' else 450)
    proc.add(451, ['sglang::scheduler_DP1_TP0'], ppid=1, pgid=100 if relation == 'pgid' else 450, fds=fds,
             cgroup=cg if relation == 'cgroup' else '0::/\n')
    found = run(proc)
    servers = by_main(found)
    expected_owner = {'gpu': 150, 'pgid': 100, 'cgroup': 100, 'none': None, 'ambiguous_gpu': None}[relation]
    if expected_owner is None:
        assert sorted(servers) == [100, 150, 450]
        assert servers[450]['orphaned'] and servers[450]['pids'] == [450, 451]
    else:
        assert sorted(servers) == [100, 150]
        assert {450, 451} <= set(servers[expected_owner]['pids'])
        attached = dict((m['pid'], m['attached']) for m in servers[expected_owner]['members'])
        assert attached[451].startswith('orphan (')
        assert set(servers[expected_owner]['_roots']) == {expected_owner, 450, 451}


def test_discover_titled_child_of_live_client_is_left_alone(proc):
    # An in-process engine of a benchmark client: its scheduler shares the client's process group.
    proc.add(600, ['python3', '-m', 'sglang.bench_offline_throughput', '--model-path', '/m'], ppid=898, pgid=600)
    proc.add(601, ['sglang::scheduler'], ppid=600, pgid=600, fds=['/dev/nvidia0'])
    proc.add(602, ['sglang::detokenizer'], ppid=600, pgid=600)
    found = run(proc, include_gpu_holders=True)
    assert found.servers == []
    reasons = ignored_pids(found)
    assert 'client' in reasons[600]
    assert 'live process that is not a server (pid 600' in reasons[601]
    assert [h['pid'] for h in found.gpu_holders_unrelated] == [601]


def test_discover_orphan_under_subreaper(proc):
    # Re-parented to a subreaper (systemd --user, pid 700, its own process group): still an orphan.
    proc.add(700, ['/lib/systemd/systemd', '--user'], ppid=1, pgid=700)
    proc.add(702, ['sglang::scheduler_DP0'], ppid=700, pgid=400)
    found = run(proc)
    assert [(s['main_pid'], s['orphaned']) for s in found.servers] == [(702, True)]


@pytest.mark.parametrize('cgroup, managed', [
    ('0::/system.slice/sglang.service\n', True),
    ('1:name=systemd:/system.slice/sglang.service\n0::/\n', True),
    ('0::/docker/abc/system.slice/sglang.service\n', True),
    ('0::/user.slice/user-0.slice/session-3.scope\n', False),
])
def test_discover_managed(proc, cgroup, managed):
    add_reference_server(proc, main=100, cgroup=cgroup)
    add_reference_server(proc, main=150, port=30001, gpus=(2, 3))
    found = run(proc)
    assert by_main(found)[100]['managed'] is managed
    assert [s['main_pid'] for s in found.strays] == ([150] if managed else [100, 150])
    assert [s['main_pid'] for s in found.managed] == ([100] if managed else [])


def test_discover_managed_orphans_never_join_stray_server(proc):
    add_reference_server(proc, main=150, port=30001, gpus=(2, 3))
    proc.add(451, ['sglang::scheduler_TP1'], ppid=1, pgid=450, fds=['/dev/nvidia3'],
             cgroup='0::/system.slice/sglang.service\n')
    found = run(proc)
    summary = [(s['main_pid'], s['managed'], s['orphaned']) for s in found.servers]
    assert summary == [(150, False, False), (451, True, True)]


def test_discover_gpu_holders(proc):
    cg = '0::/system.slice/docker-abc.scope\n'
    add_reference_server(proc, main=100, cgroup=cg)
    # C02, through the tree: a non-sglang child of a scheduler holding a GPU.
    proc.add(120, ['python3', '-c', 'import time; f = open("/dev/nvidia0"); time.sleep(1e9)'], ppid=102, pgid=100,
             cgroup=cg, fds=['/dev/nvidia0'])
    # Outside the tree, same specific cgroup: joins the stray server, with its own child.
    proc.add(130, ['python3', 'helper.py'], ppid=1, pgid=130, cgroup=cg, fds=['/dev/nvidia1'])
    proc.add(131, ['sleep', '100'], ppid=130, pgid=130, cgroup=cg)
    # Outside the tree, the process group of a dead launcher that orphans of a stray group share.
    proc.add(402, ['sglang::scheduler_DP0'], ppid=1, pgid=400, fds=['/dev/nvidia4'])
    proc.add(405, ['python3', 'worker.py'], ppid=1, pgid=400, fds=['/dev/nvidia4'])
    # Unrelated holders: same session cgroup as everyone, another user's job; the managed unit's holder.
    proc.add(140, ['python3', 'train.py', '--token', 'abc'], ppid=898, pgid=140, uid=1000,
             cgroup='0::/user.slice/user-1000.slice/session-9.scope\n', fds=['/dev/nvidia5'])
    proc.add(141, ['nvidia-persistenced'], ppid=1, cgroup='0::/system.slice/nvidia-persistenced.service\n',
             fds=['/dev/nvidiactl'])
    proc.add(142, ['python3', 'x.py'], ppid=1, cgroup='0::/system.slice/sglang.service\n', fds=['/dev/nvidia6'])
    # A process group led by a live non-member (a non-interactive script): no relation.
    proc.add(150, ['bash', 'start.sh'], ppid=1, pgid=150)
    proc.add(151, ['python3', 'other.py'], ppid=150, pgid=150, fds=['/dev/nvidia7'])
    found = run(proc)
    servers = by_main(found)
    assert sorted(servers) == [100, 402]
    members = dict((m['pid'], m) for m in servers[100]['members'])
    assert {120, 130, 131} <= set(members)
    assert members[120]['role'] == 'child' and members[120]['attached'] is None
    assert members[130]['role'] == 'gpu_holder' and members[130]['attached'] == 'GPU holder (same cgroup)'
    assert members[131]['attached'] == 'GPU holder (same cgroup)'
    assert 130 in servers[100]['_roots']
    assert servers[402]['pids'] == [402, 405]
    assert dict((m['pid'], m['attached']) for m in servers[402]['members'])[405] == 'GPU holder (same process group)'
    unrelated = dict((h['pid'], h) for h in found.gpu_holders_unrelated)
    assert sorted(unrelated) == [140, 141, 151]
    assert unrelated[140]['user'] == str(1000) or unrelated[140]['user']
    assert unrelated[140]['argv'] == ['python3', 'train.py', '--token', sp.MASK]
    assert unrelated[140]['gpu_devices'] == ['/dev/nvidia5']


def test_discover_without_gpu_holders(proc):
    cg = '0::/system.slice/docker-abc.scope\n'
    add_reference_server(proc, main=100, cgroup=cg)
    proc.add(130, ['python3', 'helper.py'], ppid=1, pgid=130, cgroup=cg, fds=['/dev/nvidia1'])
    found = run(proc, include_gpu_holders=False)
    assert by_main(found)[100]['pids'] == [100, 101, 102, 103, 104]
    assert found.gpu_holders_unrelated == []
    # The devices of members are still reported.
    assert '/dev/nvidia0' in by_main(found)[100]['gpu_devices']


def test_discover_exclude_pids(proc):
    add_reference_server(proc, main=100)
    add_reference_server(proc, main=150, port=30001, gpus=(2, 3))
    found = run(proc, exclude_pids=[150, 103, 99999])
    servers = by_main(found)
    assert sorted(servers) == [100]
    assert 103 not in servers[100]['pids']
    assert ignored_pids(found)[150] == 'excluded (exclude_pids)'


def test_discover_never_own_tree(proc):
    # The module runs (somehow) inside a server's tree: that server is left alone entirely.
    proc.add(800, [PY, '-m', 'sglang.launch_server', '--port', '30005'], ppid=1)
    proc.add(801, ['sglang::scheduler'], ppid=800, pgid=800)
    proc.add(802, ['bash'], ppid=800, pgid=800)
    proc.add(803, ['python3', 'AnsiballZ_server_process.py'], ppid=802, pgid=800)
    proc.add(804, ['sleep', '1'], ppid=803, pgid=800)
    found = run(proc, self_pid=803)
    assert found.servers == []
    assert ignored_pids(found)[800].startswith('runs this module')
    assert {800, 802, 803, 804, 1} <= found.protected


def test_discover_port_filter(proc):
    add_reference_server(proc, main=100, port=30000)
    add_reference_server(proc, main=150, port=30001, gpus=(2, 3))
    proc.add(402, ['sglang::scheduler_DP0'], ppid=1, pgid=400)
    found = run(proc, port=30001)
    assert sorted(by_main(found)) == [150, 402]
    assert 'port 30000, not on port 30001' in ignored_pids(found)[100]


def test_discover_config_file_port(proc, tmp_path):
    config = tmp_path / 'server.yaml'
    config.write_text('port: 31500\ntp-size: 4\n')
    proc.add(100, [PY, '-m', 'sglang.launch_server', '--config', 'server.yaml', '--tp', '2'], ppid=1,
             cwd=str(tmp_path))
    found = run(proc, port=31500)
    server = found.servers[0]
    assert (server['port'], server['tp']) == (31500, 2)


def test_discover_secret_flags_redacted(proc):
    add_reference_server(proc, main=100, extra_args=['--api-key', 'sk-live-1', '--admin-api-key=zz-admin-zz'])
    server = run(proc).servers[0]
    assert server['argv'][-3:] == ['--api-key', sp.MASK, '--admin-api-key=' + sp.MASK]
    assert server['args'][-3:] == ['--api-key', sp.MASK, '--admin-api-key=' + sp.MASK]
    assert server['redacted_args'] == ['--api-key', '--admin-api-key']
    assert 'sk-live-1' not in repr(server) and 'zz-admin-zz' not in repr(server)


def test_discover_listeners(proc):
    add_reference_server(proc, main=100, port=30000)
    (proc.root / 'net' / 'tcp').write_text(NET_TCP + '\n')
    os.symlink('socket:[111]', str(proc.root / '100' / 'fd' / '50'))
    proc.add(160, ['nginx: worker'], ppid=1, fds=['socket:[222]'])
    found = run(proc, port=30000)
    assert found.listeners == [{'pid': 100, 'title': ' '.join(LAUNCH), 'argv': LAUNCH, 'server_main_pid': 100,
                                'managed': False}]
    found = run(proc, port=30001)
    assert [(entry['pid'], entry['server_main_pid']) for entry in found.listeners] == [(160, None)]
    assert run(proc).listeners == []


def test_discover_tolerates_zombies_kernel_threads_and_vanished(proc):
    add_reference_server(proc, main=100)
    proc.add(170, ['sglang::scheduler_TP0'], ppid=1, pgid=170, state='Z')     # zombie: gone
    proc.add(171, ['sglang::scheduler_TP0'], ppid=1, pgid=171)
    (proc.root / '171' / 'cmdline').unlink()                                      # vanished mid-scan
    (proc.root / '172').mkdir()                                                   # vanished: nothing left
    os.unlink(str(proc.root / '103' / 'environ'))
    os.unlink(str(proc.root / '100' / 'environ'))                               # main's details vanish
    found = run(proc)
    assert [s['main_pid'] for s in found.servers] == [100]
    assert found.servers[0]['env'] == {}
    assert 2 not in found.servers[0]['pids']


def test_discover_real_proc_smoke():
    # The real /proc: this test process is protected and nothing crashes.
    found = sp.discover(include_gpu_holders=True, port=1)
    assert os.getpid() in found.protected
    assert all(os.getpid() not in s['pids'] for s in found.servers)


# ------------------------------------------------------------------------------------------------
# Stopping real processes
# ------------------------------------------------------------------------------------------------

IGNORE_TERM = ('import signal, time, sys; signal.signal(signal.SIGTERM, signal.SIG_IGN); '
               'sys.stdout.write("ready\\n"); sys.stdout.flush(); time.sleep(60)')
SLEEPER = 'import sys, time; sys.stdout.write("ready\\n"); sys.stdout.flush(); time.sleep(60)'


@pytest.fixture
def spawn():
    procs = []

    def start(code):
        p = subprocess.Popen([sys.executable, '-c', code], stdout=subprocess.PIPE)
        assert p.stdout.readline() == b'ready\n'
        procs.append(p)
        return p
    yield start
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


def target_of(p, term=True, starttime=None):
    source = sp.ProcFS()
    if starttime is None:
        starttime = source.stat(p.pid).starttime
    return sp.Target(p.pid, starttime, 'server', p.pid, term)


def test_stop_sigterm_then_sigkill(spawn):
    polite = spawn(SLEEPER)
    stubborn = spawn(IGNORE_TERM)
    bystander = spawn(SLEEPER)   # a member that gets no SIGTERM of its own and does not exit
    targets = [target_of(polite), target_of(stubborn), target_of(bystander, term=False)]
    out = sp.stop_targets(targets, sp.ProcFS(), grace_period=0.5, kill_timeout=5)
    how = dict((s['pid'], s['signal']) for s in out['stopped'])
    assert how == {polite.pid: 'SIGTERM', stubborn.pid: 'SIGKILL', bystander.pid: 'SIGKILL'}
    assert out['signalled'] and not out['remaining'] and not out['errors']
    assert polite.wait(5) == -signal.SIGTERM
    assert stubborn.wait(5) == -signal.SIGKILL
    seconds = dict((s['pid'], s['seconds']) for s in out['stopped'])
    assert seconds[stubborn.pid] >= 0.5


def test_stop_refuses_reused_pid(spawn):
    p = spawn(SLEEPER)
    # A target whose start time differs is another process now: never signalled.
    target = target_of(p, starttime=sp.ProcFS().stat(p.pid).starttime - 1)
    out = sp.stop_targets([target], sp.ProcFS(), grace_period=0.2, kill_timeout=0.2)
    assert out['stopped'] == [{'pid': p.pid, 'main_pid': p.pid, 'role': 'server', 'signal': 'already gone',
                               'seconds': 0.0}]
    assert not out['signalled']
    assert p.poll() is None
    assert sp.send_signal(sp.ProcFS(), p.pid, target.starttime, signal.SIGKILL) is False
    assert p.poll() is None


def test_stop_already_gone(spawn):
    p = spawn(SLEEPER)
    target = target_of(p)
    p.kill()
    p.wait()
    out = sp.stop_targets([target], sp.ProcFS(), grace_period=5, kill_timeout=5)
    assert out['stopped'][0]['signal'] == 'already gone' and not out['signalled']


def test_stop_zombie_counts_as_gone(spawn):
    p = spawn(SLEEPER)
    target = target_of(p)
    os.kill(p.pid, signal.SIGKILL)   # not reaped: a zombie until p.wait()
    deadline = time.time() + 5
    while sp.ProcFS().stat(p.pid).state != 'Z' and time.time() < deadline:
        time.sleep(0.01)
    assert not sp.is_alive(sp.ProcFS(), p.pid, target.starttime)
    out = sp.stop_targets([target], sp.ProcFS(), grace_period=5, kill_timeout=5)
    assert out['stopped'][0]['signal'] == 'already gone'


def test_stop_never_signals_protected():
    source = sp.ProcFS()
    me = sp.Target(os.getpid(), source.stat(os.getpid()).starttime, 'server', os.getpid(), True)
    parent = sp.Target(os.getppid(), source.stat(os.getppid()).starttime, 'server', os.getppid(), True)
    init = sp.Target(1, source.stat(1).starttime, 'server', 1, True)
    out = sp.stop_targets([me, parent, init], source, grace_period=0.1, kill_timeout=0.1)
    assert sorted(pid for pid, _msg in out['errors']) == sorted([1, os.getpid(), os.getppid()])
    assert not out['signalled'] and out['stopped'] == []


def test_stop_permission_error_is_reported(spawn, monkeypatch):
    p = spawn(SLEEPER)

    def denied(*_args):
        raise PermissionError(1, 'Operation not permitted')
    monkeypatch.setattr(sp, 'send_signal', denied)
    out = sp.stop_targets([target_of(p)], sp.ProcFS(), grace_period=0.1, kill_timeout=0.1)
    # Reported once (no SIGKILL attempt after a refused SIGTERM) and left running.
    assert out['errors'] == [(p.pid, 'SIGTERM: Operation not permitted')]
    assert [t.pid for t in out['remaining']] == [p.pid] and p.poll() is None


def test_send_signal_without_pidfd(spawn, monkeypatch):
    monkeypatch.setattr(sp, '_HAS_PIDFD', False)
    p = spawn(SLEEPER)
    assert sp.send_signal(sp.ProcFS(), p.pid, sp.ProcFS().stat(p.pid).starttime, signal.SIGTERM) is True
    assert p.wait(5) == -signal.SIGTERM


# ------------------------------------------------------------------------------------------------
# Release waits
# ------------------------------------------------------------------------------------------------

class FakeClock(object):
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def fake_smi(readings):
    """run_command answering the two nvidia-smi queries from a list of (apps_text, gpus_text)."""
    calls = []

    def run_command(argv):
        calls.append(argv)
        index = min(len([c for c in calls if c[1].startswith('--query-compute-apps')]) - 1, len(readings) - 1)
        reading = readings[max(index, 0)]
        if reading is None:
            return 9, '', 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver'
        if argv[1].startswith('--query-compute-apps'):
            return 0, reading[0], ''
        return 0, reading[1], ''
    return run_command, calls


def test_wait_gpu_release_nvidia_smi_releases():
    run_command, calls = fake_smi([('568, 4334\n', '0, 4343\n1, 4343\n'), (None), ('', '0, 4343\n1, 0\n'),
                                   ('', '0, 3\n1, 0\n')])
    clock = FakeClock()
    released, seconds, state = sp.wait_gpu_release_nvidia_smi(run_command, '/usr/bin/nvidia-smi', {568}, 1024, 60,
                                                              clock=clock, sleep=clock.sleep)
    assert released and seconds == 1.5
    assert state['gpus'] == [{'index': 0, 'memory_used_mib': 3}, {'index': 1, 'memory_used_mib': 0}]
    assert calls[0] == ['/usr/bin/nvidia-smi', '--query-compute-apps=pid,used_gpu_memory',
                        '--format=csv,noheader,nounits']
    assert calls[1] == ['/usr/bin/nvidia-smi', '--query-gpu=index,memory.used', '--format=csv,noheader,nounits']


def test_wait_gpu_release_nvidia_smi_times_out():
    run_command, _calls = fake_smi([('568, 4334\n777, 100\n', '0, 4343\n')])
    clock = FakeClock()
    released, seconds, state = sp.wait_gpu_release_nvidia_smi(run_command, 'nvidia-smi', {568}, 1024, 3,
                                                              clock=clock, sleep=clock.sleep)
    assert not released and seconds >= 3
    assert state['stopped_pids_listed'] == [568]
    assert state['gpus_over_threshold'] == [{'index': 0, 'memory_used_mib': 4343}]


def test_wait_gpu_release_nvidia_smi_failing_times_out():
    run_command, _calls = fake_smi([None])
    clock = FakeClock()
    released, _seconds, state = sp.wait_gpu_release_nvidia_smi(run_command, 'nvidia-smi', {568}, 1024, 2,
                                                               clock=clock, sleep=clock.sleep)
    assert not released and 'NVIDIA-SMI has failed' in state['error']


def test_wait_gpu_release_devices(tmp_path, spawn):
    gpu = tmp_path / 'gpu'
    gpu.mkdir()
    (gpu / 'nvidia0').write_text('')
    (gpu / 'nvidia1').write_text('')
    code = 'import sys, time; f = open(%r); sys.stdout.write("ready\\n"); sys.stdout.flush(); time.sleep(60)'
    left_alone = spawn(code % str(gpu / 'nvidia0'))
    glob = str(gpu) + '/*'
    source = sp.ProcFS()
    baseline = sp.holder_baseline(source, glob)
    assert left_alone.pid in baseline
    released, _seconds, state = sp.wait_gpu_release_devices(source, glob, baseline, 1)
    assert released and state == {'holders': []}
    late = spawn(code % str(gpu / 'nvidia1'))
    released, seconds, state = sp.wait_gpu_release_devices(source, glob, baseline, 0.3)
    assert not released and seconds >= 0.3
    assert state['holders'] == [{'pid': late.pid, 'gpu_devices': [str(gpu / 'nvidia1')]}]
    assert sp.device_holders(source, glob)[left_alone.pid] == [str(gpu / 'nvidia0')]


def test_port_is_free_and_listeners():
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    try:
        assert sp.port_is_free('127.0.0.1', port)            # bound, not listening
        sock.listen(1)
        assert not sp.port_is_free('127.0.0.1', port)
        assert not sp.port_is_free('0.0.0.0', port)
        assert sp.port_is_free('192.0.2.1', port)            # not an address of this host
        assert sp.port_is_free('name.invalid', port)
        assert [pid for pid, _argv in sp.port_listeners(sp.ProcFS(), port)] == [os.getpid()]
        clock = FakeClock()
        released, seconds, busy = sp.wait_ports_free([('127.0.0.1', port)], 1, clock=clock, sleep=clock.sleep)
        assert not released and busy == [('127.0.0.1', port)]
    finally:
        sock.close()
    assert sp.port_is_free('127.0.0.1', port)
    assert sp.wait_ports_free([('127.0.0.1', port)], 1)[0]


# ------------------------------------------------------------------------------------------------
# absent(): the orchestration, on a fake /proc with the stop simulated (nothing real is signalled)
# ------------------------------------------------------------------------------------------------

def fake_stop(proc, signal_name='SIGTERM', remaining=(), errors=(), restart=None):
    """A stand-in for stop_targets that 'ends' the targets by removing them from the fake /proc."""
    def stop(targets, source, grace_period, kill_timeout, protected=(), clock=None, sleep=None):
        stopped = []
        for t in targets:
            if t.pid in remaining or t.pid in [pid for pid, _msg in errors]:
                continue
            subprocess.call(['rm', '-rf', str(proc.root / str(t.pid))])
            stopped.append({'pid': t.pid, 'main_pid': t.main_pid, 'role': t.role, 'signal': signal_name,
                            'seconds': 0.1})
        if restart:
            restart()
        return {'stopped': stopped, 'remaining': [t for t in targets if t.pid in remaining],
                'signalled': True, 'errors': list(errors)}
    return stop


BASE = {'grace_period': 1, 'kill_timeout': 1, 'gpu_release_timeout': 2, 'wait_port_free': False}


def absent(proc, params, **kwargs):
    clock = FakeClock()
    kwargs.setdefault('self_pid', SELF)
    return sp.absent(dict(BASE, **params), source=proc.source(), clock=clock, sleep=clock.sleep, **kwargs)


def test_absent_success_with_device_files(proc, monkeypatch):
    pids = add_reference_server(proc, main=100)
    proc.add(140, ['python3', 'train.py'], ppid=898, pgid=140, fds=['/dev/nvidia5'])   # unrelated, stays
    monkeypatch.setattr(sp, 'stop_targets', fake_stop(proc))
    result = absent(proc, {}, want_diff=True)
    assert result['changed'] is True and result['target_pids'] == pids
    assert [s['pid'] for s in result['stopped']] == pids
    assert result['gpu_release']['method'] == 'device-files' and result['gpu_release']['holders'] == []
    assert result['diff']['after'] == '' and len(result['diff']['before'].splitlines()) == len(pids)
    assert result['msg'].startswith('stopped 1 stray SGLang server(s), 5 process(es)')
    assert [h['pid'] for h in result['gpu_holders_unrelated']] == [140]


def test_absent_device_files_still_held(proc, monkeypatch):
    add_reference_server(proc, main=100)
    # A holder the scan could not relate appears during the stop (a child forked meanwhile, say).
    monkeypatch.setattr(sp, 'stop_targets', fake_stop(
        proc, restart=lambda: proc.add(160, ['python3', 'late.py'], ppid=1, fds=['/dev/nvidia0'])))
    with pytest.raises(sp.ModuleFailure) as failure:
        absent(proc, {})
    assert 'GPU device files (/dev/nvidia*) still held' in failure.value.msg
    assert '160 (python3 late.py) holding /dev/nvidia0' in failure.value.msg
    assert failure.value.result['stopped'] and failure.value.result['changed'] is True


def test_absent_nvidia_smi_timeout_names_holders(proc, monkeypatch):
    add_reference_server(proc, main=100)
    proc.add(140, ['python3', 'train.py', '--hf-token', 'hf_x'], ppid=898, pgid=140)
    monkeypatch.setattr(sp, 'stop_targets', fake_stop(proc))
    run_command, _calls = fake_smi([('102, 4334\n140, 2000\n', '0, 4343\n1, 2010\n')])
    with pytest.raises(sp.ModuleFailure) as failure:
        absent(proc, {'gpu_release_timeout': 3}, run_command=run_command, nvidia_smi='/usr/bin/nvidia-smi')
    msg = failure.value.msg
    assert msg.startswith('GPU memory not released 3.0 s after the stop')
    assert 'nvidia-smi still lists stopped pids [102]' in msg
    assert 'GPU 0 uses 4343 MiB (threshold 1024 MiB)' in msg and 'GPU 1 uses 2010 MiB' in msg
    assert '140 (python3 train.py --hf-token ********): 2000 MiB' in msg and 'hf_x' not in msg
    assert failure.value.result['gpu_release']['compute_apps'][0] == {'pid': 102, 'used_memory_mib': 4334}


def test_absent_nvidia_smi_released(proc, monkeypatch):
    add_reference_server(proc, main=100)
    monkeypatch.setattr(sp, 'stop_targets', fake_stop(proc))
    run_command, calls = fake_smi([('102, 4334\n', '0, 4343\n'), ('', '0, 0\n')])
    result = absent(proc, {}, run_command=run_command, nvidia_smi='/usr/bin/nvidia-smi')
    assert result['gpu_release'] == {'waited': True, 'method': 'nvidia-smi', 'seconds': 0.5,
                                     'gpus': [{'index': 0, 'memory_used_mib': 0}], 'compute_apps': [], 'holders': []}
    assert len(calls) == 4


def test_absent_wait_gpu_release_off(proc, monkeypatch):
    add_reference_server(proc, main=100)
    monkeypatch.setattr(sp, 'stop_targets', fake_stop(proc))
    result = absent(proc, {'wait_gpu_release': False}, run_command=None, nvidia_smi='/usr/bin/nvidia-smi')
    assert result['gpu_release']['waited'] is False and result['changed'] is True


def test_absent_signal_errors_fail(proc, monkeypatch):
    add_reference_server(proc, main=100)
    monkeypatch.setattr(sp, 'stop_targets', fake_stop(proc, errors=[(100, 'SIGTERM: Operation not permitted')]))
    with pytest.raises(sp.ModuleFailure) as failure:
        absent(proc, {})
    assert failure.value.msg.startswith('could not stop 100 (/root/ml-env/bin/python3 -m sglang.launch_server')
    assert failure.value.msg.endswith('SIGTERM: Operation not permitted')


def test_absent_unkillable_fails(proc, monkeypatch):
    add_reference_server(proc, main=100)
    monkeypatch.setattr(sp, 'stop_targets', fake_stop(proc, signal_name='SIGKILL', remaining=[102]))
    with pytest.raises(sp.ModuleFailure) as failure:
        absent(proc, {}, want_diff=True)
    assert failure.value.msg == ('still running 1 s after SIGKILL (uninterruptible sleep in a driver call?): '
                                 '102 (sglang::scheduler_TP0)')
    assert failure.value.result['diff']['after'] == '102 [scheduler] sglang::scheduler_TP0\n'


def test_absent_port_still_busy(proc, monkeypatch):
    add_reference_server(proc, main=100)
    proc.add(160, ['nginx: worker'], ppid=1, fds=['socket:[111]'])
    (proc.root / 'net' / 'tcp').write_text(NET_TCP + '\n')
    monkeypatch.setattr(sp, 'stop_targets', fake_stop(proc))
    calls = []

    def busy(endpoints, timeout, clock=None, sleep=None):
        calls.append((endpoints, timeout))
        return False, timeout, endpoints
    monkeypatch.setattr(sp, 'wait_ports_free', busy)
    with pytest.raises(sp.ModuleFailure) as failure:
        absent(proc, {'wait_port_free': True, 'wait_gpu_release': False, 'gpu_release_timeout': 7})
    assert calls == [([('127.0.0.1', 30000)], 7.0)]
    assert failure.value.msg == 'port(s) still in use 7.0 s after the stop: 127.0.0.1:30000 held by 160 (nginx: worker)'
    assert failure.value.result['port_release']['endpoints'] == [{'host': '127.0.0.1', 'port': 30000}]


def test_absent_restarted_by_parent_fails(proc, monkeypatch):
    proc.add(90, ['bash', '-c', 'while :; do python3 -m sglang.launch_server --port 30000; done'], ppid=898, pgid=90)
    proc.add(100, [PY, '-m', 'sglang.launch_server', '--port', '30000'], ppid=90, pgid=90)
    monkeypatch.setattr(sp, 'stop_targets', fake_stop(
        proc, restart=lambda: proc.add(101, [PY, '-m', 'sglang.launch_server', '--port', '30000'], ppid=90, pgid=90)))
    with pytest.raises(sp.ModuleFailure) as failure:
        absent(proc, {})
    assert failure.value.msg.startswith('stray SGLang server(s) running again after the stop')
    assert 'main pid 101' in failure.value.msg and 'parent 90 (bash -c while :; do python3' in failure.value.msg


def test_absent_check_mode_never_stops(proc, monkeypatch):
    add_reference_server(proc, main=100)

    def forbidden(*_args, **_kwargs):
        raise AssertionError('check mode must not stop anything')
    monkeypatch.setattr(sp, 'stop_targets', forbidden)
    result = absent(proc, {}, check_mode=True, want_diff=True)
    assert result['changed'] is True and result['stopped'] == [] and result['msg'].startswith('would stop')


def test_absent_stops_orphans_left_by_the_shutdown(proc, monkeypatch):
    add_reference_server(proc, main=100)
    rounds = []

    def leave_an_orphan():
        if not rounds:
            # The server spawned a worker while shutting down; it outlived the launcher.
            proc.add(190, ['sglang::scheduler_TP1'], ppid=1, pgid=100, fds=['/dev/nvidia1'])
        rounds.append(1)
    monkeypatch.setattr(sp, 'stop_targets', fake_stop(proc, restart=leave_an_orphan))
    result = absent(proc, {})
    assert len(rounds) == 2
    assert result['target_pids'] == [100, 101, 102, 103, 104, 190]
    assert [s['pid'] for s in result['stopped']][-1] == 190


def test_absent_orphans_that_keep_coming_fail(proc, monkeypatch):
    add_reference_server(proc, main=100)
    counter = [190]

    def another_orphan():
        counter[0] += 1
        proc.add(counter[0], ['sglang::scheduler_TP1'], ppid=1, pgid=100)
    monkeypatch.setattr(sp, 'stop_targets', fake_stop(proc, restart=another_orphan))
    with pytest.raises(sp.ModuleFailure) as failure:
        absent(proc, {})
    assert 'running again after the stop' in failure.value.msg and 'main pid 192' in failure.value.msg


def test_discover_client_and_router_holders_never_attached(proc):
    cg = '0::/system.slice/docker-abc.scope\n'   # one container: the stray server, a benchmark, a router
    add_reference_server(proc, main=100, cgroup=cg)
    proc.add(600, ['python3', '-m', 'sglang.bench_offline_throughput'], ppid=1, pgid=600, cgroup=cg)
    proc.add(601, ['sglang::scheduler'], ppid=600, pgid=600, cgroup=cg, fds=['/dev/nvidia2'])
    proc.add(602, ['python3', 'kernel-helper.py'], ppid=601, pgid=600, cgroup=cg, fds=['/dev/nvidia2'])
    proc.add(700, ['sglang::router'], ppid=1, pgid=700, cgroup=cg, fds=['/dev/nvidiactl'])
    proc.add(800, ['python3', 'notebook.py'], ppid=1, pgid=800, cgroup=cg, fds=['/dev/nvidia3'])
    found = run(proc, exclude_pids=[800])
    assert by_main(found)[100]['pids'] == [100, 101, 102, 103, 104]
    assert [h['pid'] for h in found.gpu_holders_unrelated] == [601, 602, 700, 800]


def test_split_fd_targets():
    match = sp.compile_device_glob('/dev/nvidia*')
    targets = ['/dev/null', '/dev/nvidia0', '/dev/nvidiactl (deleted)', 'socket:[12]', 'pipe:[3]', 'anon_inode:[x]']
    assert sp.split_fd_targets(targets, match) == ({'/dev/nvidia0', '/dev/nvidiactl'}, set())
    assert sp.split_fd_targets(targets, match, want_sockets=True)[1] == {'12'}


def test_discover_races_with_short_lived_processes():
    # Processes appear and vanish while the scan runs: every reader must tolerate it.
    churn = subprocess.Popen(['bash', '-c', 'for i in $(seq 400); do /bin/true & done; wait'])
    try:
        for _scan in range(15):
            found = sp.discover(include_gpu_holders=True, port=1)
            assert os.getpid() in found.protected
    finally:
        churn.wait()


def test_stop_members_get_sigterm_when_every_root_is_gone(spawn):
    root = spawn(SLEEPER)
    member = spawn(SLEEPER)
    targets = [target_of(root), target_of(member, term=False)]
    root.kill()
    root.wait()
    out = sp.stop_targets(targets, sp.ProcFS(), grace_period=5, kill_timeout=5)
    how = dict((s['pid'], s['signal']) for s in out['stopped'])
    assert how == {root.pid: 'already gone', member.pid: 'SIGTERM'}
    assert member.wait(5) == -signal.SIGTERM
