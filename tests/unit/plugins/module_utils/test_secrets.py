# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of module_utils/_secrets.py: the one rule of which flags and variables hold secrets, as the
server argument helpers (argv rendering, the argument check) and process discovery apply it."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import argparse

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import _secrets
from ansible_collections.inferops.sglang.plugins.module_utils._secrets import (
    MASK,
    NOT_SECRET_FLAG_SOURCES,
    NOT_SECRET_FLAGS,
    SECRET_FLAGS,
    is_secret_env_name,
    flag_name,
    is_secret_flag,
    mask_values,
    redact_args,
    redact_argv,
    redact_env,
    redacted_flags,
    secret_flags,
    secret_values,
    url_passwords,
)


def test_one_mask():
    assert MASK == '********'


@pytest.mark.parametrize('flag, secret', [
    ('api-key', True),
    ('--api-key', True),
    ('--api_key', True),
    ('--api-key=x', True),
    ('admin-api-key', True),
    ('ssl-keyfile-password', True),
    ('ssl-keyfile', False),
    ('tls-key-path', False),
    ('client-key-path', False),
    ('model-path', False),
    ('max-total-tokens', False),
])
def test_is_secret_flag(flag, secret):
    assert is_secret_flag(flag) is secret


@pytest.mark.parametrize('flag', [
    'api-key', 'admin-api-key', 'control-plane-api-keys', 'oracle-password', 'postgres-db-url', 'redis-url',
    'ssl-keyfile-password', 'hf-token', 'HF_TOKEN', 'db-password', 'client-secret', 'aws-credentials', '--token',
    'api-k', 'api-keyy', 'redis_url', '--postgres-db-url=postgres://u:p@h/db',
])
def test_is_secret_flag_knows(flag):
    assert is_secret_flag(flag) is True


@pytest.mark.parametrize('flag', [
    'max-total-tokens', 'tokenizer-path', 'tokenizer-mode', 'ssl-keyfile', 'skip-tokenizer-init', 'kv-cache-dtype',
    'speculative-token-map', 'speculative-num-draft-tokens', 'bucket-time-to-first-token', 'port', 'policy',
    'model-path', 'b', '', '--', 'tbo-token-distribution-threshold', 'kt-max-deferred-experts-per-token',
    'prefill-delayer-token-usage-low-watermark', 'port', 'otlp-traces-endpoint',
])
def test_is_secret_flag_leaves_alone(flag):
    assert is_secret_flag(flag) is False


def test_not_secret_flags_are_not_secret_flags():
    assert not set(NOT_SECRET_FLAGS) & set(SECRET_FLAGS)


@pytest.mark.parametrize('tokens, expected', [
    (['--api-key', 'k1', '--tp', '8'], ['--api-key', MASK, '--tp', '8']),
    (['--api-key=k1'], ['--api-key=' + MASK]),
    (['--admin-api-key', 'k2'], ['--admin-api-key', MASK]),
    (['--api-k', 'k3'], ['--api-k', MASK]),        # argparse abbreviation
    (['--api-keyy', 'k4'], ['--api-keyy', MASK]),  # misspelling argparse would report
    (['--ssl-keyfile-password', 'p'], ['--ssl-keyfile-password', MASK]),
    (['--ssl-keyfile', '/k.pem'], ['--ssl-keyfile', '/k.pem']),
    (['--watermark-config', '{"key":"w"}'], ['--watermark-config', MASK]),
    (['--watermark-config', '/w.json'], ['--watermark-config', '/w.json']),
    (['--api', 'x'], ['--api', MASK]),  # argparse expands it to --api-key
    (['--api=x'], ['--api=' + MASK]),
    (['--admin-api', 'x'], ['--admin-api', MASK]),
    (['--a', 'x'], ['--a', MASK]),
    (['--ssl-keyfile-p', 'x'], ['--ssl-keyfile-p', MASK]),
    (['--otlp-traces-endpoint', 'http://u:pw@otel.example:4317'],
     ['--otlp-traces-endpoint', 'http://u:' + MASK + '@otel.example:4317']),
    (['--otlp-traces-endpoint=http://u:pw@otel:4317'], ['--otlp-traces-endpoint=http://u:' + MASK + '@otel:4317']),
    (['--ap=x'], ['--ap=' + MASK]),  # argparse would echo it whole as ambiguous
    (['--a=x'], ['--a=' + MASK]),
    (['--b=x'], ['--b=x']),
])
def test_redact_argv(tokens, expected):
    assert redact_argv(tokens) == expected


@pytest.mark.parametrize('flag', [
    '--api', '--api-k', '--api-ke', '--ap', '--a', '--admin-api', '--admin', '--admin-api-k', '--ssl-keyfile-p',
    '--ssl-keyfile-', '--ssl', '--control-plane-api', '--oracle-pass', '--postgres', '--redis', '--api=K',
    '--admin-api=K',
])
def test_every_prefix_of_a_secret_flag_is_secret(flag):
    # argparse (allow_abbrev, SGLang's parser) expands a unique prefix of a long option to it.
    assert is_secret_flag(flag) is True
    assert secret_flags([flag, 'K']) == [flag_name(flag)]


@pytest.mark.parametrize('flag', NOT_SECRET_FLAGS)
def test_exact_flags_that_look_secret_are_not(flag):
    # An exact option name wins over argparse's prefix matching: --ssl-keyfile is not --ssl-keyfile-password.
    assert is_secret_flag(flag) is False
    assert redact_argv(['--' + flag, '/p']) == ['--' + flag, '/p']


def test_every_not_secret_flag_names_its_source():
    assert all(source.strip() for _name, source in NOT_SECRET_FLAG_SOURCES)
    assert len(set(NOT_SECRET_FLAGS)) == len(NOT_SECRET_FLAG_SOURCES)


def test_secret_field_case_api_abbreviation():
    # field case: ``api: KEY123`` in the server arguments and ``--api KEY123`` on an adopted server's argv.
    assert secret_flags({'model-path': '/models/m', 'api': 'KEY123'}) == ['api']
    assert redact_args({'model-path': '/models/m', 'api': 'KEY123'}) == {'model-path': '/models/m', 'api': MASK}
    argv = ['--model-path', '/models/m', '--api', 'KEY123']
    assert redacted_flags(argv) == ['--api']
    assert 'KEY123' not in redact_argv(argv)
    assert secret_values(argv) == ['KEY123']


def sglang_like_parser():
    """An argparse parser with SGLang 0.5.23's spelling of the flags that matter here, and one option whose
    spelling the name rule cannot see but whose ``dest`` is the API key (as a later SGLang might add)."""
    parser = argparse.ArgumentParser(prog='sglang serve')
    parser.add_argument('--model-path', '--model')
    parser.add_argument('--api-key')
    parser.add_argument('--admin-api-key')
    parser.add_argument('--ssl-keyfile')
    parser.add_argument('--ssl-keyfile-password')
    parser.add_argument('--ssl-certfile')
    parser.add_argument('--served-model-name')
    parser.add_argument('--serving-auth', dest='api_key')
    return parser


def argparse_resolver(parser):
    """``'--api'`` -> the dest that PARSER resolves it to (argparse's own matching: an exact name wins, then a
    unique prefix), or None."""
    def resolve(token):
        if token in parser._option_string_actions:
            return parser._option_string_actions[token].dest
        matches = [o for o in parser._option_string_actions if o.startswith(token)]
        return parser._option_string_actions[matches[0]].dest if len(matches) == 1 else None
    return resolve


@pytest.mark.parametrize('argv, value, flag', [
    (['--api', 'K1'], 'K1', '--api'),
    (['--api=K1'], 'K1', '--api'),
    (['--admin-api', 'K1'], 'K1', '--admin-api'),
    (['--ssl-keyfile-p', 'K1'], 'K1', '--ssl-keyfile-p'),
    (['--serving-auth', 'K1'], 'K1', '--serving-auth'),
    (['--serving-a=K1'], 'K1', '--serving-a'),
])
def test_parser_resolution_hides_what_the_parser_takes_for_a_secret(argv, value, flag):
    parser = sglang_like_parser()
    resolve = argparse_resolver(parser)
    assert parser.parse_args(['--model-path', '/m'] + argv).api_key in (value, None)
    assert value not in redact_argv(argv, resolve=resolve)
    assert redacted_flags(argv, resolve=resolve) == [flag]
    assert secret_values(argv, resolve=resolve) == [value]


@pytest.mark.parametrize('argv', [
    ['--ssl-keyfile', '/k.pem'],
    ['--ssl-certfile', '/c.pem'],
    ['--served-model-name', 'm'],
    ['--serv', 'x'],  # ambiguous for the parser: resolves to nothing
])
def test_parser_resolution_leaves_other_flags_alone(argv):
    resolve = argparse_resolver(sglang_like_parser())
    assert redact_argv(argv, resolve=resolve) == argv
    assert secret_values(argv, resolve=resolve) == []


def test_url_passwords_in_values():
    assert url_passwords('http://u:PASS@otel.example:4317') == ['PASS']
    assert url_passwords('http://:PASS@otel.example:4317') == ['PASS']
    assert url_passwords('http://u@otel.example:4317') == []
    assert url_passwords(['a', {'k': 'redis://x:y@r:6379'}]) == ['y']
    assert url_passwords(None) == [] and url_passwords(8192) == []
    assert url_passwords('http://u:p@ss@h/x') == ['p@ss']


def test_url_credentials_in_argument_values():
    args = {'otlp-traces-endpoint': 'http://u:PASS@otel.example:4317', 'port': 30000,
            'encoder-urls': ['http://a:B@e1:1', 'http://e2:2'], 'api-key': 'K'}
    assert secret_flags(args) == ['api-key', 'encoder-urls', 'otlp-traces-endpoint']
    assert redact_args(args) == {'otlp-traces-endpoint': 'http://u:' + MASK + '@otel.example:4317', 'port': 30000,
                                 'encoder-urls': ['http://a:' + MASK + '@e1:1', 'http://e2:2'], 'api-key': MASK}
    argv = ['--otlp-traces-endpoint', 'http://u:PASS@otel.example:4317', '--port', '30000']
    assert redacted_flags(argv) == ['--otlp-traces-endpoint']
    assert secret_values(argv) == ['PASS']
    assert secret_flags(argv) == ['otlp-traces-endpoint']


def test_mask_values():
    assert mask_values('bad value K123 and http://u:PW@h', ['K1', 'K123']) == 'bad value ' + MASK + ' and http://u:' + MASK + '@h'
    assert mask_values(None, ['x']) is None


def test_secret_values():
    tokens = ['--model-path', '/m', '--api-key', 'k1', '--admin-api-key=k2', '--api-key', '']
    assert secret_values(tokens) == ['k1', 'k2']


@pytest.mark.parametrize('argv, expected, hidden', [
    (['--api-key', 'sk-1', '--port', '1'], ['--api-key', MASK, '--port', '1'], ['--api-key']),
    (['--api-key=sk-1'], ['--api-key=' + MASK], ['--api-key']),
    (['--admin-api-key', 'a', '--hf-token=b'], ['--admin-api-key', MASK, '--hf-token=' + MASK],
     ['--admin-api-key', '--hf-token']),
    (['--ssl-keyfile-password', 'p'], ['--ssl-keyfile-password', MASK], ['--ssl-keyfile-password']),
    (['--max-total-tokens', '8192', '--tokenizer-path', '/t', '--skip-tokenizer-init'],
     ['--max-total-tokens', '8192', '--tokenizer-path', '/t', '--skip-tokenizer-init'], []),
    (['--kv-cache-dtype', 'fp8', '--ssl-keyfile', '/k.pem'], ['--kv-cache-dtype', 'fp8', '--ssl-keyfile', '/k.pem'],
     []),
    (['--api-key'], ['--api-key'], ['--api-key']),
    (['python3', '-m', 'sglang.launch_server'], ['python3', '-m', 'sglang.launch_server'], []),
])
def test_redact_process_command_lines(argv, expected, hidden):
    assert (redact_argv(argv), redacted_flags(argv)) == (expected, hidden)


def test_redact_env():
    env = {'HF_TOKEN': 'hf_x', 'OPENAI_API_KEY': 'k', 'db_password': 'p', 'AWS_SECRET_ACCESS_KEY': 's',
           'GOOGLE_APPLICATION_CREDENTIALS': '/c.json', 'PATH': '/bin', 'CUDA_HOME': '/usr/local/cuda'}
    redacted, hidden = redact_env(env)
    assert redacted['PATH'] == '/bin' and redacted['CUDA_HOME'] == '/usr/local/cuda'
    assert hidden == ['AWS_SECRET_ACCESS_KEY', 'GOOGLE_APPLICATION_CREDENTIALS', 'HF_TOKEN', 'OPENAI_API_KEY',
                      'db_password']
    assert all(redacted[name] == MASK for name in hidden)


@pytest.mark.parametrize('name, secret', [
    ('HF_TOKEN', True), ('OPENAI_API_KEY', True), ('db_password', True), ('GOOGLE_APPLICATION_CREDENTIALS', True),
    ('PATH', False), ('CUDA_HOME', False), ('NCCL_PROTO', False),
    ('DB_PASSWD', True), ('redis_passwd', True), ('SSL_KEY_PASSPHRASE', True), ('MYSQL_PWD', True),
    ('PWD', False), ('OLDPWD', False), ('PASSTHROUGH_MODE', False),
])
def test_is_secret_env_name(name, secret):
    assert is_secret_env_name(name) is secret


@pytest.mark.parametrize('args, expected', [
    ({'model-path': '/m', 'api-key': 'k', 'max-total-tokens': 8192}, ['api-key']),
    ({'--admin_api_key': 'k', 'tokenizer-path': '/t', 'tokenizer-mode': 'auto', 'ssl-keyfile': '/k.pem'},
     ['admin-api-key']),
    ({'control-plane-api-keys': ['a', 'b'], 'oracle-password': 'p', 'postgres-db-url': 'u', 'redis-url': 'r',
      'policy': 'cache_aware'}, ['control-plane-api-keys', 'oracle-password', 'postgres-db-url', 'redis-url']),
    ({'watermark-config': '/w.json'}, []),
    ({'watermark-config': {'key': 'w'}}, ['watermark-config']),
    ({'hf_token': 'x', 'hf-token': 'y'}, ['hf-token']),
    ({}, []),
    (['--model-path', '/m', '--api-key', 'k', '--redis-url=redis://x', '--max-total-tokens', '1'],
     ['api-key', 'redis-url']),
    ([], []),
])
def test_secret_flags(args, expected):
    assert secret_flags(args) == expected


def test_secret_flags_refuses_other_input():
    with pytest.raises(TypeError):
        secret_flags('--api-key x')


def test_redact_args():
    args = {'api-key': 'k', 'max-total-tokens': 8192, '--hf_token': 'x', 'watermark-config': '/w.json'}
    redacted = redact_args(args)
    assert redacted == {'api-key': MASK, 'max-total-tokens': 8192, '--hf_token': MASK, 'watermark-config': '/w.json'}
    assert list(redacted) == list(args)
    assert args['api-key'] == 'k'
    with pytest.raises(TypeError):
        redact_args(['--api-key', 'k'])


@pytest.mark.parametrize('value,want', [
    ('http://user:pa55w0rd@proxy.example:3128', 'http://user:********@proxy.example:3128'),
    ('https://:tok@h/x', 'https://:********@h/x'),
    ('postgres://u:p@db:5432/x,redis://a:b@r:6379', 'postgres://u:********@db:5432/x,redis://a:********@r:6379'),
    ('http://proxy.example:3128', 'http://proxy.example:3128'),
    ('http://user@proxy.example:3128', 'http://user@proxy.example:3128'),
    ('/usr/local/cuda-13.0/lib64', '/usr/local/cuda-13.0/lib64'),
    # A user name holding a raw '@' (an e-mail address): URL parsers (urllib, requests, curl) take the user
    # information up to the last '@' of the authority.
    ('http://john@corp.example:Secret1@proxy:3128', 'http://john@corp.example:********@proxy:3128'),
    ('http://a@b:c@d@proxy:3128/x', 'http://a@b:********@proxy:3128/x'),
    ('http://user@proxy.example:3128/a@b', 'http://user@proxy.example:3128/a@b'),
    # Without a scheme, as curl and requests take a proxy variable's value (user:password@host:port).
    ('john:Secret1@proxy.example:3128', 'john:********@proxy.example:3128'),
    ('john:Secret1@proxy', 'john:********@proxy'),
    ('repo:tag@sha256:0123abcd', 'repo:tag@sha256:0123abcd'),
    ('org/model:v1@main', 'org/model:v1@main'),
])
def test_redact_url_passwords(value, want):
    from ansible_collections.inferops.sglang.plugins.module_utils._secrets import redact_url_passwords
    assert redact_url_passwords(value) == (want, want != value)


def test_redact_env_masks_passwords_inside_urls():
    redacted, hidden = redact_env({'HTTPS_PROXY': 'http://u:secretpw@proxy:3128', 'NCCL_PROTO': 'LL', 'HF_TOKEN': 'hf_x'})
    assert redacted == {'HTTPS_PROXY': 'http://u:********@proxy:3128', 'NCCL_PROTO': 'LL', 'HF_TOKEN': '********'}
    assert hidden == ['HF_TOKEN', 'HTTPS_PROXY']


@pytest.mark.parametrize('value', ['=a:' * 30000, 'x' * 100000 + '://u:p@h', 'a1' * 50000 + '://x', ',a:b@' * 20000 + '/'])
def test_url_passwords_are_found_in_linear_time(value):
    # A process's argument (up to 128 KiB) is anyone's text: a quadratic search took minutes on such values.
    import time
    from ansible_collections.inferops.sglang.plugins.module_utils._secrets import redact_url_passwords
    started = time.time()
    redact_url_passwords(value)
    url_passwords(value)
    assert time.time() - started < 5.0


@pytest.mark.parametrize("line, expected", [
    ("[2026-01-01 10:00:00] server_args=ServerArgs(model_path='/m', api_key='s3cret', admin_api_key=None, "
     "ssl_keyfile='/etc/k.pem', ssl_keyfile_password='p w', max_total_tokens=5, hf_token=hf_abc)",
     "[2026-01-01 10:00:00] server_args=ServerArgs(model_path='/m', api_key='********', admin_api_key=None, "
     "ssl_keyfile='/etc/k.pem', ssl_keyfile_password='********', max_total_tokens=5, hf_token=********)"),
    ("python -m sglang.launch_server --api-key s3cret --port 30000 --admin-api-key=adm --ssl-keyfile /k.pem",
     "python -m sglang.launch_server --api-key ******** --port 30000 --admin-api-key=******** --ssl-keyfile /k.pem"),
    ("--api-key --port 1", "--api-key --port 1"),
    # 0.5.23: server_args={...} (a dict repr of ServerArgs.resolved_dict())
    ("[2026-12-01 10:00:00] server_args={'model_path': '/m', 'api_key': 'k3y', 'admin_api_key': None, 'port': 30000}",
     "[2026-12-01 10:00:00] server_args={'model_path': '/m', 'api_key': '********', 'admin_api_key': None, 'port': 30000}"),
    ("{'api_key': 's3cret', 'port': 30000, \"admin_api_key\": \"adm\"}",
     "{'api_key': '********', 'port': 30000, \"admin_api_key\": \"********\"}"),
    ("api_key='it\\'s' and more", "api_key='********' and more"),
    ("Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
     "Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)"),
    ("max_total_tokens=1 tokenizer_path='/t'", "max_total_tokens=1 tokenizer_path='/t'"),
    # A password inside a URL value (SGLang logs its server_args at start-up), in each shape.
    ("server_args=ServerArgs(otlp_traces_endpoint='http://u:PASS@otel.example:4317', port=30000)",
     "server_args=ServerArgs(otlp_traces_endpoint='http://u:********@otel.example:4317', port=30000)"),
    ("{'otlp_traces_endpoint': 'http://u:PASS@otel:4317'}", "{'otlp_traces_endpoint': 'http://u:********@otel:4317'}"),
    ("launch --otlp-traces-endpoint http://u:PASS@otel:4317 --port 1",
     "launch --otlp-traces-endpoint http://u:********@otel:4317 --port 1"),
    ("Proxy HTTPS_PROXY=john:PASS@proxy.example:3128 used", "Proxy HTTPS_PROXY=john:********@proxy.example:3128 used"),
])
def test_redact_log_line(line, expected):
    assert _secrets.redact_log_line(line) == expected


@pytest.mark.parametrize("line, secret", [
    # a secret as the first field of a repr (the outer name=Class( must not swallow it)
    ("server_args=ServerArgs(api_key='S1')", "S1"),
    ("kwargs=dict(hf_token='S2')", "S2"),
    ("x=[api_key='S3']", "S3"),
    ("args=Namespace(api_key='S4', model_path='m')", "S4"),
    ("url=http://h/v1/models?api_key=S5&x=1", "S5"),
    # spellings and shapes
    ("api_key = 'S6'", "S6"), ("api_key=\tS7", "S7"), ("'api_key'   :   'S8'", "S8"),
    ("api_key: S9", "S9"), ("x-api-key: S10", "S10"), ("API-KEY=S11", "S11"), ("ApiKey=S12", "S12"),
    ('{"apiKey": "S13"}', "S13"), ("{'MYSQL_PWD': 'S14'}", "S14"),
    ("headers={'Authorization': 'Bearer S15'}", "S15"), ("Authorization: Bearer S16", "S16"),
    # values in more shapes
    ("api_key=b'S17 tail'", "S17 tail"), ("api_key=SecretStr('S18 more')", "S18 more"),
    ("{'api_key': {'primary': 'S19'}}", "S19"), ("{'router_api_keys': ['S20'], 'api_key': ['S21', 'S22']}", "S22"),
    # argv list reprs
    ("['python', '-m', 'sglang.launch_server', '--api-key', 'S23']", "S23"),
    ('argv: ["--api-key", "S24"]', "S24"),
    ("argv=['--admin-api-key', 'S25', '--port', '1']", "S25"),
])
def test_redact_log_line_leaves_no_secret(line, secret):
    assert secret not in _secrets.redact_log_line(line)


@pytest.mark.parametrize("line", [
    "[2026-12-05 10:00:00] Load weight end. type=KimiK25ForConditionalGeneration, dtype=torch.bfloat16, avail mem=12.5 GB",
    "a=1 p=0.5 port=30000 tp_size=8 max_total_tokens=1024 tokenizer_path='/t' ssl_keyfile='/k.pem'",
    "Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
    "Prefill batch. #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, #running-req: 0",
    "INFO:     127.0.0.1:53218 - \"GET /health HTTP/1.1\" 200 OK",
    "time: 12:30:01 model: /models/kimi",
])
def test_redact_log_line_keeps_what_is_not_secret(line):
    assert _secrets.redact_log_line(line) == line


def test_redact_log_line_is_linear_on_long_lines():
    import time
    for unit in ("a=(", "x=[api_key='", "'k': ", "--a ", "Bearer ", "a: b: "):
        line = unit * (200000 // len(unit))
        start = time.time()
        _secrets.redact_log_line(line)
        assert time.time() - start < 5, unit
