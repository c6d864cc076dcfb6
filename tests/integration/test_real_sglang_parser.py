# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""inferops.sglang.server_args_check against SGLang 0.5.23's real argument parser (case C12).

Needs a venv holding SGLang 0.5.23's parser, made by tests/setup-real-sglang.sh:

    export INFEROPS_REAL_SGLANG_PYTHON="$(tests/setup-real-sglang.sh)"
    pytest tests/integration/test_real_sglang_parser.py

The module runs through `ansible localhost -c local -m inferops.sglang.server_args_check`
with the JSON stdout callback. ANSIBLE_COLLECTIONS_PATH defaults to the directory above the
`ansible_collections` package that holds inferops.sglang (override with
INFEROPS_COLLECTIONS_PATH); the `ansible` next to this Python is used (override with
INFEROPS_ANSIBLE).

The reference command line names model paths (/shared/kimi-k2.5-int4, /data/eagle3/...) that
do not exist here: the check is parse-only and must not need them.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REFERENCE_LINE = (
    '/root/ml-env/bin/python3 -m sglang.launch_server --model-path /shared/kimi-k2.5-int4 --tp 8 '
    '--trust-remote-code --cuda-graph-max-bs 128 --disable-custom-all-reduce --attention-backend flashinfer '
    '--enable-flashinfer-allreduce-fusion --speculative-algorithm EAGLE3 --speculative-draft-model-path '
    '/data/eagle3/output_100k_sglang/4 --speculative-num-steps 2 --speculative-eagle-topk 1 '
    '--mem-fraction-static 0.88'
)
REFERENCE_ARGV = shlex.split(REFERENCE_LINE)[3:]
CORRECTED_ARGV = ['--cuda-graph-max-bs-decode' if a == '--cuda-graph-max-bs' else a for a in REFERENCE_ARGV]
AMBIGUOUS = ('ambiguous option: --cuda-graph-max-bs could match '
             '--cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill')
PARSER = 'sglang.srt.server_args.ServerArgs.add_cli_args'
SECRET = 'sk-inferops-not-a-real-key-7f3a'

REAL_PYTHON = os.environ.get('INFEROPS_REAL_SGLANG_PYTHON', '')


def _skip_reason():
    if not REAL_PYTHON:
        return ('INFEROPS_REAL_SGLANG_PYTHON is not set; run '
                'export INFEROPS_REAL_SGLANG_PYTHON="$(tests/setup-real-sglang.sh)"')
    if not os.access(REAL_PYTHON, os.X_OK):
        return 'INFEROPS_REAL_SGLANG_PYTHON=%s is not an executable file' % REAL_PYTHON
    return None


def _collections_path():
    if os.environ.get('INFEROPS_COLLECTIONS_PATH'):
        return os.environ['INFEROPS_COLLECTIONS_PATH']
    import ansible_collections
    for entry in ansible_collections.__path__:
        if (Path(entry) / 'inferops' / 'sglang' / 'galaxy.yml').exists():
            return str(Path(entry).parent)
    pytest.skip('inferops.sglang is not importable as ansible_collections.inferops.sglang')


def _ansible():
    if os.environ.get('INFEROPS_ANSIBLE'):
        return os.environ['INFEROPS_ANSIBLE']
    beside = Path(sys.executable).parent / 'ansible'
    if beside.exists():
        return str(beside)
    found = shutil.which('ansible')
    if not found:
        pytest.skip('no ansible executable found')
    return found


def run_check(module_args, check_mode=False):
    """Run the module ad hoc; return (rc, the host's result, the whole stdout)."""
    env = dict(os.environ)
    env.update(
        ANSIBLE_COLLECTIONS_PATH=_collections_path(),
        ANSIBLE_LOAD_CALLBACK_PLUGINS='1',
        ANSIBLE_STDOUT_CALLBACK='ansible.builtin.json',
        ANSIBLE_NOCOLOR='1',
        ANSIBLE_LOCALHOST_WARNING='0',
        ANSIBLE_INVENTORY_UNPARSED_WARNING='0',
    )
    command = [_ansible(), 'localhost', '-c', 'local', '-m', 'inferops.sglang.server_args_check',
               '-a', json.dumps(module_args)]
    if check_mode:
        command.append('--check')
    proc = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=600, check=False)
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        pytest.fail('ansible printed no JSON (rc %s)\nstdout:\n%s\nstderr:\n%s' % (proc.returncode, proc.stdout, proc.stderr))
    result = data['plays'][0]['tasks'][0]['hosts']['localhost']
    return proc.returncode, result, proc.stdout + proc.stderr


@pytest.fixture(scope='module')
def real_version():
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    rc, result, dummy = run_check({'python': REAL_PYTHON, 'args': CORRECTED_ARGV})
    if result.get('sglang_version') != '0.5.23':
        pytest.skip('case C12 is about SGLang 0.5.23; %s has %s' % (REAL_PYTHON, result.get('sglang_version')))
    return result['sglang_version']


def test_c12_reference_command_line_is_rejected(real_version):
    rc, result, output = run_check({'python': REAL_PYTHON, 'args': REFERENCE_ARGV})
    assert rc != 0
    assert result['failed'] is True
    assert result['checked'] is True
    assert result['valid'] is False
    assert result['flag'] == '--cuda-graph-max-bs'
    assert result['message'] == AMBIGUOUS
    assert result['msg'] == "SGLang 0.5.23's own argument parser rejects --cuda-graph-max-bs: " + AMBIGUOUS
    assert result['sglang_version'] == '0.5.23'
    assert result['parser'] == PARSER
    assert result['changed'] is False
    assert result['duration_seconds'] > 0


def test_c12_reference_command_line_is_rejected_in_check_mode(real_version):
    rc, result, dummy = run_check({'python': REAL_PYTHON, 'args': REFERENCE_ARGV}, check_mode=True)
    assert rc != 0
    assert result['flag'] == '--cuda-graph-max-bs'
    assert result['message'] == AMBIGUOUS


def test_c12_corrected_command_line_passes(real_version):
    rc, result, dummy = run_check({'python': REAL_PYTHON, 'args': CORRECTED_ARGV}, check_mode=True)
    assert rc == 0, result
    assert result.get('failed', False) is False
    assert result['checked'] is True
    assert result['valid'] is True
    assert result['flag'] is None
    assert result['message'] is None
    assert result['changed'] is False
    # --tp works in 0.5.23 only as argparse's abbreviation of --tp-size: the same mechanism that
    # made --cuda-graph-max-bs ambiguous once --cuda-graph-max-bs-{decode,prefill} existed.
    assert result['abbreviations'] == {'--tp': '--tp-size'}
    assert '--enable-flashinfer-allreduce-fusion' in result['deprecated']
    assert any('--tp is accepted only as an abbreviation of --tp-size' in w for w in result['warnings'])


def test_unknown_flag_is_rejected_by_name(real_version):
    rc, result, dummy = run_check({'python': REAL_PYTHON, 'args': CORRECTED_ARGV + ['--foo', '1']})
    assert rc != 0
    assert result['flag'] == '--foo'
    assert result['message'] == 'unrecognized arguments: --foo 1'
    assert result['msg'] == "SGLang 0.5.23's own argument parser rejects --foo: unrecognized arguments: --foo 1"


def test_invalid_choice_is_rejected_by_name(real_version):
    args = ['--model-path', '/m', '--attention-backend', 'no-such-backend']
    rc, result, dummy = run_check({'python': REAL_PYTHON, 'args': args})
    assert rc != 0
    assert result['flag'] == '--attention-backend'
    assert result['message'].startswith("argument --attention-backend: invalid choice: 'no-such-backend'")


def test_config_file_is_merged_like_sglang_does(real_version, tmp_path):
    config = tmp_path / 'sglang.yaml'
    config.write_text('api-key: %s\ncuda-graph-max-bs: 128\n' % SECRET)
    rc, result, output = run_check({'python': REAL_PYTHON,
                                    'args': ['--model-path', '/m', '--config', str(config)]})
    assert rc != 0
    assert result['flag'] == '--cuda-graph-max-bs'
    assert result['message'] == AMBIGUOUS
    assert SECRET not in output

    config.write_text('api-key: %s\ncuda-graph-max-bs-decode: 128\n' % SECRET)
    rc, result, output = run_check({'python': REAL_PYTHON,
                                    'args': ['--model-path', '/m', '--config', str(config)]})
    assert rc == 0, result
    assert result['valid'] is True
    assert SECRET not in output


@pytest.mark.parametrize('secret_args', [
    ['--api-keyy', SECRET],           # misspelt: argparse echoes it as unrecognized
    ['--api-keyy=' + SECRET],
    ['--api-key', SECRET, '--bogus'],  # valid secret, another flag wrong
    ['--a=' + SECRET],                 # ambiguous abbreviation: argparse echoes the whole token
    ['--api', SECRET, '--bogus'],      # argparse expands --api to --api-key
    ['--ssl-k=' + SECRET],             # ambiguous: --ssl-keyfile or --ssl-keyfile-password
    ['--otlp-traces-endpoint', 'http://u:%s@otel.example:4317' % SECRET, '--bogus'],
])
def test_secret_values_never_echoed(real_version, secret_args):
    rc, result, output = run_check({'python': REAL_PYTHON, 'args': ['--model-path', '/m'] + secret_args})
    assert rc != 0
    assert result['valid'] is False
    assert SECRET not in output


def test_fallback_skip_without_sglang():
    system_python = '/usr/bin/python3'
    if not os.access(system_python, os.X_OK):
        pytest.skip('%s is missing' % system_python)
    probe = subprocess.run([system_python, '-c', 'import sglang'], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           check=False)
    if probe.returncode == 0:
        pytest.skip('%s has sglang installed' % system_python)
    rc, result, dummy = run_check({'python': system_python, 'args': REFERENCE_ARGV, 'fallback': 'skip'})
    assert rc == 0, result
    assert result['checked'] is False
    assert result['valid'] is None
    assert result['sglang_version'] is None
    assert "No module named 'sglang'" in result['message']
    assert any('not checked' in w for w in result['warnings'])

    rc, result, dummy = run_check({'python': system_python, 'args': REFERENCE_ARGV})
    assert rc != 0
    assert result['checked'] is False
    assert result['msg'].startswith('Cannot check the SGLang server arguments')


def test_real_configure_logger_masks_with_the_collections_logging_config(real_version, tmp_path):
    """SGLang 0.5.23's own configure_logger, given the service role's SGLANG_LOGGING_CONFIG_PATH and PYTHONPATH,
    masks the API key of its start-up line (engine.py: logger.info(f"server_args={...}")) and of any other line."""
    from ansible_collections.inferops.sglang.plugins.module_utils import _server_log
    module_utils = Path(_server_log.__file__).parent
    shutil.copy(str(module_utils / '_server_log.py'), str(tmp_path / 'inferops_sglang_log.py'))
    shutil.copy(str(module_utils / '_secrets.py'), str(tmp_path / 'inferops_sglang_secrets.py'))
    config = tmp_path / 'sglang-logging.json'
    config.write_text(json.dumps(_server_log.logging_config('info')))
    script = (
        'import logging\n'
        'from sglang.srt.utils.common import configure_logger\n'
        'configure_logger(None)\n'
        'log = logging.getLogger("sglang.srt.entrypoints.engine")\n'
        'log.info(f"server_args={ {\'model_path\': \'/m\', \'api_key\': %r, \'port\': 30000} }")\n'
        'logging.getLogger("sglang.srt.managers.scheduler").warning("--admin-api-key %s given")\n'
    ) % (SECRET, SECRET)
    env = _server_log.server_environment({'PATH': os.environ.get('PATH', '/usr/bin:/bin')}, str(config), str(tmp_path))
    proc = subprocess.run([REAL_PYTHON, '-c', script], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr
    assert SECRET not in proc.stderr + proc.stdout
    assert "] server_args={'model_path': '/m', 'api_key': '********', 'port': 30000}" in proc.stderr, proc.stderr
    assert '--admin-api-key ******** given' in proc.stderr
