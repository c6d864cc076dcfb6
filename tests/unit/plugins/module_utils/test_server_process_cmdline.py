# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of module_utils/_server_process/cmdline.py: the interpreter-like argv parser, the classification
of command lines (every decoy of the brief is in the classification table), titles, settings and --config."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


import pytest

from ansible_collections.inferops.sglang.plugins.module_utils._server_process import cmdline


# ------------------------------------------------------------------------------------------------
# parse_python_argv / classify_argv
# ------------------------------------------------------------------------------------------------

PY = '/root/ml-env/bin/python3'


@pytest.mark.parametrize('argv, expected', [
    ([PY, '-m', 'sglang.launch_server', '--tp', '8'], {'module': 'sglang.launch_server', 'args': ['--tp', '8']}),
    ([PY, '-msglang.launch_server', '--port=1'], {'module': 'sglang.launch_server', 'args': ['--port=1']}),
    ([PY, '-u', '-X', 'faulthandler', '-W', 'ignore', '-m', 'x.y'], {'module': 'x.y', 'args': []}),
    ([PY, '-uBm', 'x.y', 'a'], {'module': 'x.y', 'args': ['a']}),
    ([PY, '-uE', '-X', 'importtime', '-I', '-m', 'x'], {'module': 'x', 'flags': 'uEI'}),
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
    parsed = cmdline.parse_python_argv(argv)
    assert parsed is not None
    for key, value in expected.items():
        assert parsed[key] == value, key


@pytest.mark.parametrize('argv', [
    [], ['bash', '-c', 'python -m x'], ['/usr/bin/vim', 'launch_server.py'], ['python-config'],
    ['pythonista'], ['sglang::scheduler_TP0'],
])
def test_parse_python_argv_not_python(argv):
    assert cmdline.parse_python_argv(argv) is None


CLASSIFY_TABLE = [
    # id, argv, kind, module, args
    ('launch_server', [PY, '-m', 'sglang.launch_server', '--model-path', '/m', '--tp', '8'],
     cmdline.SERVER, 'sglang.launch_server', ['--model-path', '/m', '--tp', '8']),
    ('launch_server_python_opts', ['python3', '-u', '-X', 'dev', '-m', 'sglang.launch_server'],
     cmdline.SERVER, 'sglang.launch_server', []),
    ('launch_server_attached', ['python', '-msglang.launch_server', '--port=30001'],
     cmdline.SERVER, 'sglang.launch_server', ['--port=30001']),
    ('sglang_serve_console_script', ['/venv/bin/python3', '/venv/bin/sglang', 'serve', '--model-path', '/m'],
     cmdline.SERVER, 'sglang serve', ['--model-path', '/m']),
    ('sglang_serve_binary', ['/venv/bin/sglang', 'serve', '/m'], cmdline.SERVER, 'sglang serve', ['/m']),
    ('sglang_cli_main_serve', ['python3', '-m', 'sglang.cli.main', 'serve', '--tp', '2'],
     cmdline.SERVER, 'sglang serve', ['--tp', '2']),
    ('launch_server_script', ['python3', '/src/sglang/python/sglang/launch_server.py', '--tp', '2'],
     cmdline.SERVER, 'sglang.launch_server', ['--tp', '2']),
    ('srt_module_candidate', ['python3', '-m', 'sglang.srt.entrypoints.http_server', '--port', '1'],
     cmdline.CANDIDATE, 'sglang.srt.entrypoints.http_server', ['--port', '1']),
    ('data_parallel_candidate', ['python3', '-m', 'sglang.data_parallel_server'],
     cmdline.CANDIDATE, 'sglang.data_parallel_server', []),
    ('scheduler_title', ['sglang::scheduler_TP0'], cmdline.TITLED, None, []),
    ('dp_scheduler_title', ['sglang::scheduler_DP1_TP1_EP1'], cmdline.TITLED, None, []),
    ('detokenizer_title', ['sglang::detokenizer'], cmdline.TITLED, None, []),
    ('controller_title', ['sglang::data_parallel_controller'], cmdline.TITLED, None, []),
    ('tokenizer_worker_title', ['sglang::tokenizer_worker:1234'], cmdline.TITLED, None, []),
    ('diffusion_title', ['sgl_diffusion::scheduler_0'], cmdline.TITLED, None, []),
    # Decoys: never a server.
    ('router_title', ['sglang::router'], cmdline.ROUTER, None, []),
    ('router_title_exec_a', ['sglang::router', '60'], cmdline.ROUTER, None, []),
    ('router_module', ['python3', '-m', 'sglang_router.launch_router', '--worker-urls', 'x'],
     cmdline.ROUTER, 'sglang_router.launch_router', ['--worker-urls', 'x']),
    ('pd_launch_lb', ['python3', '-m', 'sglang.srt.disaggregation.launch_lb', '--port', '8000'],
     cmdline.ROUTER, 'sglang.srt.disaggregation.launch_lb', ['--port', '8000']),
    ('pd_mini_lb', ['python3', '-m', 'sglang.srt.disaggregation.mini_lb'],
     cmdline.ROUTER, 'sglang.srt.disaggregation.mini_lb', []),
    ('bench_serving', ['python3', '-m', 'sglang.bench_serving', '--port', '30000'],
     cmdline.CLIENT, 'sglang.bench_serving', ['--port', '30000']),
    ('bench_one_batch_server', ['python3', '-m', 'sglang.bench_one_batch_server', '--model-path', '/m'],
     cmdline.CLIENT, 'sglang.bench_one_batch_server', ['--model-path', '/m']),
    ('bench_offline', ['python3', '-m', 'sglang.bench_offline_throughput'], cmdline.CLIENT,
     'sglang.bench_offline_throughput', []),
    ('sglang_test', ['python3', '-m', 'sglang.test.run_eval'], cmdline.CLIENT, 'sglang.test.run_eval', []),
    ('check_env', ['python3', '-m', 'sglang.check_env'], cmdline.TOOL, 'sglang.check_env', []),
    ('sglang_version', ['/venv/bin/python3', '/venv/bin/sglang', 'version'], cmdline.TOOL, 'sglang', ['version']),
    ('grep', ['grep', 'sglang.launch_server'], cmdline.MENTION, None, []),
    ('pgrep', ['pgrep', '-f', 'sglang::'], cmdline.MENTION, None, []),
    ('vim', ['vim', '/src/sglang/python/sglang/launch_server.py'], cmdline.MENTION, None, []),
    ('tail', ['tail', '-f', 'sglang.log'], cmdline.MENTION, None, []),
    ('python_c_decoy', ['python3', '-c', 'import time; time.sleep(60)', 'launch_server.py'], cmdline.MENTION, None, []),
    ('python_c_mentions_module', ['python3', '-c', 'import os; os.system("python -m sglang.launch_server")'],
     cmdline.MENTION, None, []),
    ('pip_install', ['/venv/bin/python3', '/venv/bin/pip', 'install', 'sglang'], cmdline.MENTION, None, []),
    ('python_m_pip', ['python3', '-m', 'pip', 'install', 'sglang[all]'], cmdline.MENTION, None, []),
    ('pip_binary', ['pip', 'install', 'sglang'], cmdline.MENTION, None, []),
    ('bash_c_wrapper', ['bash', '-c', 'python -m sglang.launch_server --tp 2 > sglang.log 2>&1'],
     cmdline.MENTION, None, []),
    ('sh_c_wrapper', ['/bin/sh', '-c', 'exec python3 -m sglang.launch_server'], cmdline.MENTION, None, []),
    ('nohup_not_execd_yet', ['nohup', 'python3', '-m', 'sglang.launch_server'], cmdline.MENTION, None, []),
    ('unrelated_python_script', ['python3', '/opt/app/serve.py', '--model', 'sglang'], cmdline.MENTION, None, []),
    ('ansible_adhoc', ['/venv/bin/python3', '/venv/bin/ansible', 'localhost', '-m', 'inferops.sglang.server_process'],
     cmdline.MENTION, None, []),
    ('spawn_child', ['python3', '-c', 'from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=5, '
                     'pipe_handle=7)', '--multiprocessing-fork'], cmdline.MENTION, None, []),
    ('unrelated', ['sleep', '60'], None, None, []),
]


@pytest.mark.parametrize('case, argv, kind, module, args', CLASSIFY_TABLE, ids=[row[0] for row in CLASSIFY_TABLE])
def test_classify_argv(case, argv, kind, module, args):
    c = cmdline.classify_argv(argv)
    if case == 'unrelated':
        # Only processes whose command line mentions sgl are classified by discovery; anything else
        # with no sglang module reads as a mention (harmless) - never as a server.
        assert c.kind != cmdline.SERVER
        return
    assert c.kind == kind
    assert c.module == module
    assert c.args == args
    if kind not in (cmdline.SERVER,):
        assert c.reason


@pytest.mark.parametrize('comm, kind', [
    ('sglang::schedul', cmdline.TITLED),   # only comm set (15 chars), argv untouched
    ('sglang::router', cmdline.ROUTER),
    ('python3', cmdline.MENTION),
])
def test_classify_by_comm(comm, kind):
    argv = ['python3', '-c', 'from multiprocessing.spawn import spawn_main; spawn_main()', '--multiprocessing-fork']
    assert cmdline.classify_argv(argv, comm).kind == kind


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
    assert cmdline.role_from_title(title) == role


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
    settings = cmdline.server_settings(args, config)
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
    assert cmdline.parse_config_scalars(text) == {
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
    assert cmdline.config_path_of(args) == path


C14_ARGS = {'model-path': '/models/m', 'config': '/etc/sglang/server.yaml'}
C14_YAML = '---\nhost: 0.0.0.0\nport: 8000\ntp-size: 4\n'


def test_c14_config_file_settings_count_as_flags():
    """C14: the YAML's host, port and tp-size, as text or as a parsed mapping, count exactly as flags."""
    for config in (C14_YAML, {'host': '0.0.0.0', 'port': 8000, 'tp-size': 4}):
        assert cmdline.server_settings(C14_ARGS, config) == {'host': '0.0.0.0', 'port': 8000, 'tp': 4, 'dp': 1, 'pp': 1}
        assert cmdline.gpus_needed(C14_ARGS, config) == 4


def test_c14_variant_tensor_parallel_size_in_the_arguments():
    """C14 variant: tensor-parallel-size in the arguments; the YAML's tp-size is overridden by it, as in SGLang."""
    args = dict(C14_ARGS, **{'tensor-parallel-size': 4})
    assert cmdline.gpus_needed(args, 'port: 8000\n') == 4
    assert cmdline.server_settings(args, 'port: 8000\n')['port'] == 8000
    assert cmdline.gpus_needed(dict(C14_ARGS, tp=2), C14_YAML) == 2


@pytest.mark.parametrize('text, tp', [
    ('tensor-parallel-size: 4\n', 4),
    ('tp: 4\n', 4),
    ('tp-size: "4"\n', 4),
    ("tp-size: '4'  # comment\n", 4),
    ('tp-size: 4\r\nport: 8000\r\n', 4),
    ('tp-size: 2\ntp-size: 4\n', 4),
    ('dp-size: 2\ntp-size: 2\nenable-dp-attention: true\n', 2),
    ('dp-size: 2\ntp-size: 2\nenable-dp-attention: false\n', 4),
    ('dp-size: 2\ntp-size: 2\nenable-dp-attention: null\n', 4),
    ('data-parallel-size: 2\npipeline-parallel-size: 2\n', 4),
])
def test_c14_every_alias_and_yaml_form_in_the_config_file(text, tp):
    """C14: every alias SGLang accepts, and quoted/commented/CRLF forms of the YAML."""
    assert cmdline.gpus_needed({'model-path': '/m'}, text) == tp


def test_config_values_refuses_other_types():
    with pytest.raises(TypeError):
        cmdline.config_values(['port: 1'])
    assert cmdline.config_values(None) == {}
