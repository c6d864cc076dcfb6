# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of module_utils/_sandbox.py: the sandbox of a unit that keeps its GPUs, the cache environment,
GPU device access and systemd-analyze's exposure figure."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils._sandbox import (
    cache_environment,
    gpu_device_access,
    sandbox_directives,
    security_exposure,
)


def _names(lines):
    return [name for name, _value in lines]


def test_debian12_gets_every_directive_up_to_252_and_no_log_filter():
    lines = sandbox_directives(252, ['/opt/venv/bin/python3'], ['/var/cache/sglang'], log_filter_patterns=['server_args='])
    names = _names(lines)
    for name in ('NoNewPrivileges', 'PrivateTmp', 'ProtectSystem', 'ProtectKernelTunables', 'ProtectKernelModules',
                 'ProtectKernelLogs', 'ProtectControlGroups', 'ProtectHostname', 'RestrictSUIDSGID',
                 'LockPersonality', 'ProtectHome', 'ReadWritePaths'):
        assert name in names
    assert 'LogFilterPatterns' not in names
    assert dict(lines)['ProtectSystem'] == 'strict'
    assert dict(lines)['ProtectHome'] == 'yes'
    assert dict(lines)['ReadWritePaths'] == '/var/cache/sglang'


def test_nothing_hides_the_gpus_without_a_device_policy():
    names = _names(sandbox_directives(256, ['/opt/venv'], []))
    assert 'PrivateDevices' not in names
    assert 'DevicePolicy' not in names and 'DeviceAllow' not in names


def test_a_device_policy_lists_the_allowed_devices():
    lines = sandbox_directives(252, [], [], 'closed', ['/dev/nvidiactl rw', '/dev/nvidia0 rw'])
    assert ['DevicePolicy', 'closed'] in lines
    assert [value for name, value in lines if name == 'DeviceAllow'] == ['/dev/nvidiactl rw', '/dev/nvidia0 rw']


@pytest.mark.parametrize('version, present, absent', [
    (241, ['ProtectKernelTunables', 'LockPersonality'], ['ProtectKernelLogs', 'ProtectClock', 'RestrictSUIDSGID']),
    (244, ['ProtectKernelLogs', 'RestrictSUIDSGID'], ['ProtectClock']),
    (252, ['ProtectKernelLogs'], ['ProtectClock', 'LogFilterPatterns']),
    (253, ['ProtectClock', 'LogFilterPatterns'], []),
    (None, ['PrivateTmp'], ['NoNewPrivileges', 'ProtectSystem', 'ProtectHome', 'ReadWritePaths']),
])
def test_directives_follow_the_systemd_version(version, present, absent):
    names = _names(sandbox_directives(version, ['/opt/v'], ['/var/cache/sglang'], log_filter_patterns=['x']))
    for name in present:
        assert name in names
    for name in absent:
        assert name not in names


def test_log_filter_patterns_exclude_matching_lines():
    lines = sandbox_directives('255', [], [], log_filter_patterns=['server_args=ServerArgs'])
    assert ['LogFilterPatterns', '~server_args=ServerArgs'] in lines


def test_a_venv_under_a_home_makes_protect_home_read_only():
    assert dict(sandbox_directives(252, ['/root/ml-env/bin/python3'], ['/var/cache/sglang']))['ProtectHome'] == 'read-only'


@pytest.mark.parametrize('writes', [['/home/ml/cache'], ['-/root/.cache'], ['/root']])
def test_a_written_path_under_a_home_leaves_the_homes_alone(writes):
    # ReadWritePaths=/root under ProtectHome=read-only stays read-only (the more restrictive mount wins).
    assert 'ProtectHome' not in _names(sandbox_directives(252, ['/root/ml-env/bin/python3'], writes))


def test_protect_clock_comes_earlier_with_a_device_policy():
    # Up to 252 ProtectClock implied DeviceAllow=char-rtc, closing every other device without a policy of ours.
    assert 'ProtectClock' in _names(sandbox_directives(249, [], [], 'closed', ['char-nvidia-frontend rw']))
    assert 'ProtectClock' not in _names(sandbox_directives(249, [], []))


def test_a_homelike_prefix_is_not_a_home():
    assert dict(sandbox_directives(252, ['/homework/venv', '/rootfs/x'], []))['ProtectHome'] == 'yes'


def test_read_write_paths_keep_order_and_drop_duplicates():
    lines = sandbox_directives(252, [], ['/var/cache/sglang', '/srv/work', '/var/cache/sglang', '-/root/.cache'])
    assert dict(lines)['ReadWritePaths'] == '/var/cache/sglang /srv/work -/root/.cache'


@pytest.mark.parametrize('kwargs, message', [
    ({'read_paths': ['venv/bin/python']}, 'absolute'),
    ({'read_write_paths': ['cache']}, 'absolute'),
    ({'device_policy': 'auto'}, 'device_policy'),
])
def test_bad_input_is_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        sandbox_directives(252, **kwargs)


def test_a_version_that_is_not_a_number_is_refused():
    with pytest.raises(ValueError, match='integer'):
        sandbox_directives('v252')


def test_cache_environment_for_a_service_user():
    env = cache_environment('/var/cache/sglang/', '/var/cache/sglang')
    assert env['HOME'] == '/var/cache/sglang'
    assert env['TRITON_CACHE_DIR'] == '/var/cache/sglang/triton'
    assert env['TORCHINDUCTOR_CACHE_DIR'] == '/var/cache/sglang/torchinductor'
    assert env['SGLANG_CACHE_DIR'] == '/var/cache/sglang/sglang'
    assert env['SGLANG_DG_CACHE_DIR'] == env['DG_JIT_CACHE_DIR'] == '/var/cache/sglang/deep_gemm'
    assert env['FLASHINFER_WORKSPACE_BASE'] == '/var/cache/sglang/flashinfer'
    assert all(value.startswith('/var/cache/sglang') for value in env.values())


def test_an_existing_users_home_is_kept_and_root_gets_no_home():
    assert cache_environment('/var/cache/sglang', '/home/alice')['HOME'] == '/home/alice'
    assert 'HOME' not in cache_environment('/var/cache/sglang', None)
    assert 'HOME' not in cache_environment('/var/cache/sglang', '')
    assert cache_environment('', '/home/alice') == {}


@pytest.mark.parametrize('cache_dir, home', [('cache', None), ('/var/cache/sglang', 'home/alice')])
def test_relative_paths_are_refused(cache_dir, home):
    with pytest.raises(ValueError, match='absolute'):
        cache_environment(cache_dir, home)


ANALYZE = """  NAME                                                        DESCRIPTION                                                             EXPOSURE
✗ RootDirectory=/RootImage=                                   Service runs within the host's root directory                                0.1
✓ NoNewPrivileges=                                            Service processes cannot acquire new privileges

→ Overall exposure level for sglang.service: 4.9 OK 🙂
"""


def test_security_exposure_reads_the_overall_line():
    assert security_exposure(ANALYZE) == {'score': 4.9, 'level': 'OK'}
    assert security_exposure('→ Overall exposure level for sglang-router.service: 9.6 UNSAFE 😨') == \
        {'score': 9.6, 'level': 'UNSAFE'}


@pytest.mark.parametrize('text', ['', None, 'Unit sglang.service not found.'])
def test_security_exposure_without_the_line_is_none(text):
    assert security_exposure(text) is None


DEVICES = [
    {'path': '/dev/nvidiactl', 'mode': '0666', 'pw_name': 'root', 'gr_name': 'root'},
    {'path': '/dev/nvidia0', 'mode': '0660', 'pw_name': 'root', 'gr_name': 'video'},
    {'path': '/dev/nvidia-uvm', 'mode': '0600', 'pw_name': 'sglang', 'gr_name': 'root'},
    {'path': '/dev/nvidia1', 'mode': '0640', 'pw_name': 'root', 'gr_name': 'video'},
]


def test_devices_the_user_cannot_open():
    refused = gpu_device_access(DEVICES, 'sglang', ['sglang'])
    assert [item['path'] for item in refused] == ['/dev/nvidia0', '/dev/nvidia1']
    assert refused[0] == {'path': '/dev/nvidia0', 'group': 'video', 'mode': '0660'}


def test_group_membership_opens_group_devices_read_write_only():
    refused = gpu_device_access(DEVICES, 'sglang', ['sglang', 'video'])
    assert [item['path'] for item in refused] == ['/dev/nvidia1']


def test_root_opens_every_device():
    assert gpu_device_access(DEVICES, 'root', []) == []


def test_capabilities_address_families_and_ipc_when_asked():
    lines = sandbox_directives(252, [], [], capabilities=[], address_families=['AF_INET', 'AF_UNIX'], remove_ipc=True)
    assert ['CapabilityBoundingSet', ''] in lines and ['AmbientCapabilities', ''] in lines
    assert ['RestrictAddressFamilies', 'AF_INET AF_UNIX'] in lines
    assert ['RemoveIPC', 'yes'] in lines
    bind = sandbox_directives(252, [], [], capabilities=['CAP_NET_BIND_SERVICE'])
    assert ['CapabilityBoundingSet', 'CAP_NET_BIND_SERVICE'] in bind


def test_a_root_service_keeps_its_capabilities_and_families_by_default():
    names = _names(sandbox_directives(252, [], []))
    for name in ('CapabilityBoundingSet', 'AmbientCapabilities', 'RestrictAddressFamilies', 'RemoveIPC'):
        assert name not in names
    assert 'RestrictNamespaces' in names and 'ProtectProc' in names
    assert 'ProtectProc' not in _names(sandbox_directives(246, [], []))


def test_security_exposure_of_a_service_files_result():
    line = '\u2192 Overall exposure level for sglang.service: %s OK'
    measured = {'exposure': {'before': line % '5.0', 'after': line % '2.1'}, 'files_changed': True}
    assert security_exposure(measured, 'before') == {'score': 5.0, 'level': 'OK'}
    assert security_exposure(measured, 'after') == {'score': 2.1, 'level': 'OK'}
    # no file changed: not measured again, the first measurement is the unit as it is
    same = {'exposure': {'before': line % '5.0', 'after': None}, 'files_changed': False}
    assert security_exposure(same, 'after') == {'score': 5.0, 'level': 'OK'}
    # check mode: a changed unit was not written, so there is nothing to say about it after
    pending = {'exposure': {'before': line % '5.0', 'after': None}, 'files_changed': True}
    assert security_exposure(pending, 'after') is None
    assert security_exposure({'exposure': {'before': None, 'after': None}, 'files_changed': False}, 'before') is None


@pytest.mark.parametrize('value, when', [({'files_changed': True}, 'after'), ({'exposure': {}}, 'now'),
                                         ({'exposure': {}}, None), ('text', 'after')])
def test_security_exposure_refuses_a_mixed_up_call(value, when):
    with pytest.raises(ValueError):
        security_exposure(value, when)
