# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of module_utils/_server_log.py: the logging configuration the server loads through
SGLANG_LOGGING_CONFIG_PATH, run here the way SGLang's configure_logger runs it (json + dictConfig), with the
module imported by the name the server imports it by."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import io
import json
import logging
import logging.config
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import _server_log
from ansible_collections.inferops.sglang.plugins.module_utils._server_process.cmdline import ignores_pythonpath, log_level

MODULE_UTILS = os.path.dirname(_server_log.__file__)


@pytest.mark.parametrize('title, prefix', [
    ('sglang::scheduler_TP3', ' TP3'),
    ('sglang::scheduler_DP0_TP1', ' DP0 TP1'),
    ('sglang::scheduler_DP1_PP0_ATTN_CP1_MOE_DP0_TP3_EP3', ' DP1 PP0 ATTN_CP1 MOE_DP0 TP3 EP3'),
    ('sglang::scheduler', ''),
    ('sglang::detokenizer', ''),
    ('python3', ''),
    ('sglang::scheduler_TP3 extra', ''),
    ('', ''),
    (None, ''),
])
def test_rank_prefix_follows_the_scheduler_title(title, prefix):
    assert _server_log.rank_prefix(title) == prefix


def test_logging_config_levels_and_shape():
    config = _server_log.logging_config('DEBUG')
    assert config['root'] == {'level': 'DEBUG', 'handlers': ['stderr']}
    assert config['disable_existing_loggers'] is False
    assert config['formatters']['sglang']['()'] == 'inferops_sglang_log.ServerFormatter'
    assert json.loads(json.dumps(config)) == config
    assert _server_log.logging_config(None)['root']['level'] == 'INFO'
    for sglang_accepts in ('warn', 'FATAL', 'notset', 'Warning'):
        assert _server_log.logging_config(sglang_accepts)['root']['level'] == sglang_accepts.upper()
    for sglang_fails in ('trace', '10', 'root', 'WARNING '):
        with pytest.raises(ValueError, match='no level'):
            _server_log.logging_config(sglang_fails)


@pytest.mark.parametrize('command, ignores', [
    (['/v/bin/python3', '-m', 'sglang.launch_server', '-E'], False),
    (['/v/bin/python3', '-E', '-m', 'sglang.launch_server'], True),
    (['/v/bin/python3', '-I', '-m', 'sglang.launch_server'], True),
    (['/v/bin/python3', '-uE', '-m', 'sglang.launch_server'], True),
    (['/v/bin/python3', '-X', 'importtime', '-m', 'sglang.launch_server'], False),
    (['/v/bin/python3', '-XE', '-m', 'x'], False),
    (['/v/bin/python3', '-W', 'ignore', '-s', '-m', 'x'], False),
    (['/v/bin/sglang', 'serve', '--model-path', 'm'], False),
    (None, False),
])
def test_ignores_environment(command, ignores):
    assert ignores_pythonpath(command) is ignores
    env = _server_log.server_environment({'A': '1'}, '/c.json', '/m', ignores_pythonpath(command))
    assert ('SGLANG_LOGGING_CONFIG_PATH' not in env) is ignores


@pytest.mark.parametrize('args, config, level', [
    ({}, None, 'info'),
    ({'log-level': 'DEBUG'}, None, 'debug'),
    ({'--log_level': 'warning'}, 'log-level: error\n', 'warning'),
    ({}, 'log-level: error\n', 'error'),
    (['--model-path', 'm', '--log-level', 'debug'], None, 'debug'),
    (['--log-level=error', '--log-level', 'critical'], None, 'critical'),
    (['--log-level'], None, 'info'),
])
def test_log_level_from_arguments_over_config(args, config, level):
    assert log_level(args, config) == level


@pytest.mark.parametrize('env, expected', [
    ({}, {'PYTHONPATH': '/m', 'SGLANG_LOGGING_CONFIG_PATH': '/c.json'}),
    ({'PYTHONPATH': '/a:/b'}, {'PYTHONPATH': '/a:/b:/m', 'SGLANG_LOGGING_CONFIG_PATH': '/c.json'}),
    ({'PYTHONPATH': '/m:/a'}, {'PYTHONPATH': '/m:/a', 'SGLANG_LOGGING_CONFIG_PATH': '/c.json'}),
    ({'SGLANG_LOGGING_CONFIG_PATH': '/mine.json', 'PYTHONPATH': '/a'},
     {'SGLANG_LOGGING_CONFIG_PATH': '/mine.json', 'PYTHONPATH': '/a'}),
])
def test_server_environment_appends_and_respects_the_users_logging(env, expected):
    before = dict(env)
    assert _server_log.server_environment(env, '/c.json', '/m') == expected
    assert env == before


def test_server_environment_is_the_same_on_a_converged_run():
    """The second run's facts read PYTHONPATH (and the config path) from the running server: same names, same order."""
    first = _server_log.server_environment({'HF_HOME': '/c', 'HOME': '/h'}, '/c.json', '/m')
    again = _server_log.server_environment(
        {'HF_HOME': '/c', 'PYTHONPATH': first['PYTHONPATH'], 'HOME': '/h',
         'SGLANG_LOGGING_CONFIG_PATH': '/c.json'}, '/c.json', '/m')
    assert list(again.items()) == list(first.items())
    assert list(first)[-2:] == ['SGLANG_LOGGING_CONFIG_PATH', 'PYTHONPATH']


@pytest.fixture
def installed(tmp_path):
    """The two files as the service role installs them on the server."""
    shutil.copy(os.path.join(MODULE_UTILS, '_server_log.py'), str(tmp_path / 'inferops_sglang_log.py'))
    shutil.copy(os.path.join(MODULE_UTILS, '_secrets.py'), str(tmp_path / 'inferops_sglang_secrets.py'))
    config = tmp_path / 'sglang-logging.json'
    config.write_text(json.dumps(_server_log.logging_config('info')))
    return tmp_path


def _run_as_server(installed, body, env=None):
    """Run ``body`` in a fresh interpreter without site-packages that has only the installed copies on its path, after
    what SGLang's configure_logger does with SGLANG_LOGGING_CONFIG_PATH (json, then dictConfig)."""
    script = textwrap.dedent('''
        import json, logging, logging.config, os, sys
        with open(os.environ['SGLANG_LOGGING_CONFIG_PATH'], encoding='utf-8') as file:
            logging.config.dictConfig(json.loads(file.read()))
    ''') + textwrap.dedent(body)
    environment = {'PATH': os.environ.get('PATH', '/usr/bin:/bin'), 'PYTHONPATH': str(installed),
                   'SGLANG_LOGGING_CONFIG_PATH': str(installed / 'sglang-logging.json')}
    environment.update(env or {})
    return subprocess.run([sys.executable, '-S', '-c', script], env=environment, cwd=str(installed),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=True)


def test_installed_copy_masks_the_start_up_line_of_0_5_23_and_0_5_9(installed):
    run = _run_as_server(installed, '''
        log = logging.getLogger("sglang.srt.entrypoints.engine")
        log.info("server_args=%s", {"model_path": "/m", "api_key": "k3y-SECRET", "admin_api_key": None,
                                     "otlp_traces_endpoint": "http://u:PASSWORD@otel:4317", "port": 30000})
        log.info("server_args=ServerArgs(model_path='/m', api_key='k3y-SECRET', ssl_keyfile_password='PASSWORD')")
        log.debug("not shown at info")
        logging.getLogger("httpx").info("HTTP Request: not shown")
        log.info("server_args=%s extra=%s", "ServerArgs(api_key='k3y-SECRET')")  # a logging error
        try:
            raise ValueError("--api-key k3y-SECRET")
        except ValueError:
            log.exception("failed")
    ''')
    err = run.stderr
    assert 'k3y-SECRET' not in err and 'PASSWORD' not in err, err
    assert "'api_key': '********'" in err and "api_key='********'" in err
    assert 'http://u:********@otel:4317' in err
    assert 'not shown' not in err
    assert '--api-key ********' in err  # the traceback too
    assert "('k3y-SECRET'" not in err  # a logging error's report (handleError) is masked
    first = err.splitlines()[0]
    assert first.startswith('[') and '] server_args={' in first


def test_installed_copy_needs_no_collection(installed):
    run = _run_as_server(installed, '''
        import inferops_sglang_log
        assert 'ansible_collections' not in sys.modules
        print(inferops_sglang_log.redact_log_line("api_key='x'"))
    ''')
    assert run.stdout.strip() == "api_key='********'"


def test_formatter_takes_the_rank_prefix_and_milliseconds(monkeypatch):
    monkeypatch.setattr(_server_log, '_own_title', lambda: 'sglang::scheduler_DP0_TP3')
    monkeypatch.setenv('SGLANG_LOG_MS', '1')
    formatter = _server_log.ServerFormatter()
    record = logging.LogRecord('sglang', logging.INFO, __file__, 1, 'api_key=%r', ('s3cret',), None)
    text = formatter.format(record)
    assert text.endswith(" DP0 TP3] api_key='********'")
    assert text[20] == '.'  # [YYYY-MM-DD HH:MM:SS.mmm


def test_secrets_and_server_log_import_only_the_standard_library():
    """The server imports copies of _secrets.py and _server_log.py; no top-level import may need the collection."""
    for name in ('_secrets.py', '_server_log.py'):
        with io.open(os.path.join(MODULE_UTILS, name), encoding='utf-8') as handle:
            imports = [line for line in handle if line.startswith(('import ', 'from '))]
        assert [line for line in imports if 'ansible' in line] == [], name
