# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import shlex
from pathlib import Path

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import _server_args as sa
from ansible_collections.inferops.sglang.plugins.module_utils._secrets import SECRET_FLAGS, is_secret_flag
from ansible_collections.inferops.sglang.plugins.module_utils._server_args import (
    args_to_argv,
    argv_to_args,
    diff_args,
    flag_from_parser_message,
    normalize_flag,
)
from ansible_collections.inferops.sglang.plugins.module_utils._writers.systemd import systemd_command_line

REFERENCE_LINE = (
    '/root/ml-env/bin/python3 -m sglang.launch_server --model-path /shared/kimi-k2.5-int4 --tp 8 '
    '--trust-remote-code --cuda-graph-max-bs 128 --disable-custom-all-reduce --attention-backend flashinfer '
    '--enable-flashinfer-allreduce-fusion --speculative-algorithm EAGLE3 --speculative-draft-model-path '
    '/data/eagle3/output_100k_sglang/4 --speculative-num-steps 2 --speculative-eagle-topk 1 '
    '--mem-fraction-static 0.88'
)
SHARED_REFERENCE = Path('/work/shared/reference/launch_command.txt')

REFERENCE_ARGS = {
    'model-path': '/shared/kimi-k2.5-int4',
    'tp': 8,
    'trust-remote-code': True,
    'cuda-graph-max-bs': 128,
    'disable-custom-all-reduce': True,
    'attention-backend': 'flashinfer',
    'enable-flashinfer-allreduce-fusion': True,
    'speculative-algorithm': 'EAGLE3',
    'speculative-draft-model-path': '/data/eagle3/output_100k_sglang/4',
    'speculative-num-steps': 2,
    'speculative-eagle-topk': 1,
    'mem-fraction-static': 0.88,
}


def reference_argv():
    return shlex.split(REFERENCE_LINE)[3:]


def test_embedded_reference_matches_shared_file():
    if not SHARED_REFERENCE.exists():
        pytest.skip('%s is not on this machine' % SHARED_REFERENCE)
    assert SHARED_REFERENCE.read_text().strip() == REFERENCE_LINE


# --- normalize_flag -------------------------------------------------------------------

@pytest.mark.parametrize('key, expected', [
    ('model-path', 'model-path'),
    ('model_path', 'model-path'),
    ('tp', 'tp'),
    ('json_model_override_args', 'json-model-override-args'),
])
def test_normalize_flag(key, expected):
    assert normalize_flag(key) == expected


@pytest.mark.parametrize('key, fragment', [
    ('', 'empty'),
    ('   ', 'empty'),
    ('--model-path', "starts with '-'"),
    ('-tp', "starts with '-'"),
    ('model path', 'whitespace'),
    ('model\tpath', 'whitespace'),
    ('tp=8', "'='"),
    (8, 'must be strings'),
    (None, 'must be strings'),
])
def test_normalize_flag_rejects(key, fragment):
    with pytest.raises(ValueError, match=fragment):
        normalize_flag(key)


# --- args_to_argv -----------------------------------------------------------------------

@pytest.mark.parametrize('mapping, expected', [
    ({'trust-remote-code': True}, ['--trust-remote-code']),
    ({'trust-remote-code': False}, []),
    ({'served-model-name': None}, []),
    ({'tp': 8}, ['--tp', '8']),
    ({'tp': 0}, ['--tp', '0']),
    ({'mem-fraction-static': 0.88}, ['--mem-fraction-static', '0.88']),
    ({'mem-fraction-static': 0.1 + 0.2}, ['--mem-fraction-static', '0.30000000000000004']),
    ({'ratio': 1.0}, ['--ratio', '1']),
    ({'ratio': 2.5e-05}, ['--ratio', '2.5e-05']),
    ({'seed': -1}, ['--seed', '-1']),
    ({'model-path': '/m'}, ['--model-path', '/m']),
    ({'model_path': '/m'}, ['--model-path', '/m']),
    ({'cuda-graph-bs-decode': [1, 2, 4]}, ['--cuda-graph-bs-decode', '1', '2', '4']),
    ({'lora-paths': ('a=/x', 'b=/y')}, ['--lora-paths', 'a=/x', 'b=/y']),
    ({'lora-paths': []}, []),
    ({'flags': [True, 0.5]}, ['--flags', 'true', '0.5']),
    ({'json-model-override-args': {'architectures': ['X'], 'n': 1}},
     ['--json-model-override-args', '{"architectures":["X"],"n":1}']),
    ({'model-path': 'with space'}, ['--model-path', 'with space']),
    ({}, []),
    (None, []),
])
def test_args_to_argv(mapping, expected):
    assert args_to_argv(mapping) == expected


def test_args_to_argv_keeps_order_on_reference():
    assert args_to_argv(REFERENCE_ARGS) == reference_argv()


@pytest.mark.parametrize('mapping, fragment', [
    ({'': 1}, 'empty'),
    ({'--tp': 8}, "starts with '-'"),
    ({'model path': 'x'}, 'whitespace'),
    ({'model-path': '/a', 'model_path': '/b'}, 'given twice'),
    ({'tp': object()}, 'unsupported value'),
    ({'tp': [None]}, 'must not be null'),
    ([('tp', 8)], 'must be a mapping'),
])
def test_args_to_argv_rejects(mapping, fragment):
    with pytest.raises(ValueError, match=fragment):
        args_to_argv(mapping)


@pytest.mark.parametrize('flag', list(SECRET_FLAGS) + ['api_key'])
def test_args_to_argv_refuses_secrets(flag):
    with pytest.raises(ValueError, match='secret') as err:
        args_to_argv({'model-path': '/m', flag: 'hunter2'})
    assert 'hunter2' not in str(err.value)


def test_args_to_argv_secrets_when_allowed():
    assert args_to_argv({'api-key': 'hunter2'}, allow_secrets=True) == ['--api-key', 'hunter2']


@pytest.mark.parametrize('value, secret', [
    ('{"key": "k"}', True),
    ('  {"key": "k"}', True),
    ({'key': 'k'}, True),
    ('/etc/sglang/watermark.json', False),
])
def test_watermark_config_secret_only_inline(value, secret):
    assert is_secret_flag('watermark-config', value) is secret
    if secret:
        with pytest.raises(ValueError, match='secret'):
            args_to_argv({'watermark-config': value})
    else:
        assert args_to_argv({'watermark-config': value}) == ['--watermark-config', value]


# --- argv_to_args -----------------------------------------------------------------------

def test_argv_to_args_reference():
    args = argv_to_args(reference_argv())
    assert list(args) == list(REFERENCE_ARGS)
    assert args['tp'] == '8'
    assert args['trust-remote-code'] is True
    assert args['mem-fraction-static'] == '0.88'


@pytest.mark.parametrize('tokens, expected', [
    (['--a'], {'a': True}),
    (['--a', 'x'], {'a': 'x'}),
    (['--a', 'x', 'y'], {'a': ['x', 'y']}),
    (['--a=x'], {'a': 'x'}),
    (['--a=x=y'], {'a': 'x=y'}),
    (['--a='], {'a': ''}),
    (['--seed', '-1'], {'seed': '-1'}),
    (['--bias', '-0.5'], {'bias': '-0.5'}),
    (['--x', '-.5', '-1e-3'], {'x': ['-.5', '-1e-3']}),
    (['--a', '--b'], {'a': True, 'b': True}),
    (['--a', '1', '--a', '2'], {'a': '2'}),
    (['--b', '--a', '1', '--b', '3'], {'a': '1', 'b': '3'}),
    (['stray', '--a'], {'': 'stray', 'a': True}),
    (['--a', ''], {'a': ''}),
    ([], {}),
])
def test_argv_to_args(tokens, expected):
    result = argv_to_args(tokens)
    assert result == expected
    assert list(result) == list(expected)


@pytest.mark.parametrize('mapping', [
    REFERENCE_ARGS,
    {'cuda-graph-bs-decode': [1, 2, 4], 'trust-remote-code': True, 'seed': -1},
    {'json-model-override-args': {'a': {'b': [1, 2]}}},
])
def test_round_trip(mapping):
    argv = args_to_argv(mapping)
    back = argv_to_args(argv)
    assert args_to_argv(back) == argv
    assert diff_args(mapping, back) == {'added': {}, 'removed': {}, 'changed': {},
                                        'unchanged_count': len(mapping)}


def test_round_trip_reference_argv():
    argv = reference_argv()
    assert args_to_argv(argv_to_args(argv)) == argv


# --- diff_args ----------------------------------------------------------------------------

def test_diff_reference_against_corrected():
    old = argv_to_args(reference_argv())
    corrected = [t if t != '--cuda-graph-max-bs' else '--cuda-graph-max-bs-decode' for t in reference_argv()]
    corrected += ['--host', '127.0.0.1']
    corrected[corrected.index('0.88')] = '0.85'
    new = argv_to_args(corrected)
    diff = diff_args(old, new)
    assert diff['added'] == {'cuda-graph-max-bs-decode': '128', 'host': '127.0.0.1'}
    assert diff['removed'] == {'cuda-graph-max-bs': '128'}
    assert diff['changed'] == {'mem-fraction-static': {'old': '0.88', 'new': '0.85'}}
    assert diff['unchanged_count'] == len(old) - 2


@pytest.mark.parametrize('old, new, expected', [
    ({}, {}, {'added': {}, 'removed': {}, 'changed': {}, 'unchanged_count': 0}),
    ({'tp': '8'}, {'tp': 8}, {'added': {}, 'removed': {}, 'changed': {}, 'unchanged_count': 1}),
    ({'tp_size': '8'}, {'tp-size': '8'}, {'added': {}, 'removed': {}, 'changed': {}, 'unchanged_count': 1}),
    ({'m': '0.88'}, {'m': 0.88}, {'added': {}, 'removed': {}, 'changed': {}, 'unchanged_count': 1}),
    ({'a': True}, {'a': 'x'}, {'added': {}, 'removed': {}, 'changed': {'a': {'old': True, 'new': 'x'}},
                               'unchanged_count': 0}),
    ({'l': ['1', '2']}, {'l': [1, 2]}, {'added': {}, 'removed': {}, 'changed': {}, 'unchanged_count': 1}),
    ({'l': ['1', '2']}, {'l': [2, 1]}, {'added': {}, 'removed': {},
                                        'changed': {'l': {'old': ['1', '2'], 'new': [2, 1]}},
                                        'unchanged_count': 0}),
    (None, {'a': True}, {'added': {'a': True}, 'removed': {}, 'changed': {}, 'unchanged_count': 0}),
])
def test_diff_args(old, new, expected):
    assert diff_args(old, new) == expected


# --- systemd_command_line (the writer is in _writers.systemd; tested there) ----------------------

def test_systemd_command_line_reference():
    line = systemd_command_line(shlex.split(REFERENCE_LINE))
    assert line == REFERENCE_LINE


def test_systemd_command_line_json():
    argv = args_to_argv({'json-model-override-args': {'rope_scaling': {'factor': 2.0}}})
    assert systemd_command_line(argv) == '--json-model-override-args "{\\"rope_scaling\\":{\\"factor\\":2.0}}"'


# --- flag_from_parser_message ---------------------------------------------------------------------

TP_RESOLVED = [{'token': '--tp', 'option': '--tp-size', 'options': ['--tp-size', '--tensor-parallel-size']}]


@pytest.mark.parametrize('message, resolved, expected', [
    ('ambiguous option: --cuda-graph-max-bs could match --cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill',
     None, '--cuda-graph-max-bs'),
    ('ambiguous option: --cuda-graph-max-bs=128 could match --cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill',
     None, '--cuda-graph-max-bs'),
    ('unrecognized arguments: --foo 1', None, '--foo'),
    ('unrecognized arguments: --foo=1', None, '--foo'),
    ('unrecognized arguments: 128 --bar', None, '--bar'),
    ('unrecognized arguments: 128', None, None),
    ('unrecognized arguments: -1 --baz', None, '--baz'),
    ("argument --tp-size/--tensor-parallel-size: invalid int value: 'x'", None, '--tp-size'),
    ("argument --tp-size/--tensor-parallel-size: invalid int value: 'x'", TP_RESOLVED, '--tp'),
    ("argument --attention-backend: invalid choice: 'nope' (choose from 'triton', 'fa3')", None,
     '--attention-backend'),
    ('argument --tp-size/--tensor-parallel-size: expected one argument', None, '--tp-size'),
    ('the following arguments are required: --model-path/--model', None, '--model-path'),
    ('the following arguments are required: --a, --b', None, '--a'),
    ("--config: ValueError: Config file not found: /x.yaml", None, '--config'),
    ('--help: the parser printed its output and exited with status 0', None, '--help'),
    ('something else entirely', None, None),
    ('', None, None),
    (None, None, None),
])
def test_flag_from_parser_message(message, resolved, expected):
    assert flag_from_parser_message(message, resolved) == expected


def test_args_to_argv_output_is_json_for_dicts():
    argv = args_to_argv({'json-model-override-args': {'b': 1, 'a': [1, 2]}})
    assert json.loads(argv[1]) == {'b': 1, 'a': [1, 2]}
    assert ' ' not in argv[1]


# ---- defaults from the host facts (GPU interconnect) ---------------------------------------------

from ansible_collections.inferops.sglang.plugins.module_utils._server_args import (  # noqa: E402
    nccl_profile, topology_defaults)


@pytest.mark.parametrize("interconnect, expect", [
    ("pcie", {"NCCL_PROTO": "LL", "NCCL_ALGO": "Ring"}),
    ("nvlink", {}),
    ("mixed", {}),
    ("single", {}),
    ("none", {}),
])
def test_nccl_profile_follows_the_interconnect(interconnect, expect):
    assert nccl_profile(interconnect) == expect


@pytest.mark.parametrize("args, interconnect, gpus, expect", [
    # PCIe only: custom all-reduce off, tp from the GPUs seen.
    ({"model-path": "/m"}, "pcie", 8, {"model-path": "/m", "disable-custom-all-reduce": True, "tp-size": 8}),
    # NVLink: neither flag added.
    ({"model-path": "/m"}, "nvlink", 8, {"model-path": "/m", "tp-size": 8}),
    # The user's explicit setting always wins, in either spelling.
    ({"model-path": "/m", "disable-custom-all-reduce": False, "tp": 4}, "pcie", 8,
     {"model-path": "/m", "disable-custom-all-reduce": False, "tp": 4}),
    ({"model_path": "/m", "disable_custom_all_reduce": False, "tp_size": 2}, "pcie", 8,
     {"model_path": "/m", "disable_custom_all_reduce": False, "tp_size": 2}),
    # No GPU seen: no tp is invented.
    ({"model-path": "/m"}, "none", 0, {"model-path": "/m"}),
])
def test_topology_defaults(args, interconnect, gpus, expect):
    assert topology_defaults(args, interconnect, gpus) == expect


def test_topology_defaults_keeps_the_user_order_first():
    assert list(topology_defaults({"b": 1, "a": 2}, "pcie", 2)) == ["b", "a", "disable-custom-all-reduce", "tp-size"]


# ------------------------------------------------------------------------------------------------
# no_proxy_env: local requests of a server behind a proxy stay local
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('env', [{}, {'HF_HOME': '/x'}, {'http_proxy': ''}, {'HTTPS_PROXY': '  '}])
def test_no_proxy_env_without_a_proxy(env):
    assert sa.no_proxy_env(env, ['gpu-01']) == {}


def test_no_proxy_env_keeps_what_is_listed_and_adds_loopback_and_names():
    env = {'HTTPS_PROXY': 'http://user:pw@proxy.example:3128', 'no_proxy': '.corp, 10.0.0.0/8', 'NO_PROXY': 'localhost'}
    out = sa.no_proxy_env(env, ['gpu-01', '', '10.1.2.3', 'gpu-01'])
    want = 'localhost,.corp,10.0.0.0/8,127.0.0.1,0.0.0.0,::1,::,gpu-01,10.1.2.3'
    assert out == {'NO_PROXY': want, 'no_proxy': want}


def test_no_proxy_env_rejects_a_list():
    with pytest.raises(TypeError):
        sa.no_proxy_env(['http_proxy=x'])


def test_invalid_environment_names_bad_entries_without_their_values():
    env = {'GOOD': 'x', '1BAD': 'x', 'NUM': 1, 'NL': 'a\nb', 'CR': 'a\rb', 'NUL': 'a\x00b', 'EMPTY': '', 'sp ace': 'x'}
    assert sa.invalid_environment(env) == ['1BAD', 'CR', 'NL', 'NUL', 'NUM', 'sp ace']
    assert sa.invalid_environment({}) == []
    with pytest.raises(TypeError):
        sa.invalid_environment(['A=1'])


C14_YAML = "host: 0.0.0.0\nport: 8000\ntp-size: 4\n"


@pytest.mark.parametrize("config", [
    C14_YAML,
    {"host": "0.0.0.0", "port": 8000, "tp-size": 4},
    "tensor-parallel-size: 4\n",
    "tp: 4\n",
    "tp-size: '4'   # four cards\n",
])
def test_c14_config_file_tp_is_kept(config):
    """C14: a tp in the --config YAML (any alias) counts as set: no --tp-size 8 that would override it."""
    args = {"model-path": "/models/m", "config": "/etc/sglang/server.yaml"}
    assert topology_defaults(args, "pcie", 8, config) == {
        "model-path": "/models/m", "config": "/etc/sglang/server.yaml", "disable-custom-all-reduce": True}


def test_c14_config_file_disable_custom_all_reduce_is_kept():
    """C14: so is any other flag the file sets."""
    assert topology_defaults({"model-path": "/m"}, "pcie", 8, "disable-custom-all-reduce: false\n") == {
        "model-path": "/m", "tp-size": 8}


@pytest.mark.parametrize("facts", [
    {"gpus": [{"index": i, "mig_mode": "Enabled"} for i in range(8)], "gpu_count": 8},          # C16
    {"gpus": [{"index": i} for i in range(7)], "gpu_count": 7,                                   # C17
     "lost_gpus": [{"pci_bus_id": "0000:BA:00.0", "error": "Unknown Error", "source": "nvidia-smi"}]},
    {"gpus": [], "gpu_count": 8, "gpu_error": {"kind": "driver_library_mismatch", "message": "x"}},  # C18
])
def test_c16_c17_c18_no_tp_from_a_gpu_set_that_cannot_run_it(facts):
    """C16/C17/C18: never tp 8 over MIG slices, tp 7 around a lost GPU, or a tp from a host whose NVML fails."""
    result = topology_defaults({"model-path": "/m"}, "pcie", facts["gpu_count"], None, facts)
    assert result == {"model-path": "/m", "disable-custom-all-reduce": True}


def test_topology_defaults_healthy_facts_keep_the_tp():
    facts = {"gpus": [{"index": i, "mig_mode": "Disabled"} for i in range(8)], "gpu_count": 8, "lost_gpus": [],
             "gpu_error": None}
    assert topology_defaults({"model-path": "/m"}, "nvlink", 8, None, facts) == {"model-path": "/m", "tp-size": 8}


def test_invalid_environment_refuses_a_path_list_where_one_directory_is_expected():
    """C23: CUDA_HOME=':/usr/local/cuda-13.0' (export CUDA_HOME=$CUDA_HOME:/usr/local/cuda-13.0 with CUDA_HOME unset)
    is refused, adopted or written, naming the variable and the rule but never the value."""
    env = {'CUDA_HOME': ':/usr/local/cuda-13.0', 'HF_HOME': 'relative/hub', 'TRITON_PTXAS_PATH': '/usr/local/cuda-13.0/bin/ptxas',
           'LD_LIBRARY_PATH': '/usr/local/cuda-13.0/lib64:', 'PATH': '/root/ml-env/bin:/usr/bin', 'HOME': ''}
    assert sa.invalid_environment(env) == ['CUDA_HOME', 'HF_HOME']
    reasons = sa.invalid_environment(env, reasons=True)
    assert reasons == ['CUDA_HOME: must be one absolute path (no ":" and no relative path)',
                       'HF_HOME: must be one absolute path (no ":" and no relative path)']
    assert not any('cuda-13.0' in r for r in reasons)
    assert sa.invalid_environment({'1BAD': 'x', 'NUM': 1}, reasons=True) == [
        '1BAD: not a variable name (letters, digits and underscores, not starting with a digit)',
        'NUM: not a string (quote numbers in YAML, e.g. "1")']
