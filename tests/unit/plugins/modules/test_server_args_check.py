# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Unit tests for inferops.sglang.server_args_check.

Most tests run the module's real check program in this Python against a tiny stand-in
``sglang`` package written to a temporary directory (put on PYTHONPATH through the
module's ``environment`` option), so the program's parsing, error capture, flag
naming and secret masking are exercised without installing SGLang. The real SGLang
parser is exercised by tests/integration/test_real_sglang_parser.py.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import stat
import subprocess
import sys
import textwrap

import pytest

from ansible.module_utils import basic
from ansible.module_utils.common import warnings as ansible_warnings
from ansible_collections.inferops.sglang.tests.unit.plugins.modules.module_args import patch_module_args

from ansible_collections.inferops.sglang.plugins.module_utils import _args_check_cache
from ansible_collections.inferops.sglang.plugins.modules import server_args_check

STUB_SERVER_ARGS = textwrap.dedent('''
    import argparse
    import logging

    logger = logging.getLogger("sglang.stub")


    class _DeprecatedStoreTrue(argparse.Action):
        def __init__(self, option_strings, dest, nargs=0, **kwargs):
            super().__init__(option_strings, dest, nargs=nargs, **kwargs)

        def __call__(self, parser, namespace, values, option_string=None):
            logger.warning("\\033[1;33m'%s' is deprecated. Use '--new-flag' instead.\\033[0m" % option_string)
            setattr(namespace, self.dest, True)


    class _LoggedValue(argparse.Action):
        # Logs the value it is given, as a careless plugin or a later SGLang might.
        def __call__(self, parser, namespace, values, option_string=None):
            logger.warning("%s set to %s" % (self.dest, values))
            setattr(namespace, self.dest, values)


    class ServerArgs:
        @staticmethod
        def add_cli_args(parser):
            print("noise on stdout while building the parser")
            parser.add_argument("--model-path", "--model", required=True)
            parser.add_argument("--tp-size", "--tensor-parallel-size", type=int, default=1)
            parser.add_argument("--trust-remote-code", action="store_true")
            parser.add_argument("--cuda-graph-max-bs-decode", type=int)
            parser.add_argument("--cuda-graph-max-bs-prefill", type=int)
            parser.add_argument("--attention-backend", choices=["triton", "flashinfer"])
            parser.add_argument("--mem-fraction-static", type=float)
            parser.add_argument("--api-key", action=_LoggedValue)
            parser.add_argument("--admin-api-key", action=_LoggedValue)
            parser.add_argument("--ssl-keyfile")
            parser.add_argument("--ssl-keyfile-password", action=_LoggedValue)
            parser.add_argument("--serving-auth", dest="api_key", action=_LoggedValue)
            parser.add_argument("--otlp-traces-endpoint")
            parser.add_argument("--old-flag", action=_DeprecatedStoreTrue,
                                help="(Deprecated: use --new-flag) Old behaviour.")
            parser.add_argument("--config", type=str)
''')


@pytest.fixture
def stub_sglang(tmp_path):
    """A directory holding a stand-in ``sglang`` 9.9.9 with ``sglang.srt.server_args``."""
    root = tmp_path / 'site'
    package = root / 'sglang' / 'srt'
    package.mkdir(parents=True)
    (root / 'sglang' / '__init__.py').write_text('')
    (package / '__init__.py').write_text('')
    (package / 'server_args.py').write_text(STUB_SERVER_ARGS)
    dist = root / 'sglang-9.9.9.dist-info'
    dist.mkdir()
    (dist / 'METADATA').write_text('Metadata-Version: 2.1\nName: sglang\nVersion: 9.9.9\n')
    return str(root)


@pytest.fixture(autouse=True)
def memo_dir(tmp_path, monkeypatch):
    """The memo's default directory, for every test here: a private one under tmp_path, never /var/cache."""
    path = tmp_path / 'memo'
    monkeypatch.setattr(_args_check_cache, 'CACHE_DIR', str(path))
    return path


@pytest.fixture
def empty_path(tmp_path):
    path = tmp_path / 'empty'
    path.mkdir()
    return str(path)


class ExitJson(Exception):
    pass


class FailJson(Exception):
    pass


@pytest.fixture(autouse=True)
def capture_exits(monkeypatch):
    # Empty, of the type this ansible-core keeps them in (a dict from 2.19 on, a list before).
    monkeypatch.setattr(ansible_warnings, '_global_warnings', type(ansible_warnings._global_warnings)())

    def exit_json(self, **kwargs):
        kwargs['warnings'] = list(ansible_warnings.get_warning_messages())
        raise ExitJson(kwargs)

    def fail_json(self, msg, **kwargs):
        kwargs['msg'] = msg
        kwargs['failed'] = True
        raise FailJson(kwargs)

    monkeypatch.setattr(basic.AnsibleModule, 'exit_json', exit_json)
    monkeypatch.setattr(basic.AnsibleModule, 'fail_json', fail_json)


def run_module(params, expect):
    # Each run reports its own warnings (ansible-core before 2.19 keeps them in a list that only grows).
    ansible_warnings._global_warnings.clear()
    with patch_module_args(params):
        with pytest.raises(expect) as info:
            server_args_check.main()
    return info.value.args[0]


def params_for(stub, args, **extra):
    params = dict(python=sys.executable, args=args, environment={'PYTHONPATH': stub})
    params.update(extra)
    return params


GOOD = ['--model-path', '/does/not/exist', '--tp-size', '8', '--trust-remote-code',
        '--cuda-graph-max-bs-decode', '128', '--mem-fraction-static', '0.88']


def test_valid_command_line(stub_sglang):
    result = run_module(params_for(stub_sglang, GOOD), ExitJson)
    assert result['changed'] is False
    assert result['checked'] is True
    assert result['valid'] is True
    assert result['flag'] is None
    assert result['message'] is None
    assert result['sglang_version'] == '9.9.9'
    assert result['python_version'] == sys.version.split()[0]
    assert result['parser'] == 'sglang.srt.server_args.ServerArgs.add_cli_args'
    assert result['abbreviations'] == {}
    assert result['deprecated'] == {}
    assert isinstance(result['duration_seconds'], float)
    assert result['warnings'] == []


def test_ambiguous_flag_fails_naming_it(stub_sglang):
    args = [a if a != '--cuda-graph-max-bs-decode' else '--cuda-graph-max-bs' for a in GOOD]
    result = run_module(params_for(stub_sglang, args), FailJson)
    message = ('ambiguous option: --cuda-graph-max-bs could match '
               '--cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill')
    assert result['valid'] is False
    assert result['checked'] is True
    assert result['flag'] == '--cuda-graph-max-bs'
    assert result['message'] == message
    assert result['msg'] == "SGLang 9.9.9's own argument parser rejects --cuda-graph-max-bs: " + message


def test_unknown_flag_fails_naming_it(stub_sglang):
    result = run_module(params_for(stub_sglang, GOOD + ['--foo', '1']), FailJson)
    assert result['flag'] == '--foo'
    assert result['message'] == 'unrecognized arguments: --foo 1'


def test_bad_value_names_the_abbreviation_written(stub_sglang):
    result = run_module(params_for(stub_sglang, ['--model-path', '/m', '--tp', 'x']), FailJson)
    assert result['flag'] == '--tp'
    assert result['message'] == "argument --tp-size/--tensor-parallel-size: invalid int value: 'x'"


def test_missing_required(stub_sglang):
    result = run_module(params_for(stub_sglang, ['--tp-size', '2']), FailJson)
    assert result['flag'] == '--model-path'
    assert result['message'] == 'the following arguments are required: --model-path/--model'


def test_help_is_rejected_without_printing_on_stdout(stub_sglang):
    result = run_module(params_for(stub_sglang, ['--model-path', '/m', '--help']), FailJson)
    assert result['valid'] is False
    assert result['flag'] == '--help'


def test_abbreviation_and_deprecation_warn(stub_sglang):
    result = run_module(params_for(stub_sglang, ['--model-path', '/m', '--tp', '2', '--old-flag']), ExitJson)
    assert result['valid'] is True
    assert result['abbreviations'] == {'--tp': '--tp-size'}
    assert result['deprecated'] == {'--old-flag': '(Deprecated: use --new-flag) Old behaviour.'}
    assert result['parser_warnings'] == ["'--old-flag' is deprecated. Use '--new-flag' instead."]
    assert any('--tp is accepted only as an abbreviation of --tp-size' in w for w in result['warnings'])
    assert any('--old-flag is deprecated in SGLang 9.9.9' in w for w in result['warnings'])


def test_exact_alias_is_not_an_abbreviation(stub_sglang):
    result = run_module(params_for(stub_sglang, ['--model', '/m', '--tensor-parallel-size', '2']), ExitJson)
    assert result['abbreviations'] == {}


@pytest.mark.parametrize('secret_args', [
    ['--api-keyy', 'hunter2secret'],
    ['--api-keyy=hunter2secret'],
])
def test_secret_values_are_not_echoed(stub_sglang, secret_args):
    with patch_module_args(params_for(stub_sglang, ['--model-path', '/m'] + secret_args)):
        with pytest.raises(FailJson) as info:
            server_args_check.main()
    result = info.value.args[0]
    assert 'hunter2secret' not in json.dumps(result)
    assert '********' in result['message']
    assert result['flag'] == '--api-keyy'


def test_secret_values_are_registered_for_masking(stub_sglang, monkeypatch):
    seen = {}

    def exit_json(self, **kwargs):
        seen['no_log_values'] = set(self.no_log_values)
        raise ExitJson(kwargs)

    monkeypatch.setattr(basic.AnsibleModule, 'exit_json', exit_json)
    run_module(params_for(stub_sglang, ['--model-path', '/m', '--api-key', 'hunter2secret',
                                        '--ssl-keyfile', '/k.pem']), ExitJson)
    assert 'hunter2secret' in seen['no_log_values']
    assert '/k.pem' not in seen['no_log_values']


def test_no_sglang_fails_by_default(empty_path):
    result = run_module(params_for(empty_path, ['--model-path', '/m']), FailJson)
    assert result['checked'] is False
    assert result['valid'] is None
    assert result['sglang_version'] is None
    assert "No module named 'sglang'" in result['msg']
    assert result['msg'].startswith('Cannot check the SGLang server arguments: sglang.srt.server_args does not import')


def test_no_sglang_skips_with_fallback_skip(empty_path):
    result = run_module(params_for(empty_path, ['--model-path', '/m'], fallback='skip'), ExitJson)
    assert result['checked'] is False
    assert result['valid'] is None
    assert "No module named 'sglang'" in result['message']
    assert any('not checked' in w for w in result['warnings'])


def test_broken_sglang_counts_as_not_importable(tmp_path):
    root = tmp_path / 'broken'
    (root / 'sglang' / 'srt').mkdir(parents=True)
    (root / 'sglang' / '__init__.py').write_text('raise RuntimeError("broken install")\n')
    result = run_module(params_for(str(root), ['--model-path', '/m'], fallback='skip'), ExitJson)
    assert result['checked'] is False
    assert 'RuntimeError: broken install' in result['message']


def test_missing_interpreter(tmp_path):
    params = dict(python=str(tmp_path / 'nope' / 'python3'), args=['--model-path', '/m'])
    result = run_module(params, FailJson)
    assert 'does not exist' in result['msg']
    result = run_module(dict(params, fallback='skip'), ExitJson)
    assert result['checked'] is False


def test_relative_interpreter_is_refused():
    result = run_module(dict(python='python3', args=[], fallback='skip'), FailJson)
    assert 'absolute path' in result['msg']


def test_args_go_on_stdin_not_on_the_command_line(monkeypatch, stub_sglang):
    calls = []

    def fake_run_command(self, args, **kwargs):
        calls.append((args, kwargs))
        reply = dict(python_version='3.11.2', sglang_version='0.5.23', import_error=None, valid=True,
                     message=None, resolved=[], deprecated={}, parser_warnings=[])
        return 0, 'noise\n' + server_args_check.RESULT_MARK + json.dumps(reply) + '\n', ''

    monkeypatch.setattr(basic.AnsibleModule, 'run_command', fake_run_command)
    result = run_module(params_for(stub_sglang, ['--model-path', '/very/long/path'],
                                   environment={'SGLANG_X': 1}), ExitJson)
    assert result['valid'] is True
    # The memo's probe (the digest's inputs), then the check: neither gets the arguments on its command line.
    (probe, _probe_kwargs), (command, kwargs) = calls
    assert probe[:2] == [sys.executable, '-c'] and len(probe) == 3 and '/very/long/path' not in ' '.join(probe)
    assert command[0] == sys.executable and command[1] == '-c'
    assert len(command) == 3
    assert '/very/long/path' not in ' '.join(command)
    request = json.loads(kwargs['data'])
    assert request['args'] == ['--model-path', '/very/long/path']
    # The check program gets no copy of the secret rule: the module masks with module_utils/_secrets.
    assert set(request) == {'args', 'load_plugins', 'timeout'}
    assert kwargs['environ_update']['SGLANG_X'] == '1'
    assert kwargs['environ_update']['LC_ALL'] == 'C'
    assert kwargs['environ_update']['CUDA_VISIBLE_DEVICES'] == ''


@pytest.mark.parametrize('hide_gpus, expected', [(True, ''), (False, '0,1')])
def test_hide_gpus_overrides_the_service_environment(monkeypatch, stub_sglang, hide_gpus, expected):
    calls = []

    def fake_run_command(self, args, **kwargs):
        calls.append(kwargs)
        reply = dict(python_version='3.11.2', sglang_version='0.5.23', import_error=None, valid=True,
                     message=None, resolved=[], deprecated={}, parser_warnings=[])
        return 0, server_args_check.RESULT_MARK + json.dumps(reply) + '\n', ''

    monkeypatch.setattr(basic.AnsibleModule, 'run_command', fake_run_command)
    run_module(params_for(stub_sglang, ['--model-path', '/m'], hide_gpus=hide_gpus,
                          environment={'CUDA_VISIBLE_DEVICES': '0,1'}), ExitJson)
    assert calls[0]['environ_update']['CUDA_VISIBLE_DEVICES'] == expected


@pytest.mark.parametrize('rc, stdout, fragment', [
    (-14, '', 'did not finish within the timeout of 300 s'),
    (1, 'Traceback ...', 'exited with status 1 and no result'),
    (0, server_args_check.RESULT_MARK + '{not json', 'exited with status 0 and no result'),
])
def test_program_failures(monkeypatch, rc, stdout, fragment):
    monkeypatch.setattr(basic.AnsibleModule, 'run_command',
                        lambda self, args, **kwargs: (rc, stdout, 'some stderr'))
    result = run_module(dict(python=sys.executable, args=['--model-path', '/m'], fallback='skip'), FailJson)
    assert fragment in result['msg']
    assert result['stderr_tail'] == 'some stderr'
    assert result['checked'] is False


def test_check_mode_runs_the_same_check(stub_sglang):
    params = params_for(stub_sglang, GOOD)
    params['_ansible_check_mode'] = True
    result = run_module(params, ExitJson)
    assert result['valid'] is True
    assert result['changed'] is False


def test_documentation_matches_argument_spec():
    import yaml
    doc = yaml.safe_load(server_args_check.DOCUMENTATION)
    yaml.safe_load(server_args_check.EXAMPLES)
    returns = yaml.safe_load(server_args_check.RETURN)
    assert set(doc['options']) == {'python', 'args', 'fallback', 'environment', 'load_plugins', 'hide_gpus', 'timeout',
                                   'env_names', 'cache', 'cache_dir'}
    assert set(returns) == {'checked', 'valid', 'sglang_version', 'python_version', 'parser', 'flag', 'message',
                            'abbreviations', 'deprecated', 'parser_warnings', 'duration_seconds',
                            'env_names_unread', 'rc', 'stderr_tail', 'cached'}


def test_env_names_the_installed_sglang_never_mentions(stub_sglang):
    """Issue 15 (SGLANG_ENABLE_SPEC_V2): of the names given, those no .py source of the installed sglang package
    mentions are reported, so that the role leaves them out of the environment of that version."""
    with open(stub_sglang + '/sglang/srt/environ.py', 'w') as handle:
        handle.write('class Envs:\n    SGLANG_KNOWN_SWITCH = EnvBool(False)\n')
    result = run_module(params_for(stub_sglang, GOOD, env_names=['SGLANG_ENABLE_SPEC_V2', 'SGLANG_KNOWN_SWITCH']), ExitJson)
    assert result['env_names_unread'] == ['SGLANG_ENABLE_SPEC_V2']
    assert run_module(params_for(stub_sglang, GOOD), ExitJson)['env_names_unread'] == []


def test_env_names_unread_is_null_when_not_checked(empty_path):
    result = run_module(params_for(empty_path, GOOD, fallback='skip', env_names=['SGLANG_X']), ExitJson)
    assert result['checked'] is False and result['env_names_unread'] is None


@pytest.mark.parametrize('secret_args, flag', [
    (['--api', 'hunter2secret'], '--api'),
    (['--api=hunter2secret'], '--api'),
    (['--admin-api', 'hunter2secret'], '--admin-api'),
    (['--ssl-keyfile-p', 'hunter2secret'], '--ssl-keyfile-p'),
    # an alias that only the parser knows holds the API key (dest api_key)
    (['--serving-auth', 'hunter2secret'], '--serving-auth'),
    (['--serving-a', 'hunter2secret'], '--serving-a'),
])
def test_what_the_parser_resolves_to_a_secret_is_masked(stub_sglang, monkeypatch, secret_args, flag):
    seen = {}

    def exit_json(self, **kwargs):
        seen['no_log_values'] = set(self.no_log_values)
        raise ExitJson(kwargs)

    monkeypatch.setattr(basic.AnsibleModule, 'exit_json', exit_json)
    result = run_module(params_for(stub_sglang, ['--model-path', '/m'] + secret_args), ExitJson)
    assert result['valid'] is True
    assert 'hunter2secret' in seen['no_log_values']
    assert 'hunter2secret' not in json.dumps(result)
    assert any(w.endswith('set to ********') for w in result['parser_warnings'])


def test_ssl_keyfile_is_not_a_secret_for_the_check(stub_sglang, monkeypatch):
    seen = {}

    def exit_json(self, **kwargs):
        seen['no_log_values'] = set(self.no_log_values)
        raise ExitJson(kwargs)

    monkeypatch.setattr(basic.AnsibleModule, 'exit_json', exit_json)
    run_module(params_for(stub_sglang, ['--model-path', '/m', '--ssl-keyfile', '/k.pem']), ExitJson)
    assert '/k.pem' not in seen['no_log_values']


def test_url_passwords_are_not_echoed(stub_sglang):
    args = ['--model-path', '/m', '--otlp-traces-endpoint', 'http://u:hunter2secret@otel.example:4317', '--bogus',
            'http://u:hunter2secret@otel.example:4317']
    result = run_module(params_for(stub_sglang, args), FailJson)
    assert 'hunter2secret' not in json.dumps(result)
    assert 'http://u:********@otel.example:4317' in result['message']


# Issue 26, item 6: the memo of the check, keyed by the digest of every input it reads.

@pytest.fixture
def recorded_sglang(stub_sglang):
    """The stand-in sglang with a RECORD, as pip writes one (without it nothing identifies the files: no memo)."""
    record = os.path.join(stub_sglang, 'sglang-9.9.9.dist-info', 'RECORD')
    with open(record, 'w') as handle:
        handle.write('sglang/__init__.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0\n')
    return stub_sglang


def _count_checks(monkeypatch):
    """Counts the runs of the check program itself (not of the memo's probe)."""
    runs = []
    real = basic.AnsibleModule.run_command

    def counting(self, args, **kwargs):
        if args[-1] == server_args_check.CHECK_PROGRAM:
            runs.append(args)
        return real(self, args, **kwargs)

    monkeypatch.setattr(basic.AnsibleModule, 'run_command', counting)
    return runs


def test_second_call_is_read_from_the_memo(recorded_sglang, memo_dir, monkeypatch):
    runs = _count_checks(monkeypatch)
    first = run_module(params_for(recorded_sglang, GOOD), ExitJson)
    second = run_module(params_for(recorded_sglang, GOOD), ExitJson)
    assert (first['cached'], second['cached']) == (False, True)
    assert len(runs) == 1
    for name in server_args_check.STORED:
        assert first[name] == second[name], name
    entries = os.listdir(str(memo_dir))
    assert len(entries) == 1 and entries[0].endswith('.json')
    assert stat.S_IMODE(os.stat(str(memo_dir / entries[0])).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(str(memo_dir)).st_mode) == 0o700
    # Neither the arguments nor the environment are stored.
    assert '/does/not/exist' not in (memo_dir / entries[0]).read_text()


def test_a_rejection_is_memoized_with_its_message(recorded_sglang, monkeypatch):
    runs = _count_checks(monkeypatch)
    args = GOOD + ['--attention-backend', 'nope']
    first = run_module(params_for(recorded_sglang, args), FailJson)
    second = run_module(params_for(recorded_sglang, args), FailJson)
    assert len(runs) == 1 and second['cached'] is True
    assert second['msg'] == first['msg'] and second['flag'] == first['flag'] == '--attention-backend'


def test_warnings_are_given_again_from_the_memo(recorded_sglang):
    args = ['--model-path', '/m', '--tp', '2', '--old-flag']
    first = run_module(params_for(recorded_sglang, args), ExitJson)
    second = run_module(params_for(recorded_sglang, args), ExitJson)
    assert second['cached'] is True and second['warnings'] == first['warnings'] and len(first['warnings']) == 2


@pytest.mark.parametrize('change', ['args', 'record', 'env_name', 'env_value', 'env_names', 'hide_gpus'])
def test_any_input_change_misses(recorded_sglang, monkeypatch, change):
    runs = _count_checks(monkeypatch)
    run_module(params_for(recorded_sglang, GOOD), ExitJson)
    params = params_for(recorded_sglang, GOOD)
    if change == 'args':
        params['args'] = GOOD + ['--attention-backend', 'triton']
    elif change == 'record':
        with open(os.path.join(recorded_sglang, 'sglang-9.9.9.dist-info', 'RECORD'), 'a') as handle:
            handle.write('sglang/srt/server_args.py,sha256=x,1\n')
    elif change == 'env_name':
        params['environment'] = dict(params['environment'], SOME_NEW_NAME='x')
    elif change == 'env_value':
        params['environment'] = dict(params['environment'], SGLANG_KV_CANARY_ENABLE_TOKEN_ORACLE='1')
    elif change == 'env_names':
        params['env_names'] = ['SGLANG_X']
    else:
        params['hide_gpus'] = False
    assert run_module(params, ExitJson)['cached'] is False
    assert len(runs) == 2


def test_check_mode_reads_the_memo_and_never_writes_it(recorded_sglang, memo_dir):
    params = params_for(recorded_sglang, GOOD)
    params['_ansible_check_mode'] = True
    assert run_module(params, ExitJson)['cached'] is False
    assert not memo_dir.exists()
    run_module(params_for(recorded_sglang, GOOD), ExitJson)
    assert run_module(params, ExitJson)['cached'] is True


@pytest.mark.parametrize('case', ['no_record', 'import_error', 'load_plugins', 'cache_off', 'config_equals'])
def test_not_memoized(stub_sglang, tmp_path, memo_dir, case):
    """Failures the host can change (SGLang does not import) and checks whose inputs cannot all be digested."""
    if case == 'import_error':
        with open(os.path.join(stub_sglang, 'sglang-9.9.9.dist-info', 'RECORD'), 'w') as handle:
            handle.write('sglang/__init__.py,,\n')
        (tmp_path / 'site' / 'sglang' / 'srt' / 'server_args.py').write_text('raise ImportError("no torch")\n')
    elif case != 'no_record':
        with open(os.path.join(stub_sglang, 'sglang-9.9.9.dist-info', 'RECORD'), 'w') as handle:
            handle.write('sglang/__init__.py,,\n')
    params = params_for(stub_sglang, GOOD, fallback='skip')
    if case == 'load_plugins':
        params['load_plugins'] = True
        (tmp_path / 'site' / 'sglang' / 'srt' / 'plugins.py').write_text('def load_plugins():\n    pass\n')
    elif case == 'cache_off':
        params['cache'] = False
    elif case == 'config_equals':
        params['args'] = GOOD + ['--config=/nonexistent.yaml']
    for _attempt in range(2):
        with patch_module_args(params):
            with pytest.raises((ExitJson, FailJson)) as info:
                server_args_check.main()
        assert info.value.args[0]['cached'] is False
    assert not memo_dir.exists() or os.listdir(str(memo_dir)) == []


def test_config_file_content_is_an_input(recorded_sglang, tmp_path, monkeypatch):
    runs = _count_checks(monkeypatch)
    config = tmp_path / 'server.yaml'
    config.write_text('tp-size: 2\n')
    params = params_for(recorded_sglang, ['--model-path', '/m', '--config', str(config)])
    monkeypatch.setattr(_args_check_cache, 'file_digest', lambda path: 'a' * 64 if path == str(config) else None)
    run_module(params, (ExitJson, FailJson))
    assert run_module(params, (ExitJson, FailJson))['cached'] is True
    monkeypatch.setattr(_args_check_cache, 'file_digest', lambda path: 'b' * 64)
    assert run_module(params, (ExitJson, FailJson))['cached'] is False
    assert len(runs) == 2


STUB_CONFIG_MERGER = textwrap.dedent('''
    class ConfigArgumentMerger:
        # Stands in for SGLang's ConfigArgumentMerger: "key: value" lines become "--key value" before the CLI args.
        def __init__(self, parser):
            self.parser = parser

        def merge_config_with_args(self, cli_args):
            at = cli_args.index("--config")
            path = cli_args[at + 1]
            rest = cli_args[:at] + cli_args[at + 2:]
            merged = []
            with open(path) as handle:
                for line in handle:
                    key, _, value = line.partition(":")
                    merged += ["--" + key.strip(), value.strip()]
            return merged + rest
''')


def _config_parser_at(stub, module_path, content=STUB_CONFIG_MERGER):
    """Put the stand-in config parser at ``module_path`` (dotted, under the stub's site directory)."""
    parts = module_path.split('.')
    package = os.path.join(stub, *parts[:-1])
    os.makedirs(package, exist_ok=True)
    init = os.path.join(package, '__init__.py')
    if not os.path.exists(init):
        with open(init, 'w') as handle:
            handle.write('')
    with open(os.path.join(package, parts[-1] + '.py'), 'w') as handle:
        handle.write(content)


@pytest.mark.parametrize('module_path', [
    # SGLang 0.5.19 and later (0.5.23: sglang/srt/utils/server_args_config_parser.py)
    'sglang.srt.utils.server_args_config_parser',
    # SGLang before 0.5.19 (0.5.9: sglang/srt/server_args_config_parser.py) - field case C35
    'sglang.srt.server_args_config_parser',
])
def test_config_is_merged_by_the_installed_versions_parser(stub_sglang, tmp_path, module_path):
    """C35: ``--config`` is read with the parser module the installed SGLang has, the new path first, then the old."""
    _config_parser_at(stub_sglang, module_path)
    config = tmp_path / 'server.yaml'
    config.write_text('tp-size: two\n')
    result = run_module(params_for(stub_sglang, ['--model-path', '/m', '--config', str(config)]), FailJson)
    # The value came from the YAML through the merger: the parser saw it.
    assert "'two'" in result['msg'] and '--tp-size' in result['msg'], result['msg']
    assert 'ModuleNotFoundError' not in result['msg']
    config.write_text('tp-size: 2\n')
    assert run_module(params_for(stub_sglang, ['--model-path', '/m', '--config', str(config)]), ExitJson)['valid'] is True


def test_config_new_path_wins_over_the_old(stub_sglang, tmp_path):
    """With both modules present (an upgraded tree with a leftover file) the 0.5.19+ one is used."""
    _config_parser_at(stub_sglang, 'sglang.srt.utils.server_args_config_parser')
    _config_parser_at(stub_sglang, 'sglang.srt.server_args_config_parser', 'raise RuntimeError("old parser used")\n')
    config = tmp_path / 'server.yaml'
    config.write_text('tp-size: 4\n')
    result = run_module(params_for(stub_sglang, ['--model-path', '/m', '--config', str(config)]), ExitJson)
    assert result['valid'] is True


def test_config_without_any_parser_module_is_rejected_naming_it(stub_sglang, tmp_path):
    config = tmp_path / 'server.yaml'
    config.write_text('tp-size: 2\n')
    result = run_module(params_for(stub_sglang, ['--model-path', '/m', '--config', str(config)]), FailJson)
    assert 'ModuleNotFoundError' in result['msg']
    assert 'server_args_config_parser' in result['msg']


def test_config_parser_failing_inside_is_not_hidden_by_the_fallback(stub_sglang, tmp_path):
    """An ImportError raised inside the new module (a missing dependency) is reported, not taken for an old SGLang."""
    _config_parser_at(stub_sglang, 'sglang.srt.utils.server_args_config_parser', 'import yaml_not_installed_here\n')
    _config_parser_at(stub_sglang, 'sglang.srt.server_args_config_parser')
    config = tmp_path / 'server.yaml'
    config.write_text('tp-size: 2\n')
    result = run_module(params_for(stub_sglang, ['--model-path', '/m', '--config', str(config)]), FailJson)
    assert 'yaml_not_installed_here' in result['msg']


# The pre-flight's lookup of the memo (service_preflight_info option args_check; issue 26): the same key as the check
# the role runs (no environment option, GPUs hidden), read only, and only a verdict with nothing left to say.

def _role_python(tmp_path, site):
    """An interpreter that finds the stand-in sglang by itself, as the server's venv does (the role passes no
    environment to the check)."""
    wrapper = tmp_path / 'venv-python'
    wrapper.write_text('#!/bin/sh\nPYTHONPATH=%s exec %s "$@"\n' % (site, sys.executable))
    wrapper.chmod(0o755)
    return str(wrapper)


def _run_command(argv, environ_update=None, cwd=None):
    proc = subprocess.run(argv, env=dict(os.environ, **(environ_update or {})), cwd=cwd, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, check=False)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.parametrize('args,found', [(GOOD, True), (GOOD + ['--attention-backend', 'nope'], False),
                                        (['--model-path', '/m', '--tp', '2', '--old-flag'], False)],
                         ids=['accepted', 'rejected', 'deprecated'])
def test_the_preflight_lookup_finds_only_a_settled_verdict_of_the_same_check(recorded_sglang, tmp_path, memo_dir,
                                                                             args, found):
    python = _role_python(tmp_path, recorded_sglang)
    names = ['SGLANG_ENABLE_TORCH_COMPILE']
    before = _args_check_cache.lookup(_run_command, python, args, names)
    assert before['request'] == _args_check_cache.request_digest(python, args, names) and before['result'] is None
    assert before['duration_seconds'] >= 0
    checked = run_module(dict(python=python, args=args, env_names=names), ExitJson if found or '--old-flag' in args
                         else FailJson)
    entries = os.listdir(str(memo_dir))
    after = _args_check_cache.lookup(_run_command, python, args, names)
    assert after['request'] == before['request']
    if found:
        stored = dict((name, checked[name]) for name in server_args_check.STORED if name in checked)
        assert checked['cached'] is False and after['result'] == dict(stored, cached=True)
        assert after['result']['valid'] is True and after['result']['sglang_version'] == '9.9.9'
    else:
        assert after['result'] is None
    assert os.listdir(str(memo_dir)) == entries, 'the lookup never writes the memo'
    # Another check (arguments, names, interpreter) is another key.
    assert _args_check_cache.lookup(_run_command, python, args + ['--log-level', 'info'], names)['result'] is None
    assert _args_check_cache.lookup(_run_command, python, args, [])['result'] is None
    assert _args_check_cache.lookup(_run_command, '/nonexistent/python', args, names)['result'] is None


def test_request_digest_tells_checks_apart_and_holds_no_argument():
    digest = _args_check_cache.request_digest('/v/bin/python', ['--api-key', 'sk-1'], ['SGLANG_X'])
    assert len(digest) == 64 and 'sk-1' not in digest
    assert digest == _args_check_cache.request_digest('/v/bin/python', ('--api-key', 'sk-1'), ('SGLANG_X',))
    assert digest != _args_check_cache.request_digest('/v/bin/python', ['--api-key', 'sk-2'], ['SGLANG_X'])
    assert digest != _args_check_cache.request_digest('/v/bin/python', ['--api-key', 'sk-1'], [])
    assert digest != _args_check_cache.request_digest('/w/bin/python', ['--api-key', 'sk-1'], ['SGLANG_X'])
