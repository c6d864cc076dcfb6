# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of module_utils/_cgroup.py."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import _cgroup


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
    assert _cgroup.cgroup_in_unit(_cgroup.parse_cgroup(text), unit) is expected


@pytest.mark.parametrize('unit, expected', [
    ('sglang', 'sglang.service'), ('sglang.service', 'sglang.service'), ('run-u7.scope', 'run-u7.scope'),
    ('sglang@1', 'sglang@1.service'), ('', ''),
])
def test_normalize_unit(unit, expected):
    assert _cgroup.normalize_unit(unit) == expected


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
    assert _cgroup.is_specific_cgroup(path) is expected


@pytest.mark.parametrize('text, expected', [
    (V2_UNIT, '/system.slice/sglang.service'),
    ('9:name=systemd:/system.slice/x.service\n1:cpu:/\n0::/\n', '/system.slice/x.service'),
    ('9:name=systemd:/\n0::/\n', '/'),
    ('1:cpu:/a\n', '/a'),
    ('', None),
])
def test_primary_cgroup(text, expected):
    assert _cgroup.primary_cgroup(_cgroup.parse_cgroup(text)) == expected


# ------------------------------------------------------------------------------------------------
# containers
# ------------------------------------------------------------------------------------------------

HEX = '4f1c0e7b9a2d4b6e8f0a1c3e5d7b9f1a2c4e6d8b0a1f3e5c7d9b1a3c5e7f9d1b'
HEX2 = 'aa' * 32
POD = '7d1c2e3f-4a5b-6c7d-8e9f-0a1b2c3d4e5f'


@pytest.mark.parametrize('text, expected', [
    ('0::/\n', None),
    (SESSION, None),
    (V2_UNIT, None),
    ('0::/docker/%s\n' % HEX, ('docker', HEX, None)),
    ('12:memory:/docker/%s\n1:name=systemd:/docker/%s\n' % (HEX, HEX), ('docker', HEX, None)),
    ('0::/docker/%s/system.slice/sglang.service\n' % HEX, ('docker', HEX, None)),
    ('0::/system.slice/docker-%s.scope\n' % HEX, ('docker', HEX, None)),
    # another container seen from inside a private cgroup namespace: a relative path
    ('0::/../../system.slice/docker-%s.scope\n' % HEX, ('docker', HEX, None)),
    ('0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s.slice\n' % POD.replace('-', '_'),
     ('kubernetes', None, POD)),
    ('0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s.slice/cri-containerd-%s.scope\n'
     % (POD.replace('-', '_'), HEX), ('containerd', HEX, POD)),
    ('0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod%s.slice/crio-%s.scope\n'
     % (POD.replace('-', '_'), HEX), ('cri-o', HEX, POD)),
    ('11:memory:/kubepods/burstable/pod%s/%s\n' % (POD, HEX), ('kubernetes', HEX, POD)),
    ('0::/machine.slice/libpod-%s.scope/container\n' % HEX, ('podman', HEX, None)),
    ('0::/libpod_parent/libpod-%s\n' % HEX, ('podman', HEX, None)),
    ('0::/machine.slice/libpod-conmon-%s.scope\n' % HEX, None),
    ('0::/docker/notanid\n', None),
    ('0::/system.slice/docker.service\n', None),
    ('', None),
])
def test_container_of(text, expected):
    found = _cgroup.container_of(text)
    if expected is None:
        assert found is None
    else:
        assert (found['runtime'], found['id'], found['pod']) == expected
    assert _cgroup.container_of(_cgroup.parse_cgroup(text)) == found


@pytest.mark.parametrize('first, second, same', [
    (None, None, True),
    ('0::/docker/%s\n' % HEX, None, False),
    ('0::/docker/%s\n' % HEX, '0::/system.slice/docker-%s.scope\n' % HEX, True),
    ('0::/docker/%s\n' % HEX, '0::/docker/%s\n' % HEX2, False),
])
def test_same_container(first, second, same):
    assert _cgroup.same_container(first and _cgroup.container_of(first), second and _cgroup.container_of(second)) is same


@pytest.mark.parametrize('sep', ['\r', '\x0b', '\x1c', '\x85', '\u2028'])
def test_a_cgroup_name_does_not_start_a_line(sep):
    # A user with a delegated cgroup subtree names its cgroups; the kernel refuses only a line feed in a name.
    path = '/user.slice/user-1000.slice/user@1000.service/x' + sep + '0::/system.slice/sglang.service'
    assert _cgroup.parse_cgroup('0::%s\n' % path) == [('0', '', path)]
