# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of module_utils/_server_process/release.py: the GPU and port release waits (fake clock and
nvidia-smi, real child processes holding files, real sockets)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import socket

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import _procfs
from ansible_collections.inferops.sglang.plugins.module_utils._server_process import release
from ansible_collections.inferops.sglang.tests.unit.plugins.module_utils import server_process_fakes as fakes

spawn = fakes.spawn
FakeClock = fakes.FakeClock
fake_smi = fakes.fake_smi


@pytest.mark.parametrize('apps, gpus, pids, listed, hot', [
    ([{'pid': 568, 'used_memory_mib': 4334}], [{'index': 0, 'memory_used_mib': 4343}], [568], [568], [0]),
    ([], [{'index': 0, 'memory_used_mib': 4343}], [568], [], [0]),
    ([{'pid': 9, 'used_memory_mib': 10}], [{'index': 0, 'memory_used_mib': 1023}], [568], [], []),
    ([], [{'index': 0, 'memory_used_mib': 1024}], [568], [], [0]),
    ([], [{'index': 0, 'memory_used_mib': None}], [568], [], []),
])
def test_gpu_release_state(apps, gpus, pids, listed, hot):
    state = release.gpu_release_state(apps, gpus, pids, 1024)
    assert state['stopped_pids_listed'] == listed
    assert [g['index'] for g in state['gpus_over_threshold']] == hot


def test_gpu_release_state_does_not_count_a_managed_server_on_the_same_gpu():
    """C15 on a real H200: the managed server's scheduler (2212 MiB) stays on GPU 0 while a stray is stopped; the
    release wait must not wait for the managed server's memory (it waited 120 s and failed the run)."""
    apps = [{'pid': 2444, 'used_memory_mib': 2212, 'gpu_uuid': 'GPU-a'}]
    gpus = [{'index': 0, 'memory_used_mib': 2221, 'uuid': 'GPU-a'}, {'index': 1, 'memory_used_mib': 4, 'uuid': 'GPU-b'}]
    assert release.gpu_release_state(apps, gpus, [3128], 1024)['gpus_over_threshold'] == []
    # the stopped stray still listed: its memory counts
    apps.append({'pid': 3128, 'used_memory_mib': 4614, 'gpu_uuid': 'GPU-a'})
    gpus[0]['memory_used_mib'] = 6835
    state = release.gpu_release_state(apps, gpus, [3128], 1024)
    assert state['stopped_pids_listed'] == [3128]
    assert state['gpus_over_threshold'] == [{'index': 0, 'memory_used_mib': 6835, 'uuid': 'GPU-a', 'kept_mib': 2212}]


def test_wait_gpu_release_nvidia_smi_releases():
    run_command, calls = fake_smi([('568, 4334, G0\n', '0, 4343, G0\n1, 4343, G1\n'), (None), ('', '0, 4343, G0\n1, 0, G1\n'),
                                   ('', '0, 3, G0\n1, 0, G1\n')])
    clock = FakeClock()
    released, seconds, state = release.wait_gpu_release_nvidia_smi(run_command, '/usr/bin/nvidia-smi', {568}, 1024, 60,
                                                                   clock=clock, sleep=clock.sleep)
    assert released and seconds == 1.5
    assert state['gpus'] == [{'index': 0, 'memory_used_mib': 3, 'uuid': 'G0'}, {'index': 1, 'memory_used_mib': 0, 'uuid': 'G1'}]
    assert calls[0] == ['/usr/bin/nvidia-smi', '--query-compute-apps=pid,used_gpu_memory,gpu_uuid',
                        '--format=csv,noheader,nounits']
    assert calls[1] == ['/usr/bin/nvidia-smi', '--query-gpu=index,memory.used,uuid', '--format=csv,noheader,nounits']


def test_wait_gpu_release_without_memory_figures_says_so():
    """Issue 28: nvidia-smi without memory figures ([N/A]) - the wait ends on the pid list alone and reports that it
    had no figure, for the module's warning."""
    run_command, _calls = fake_smi([('568, [N/A], G0\n', '0, [N/A], G0\n'), ('', '0, [N/A], G0\n')])
    clock = FakeClock()
    released, _seconds, state = release.wait_gpu_release_nvidia_smi(run_command, 'nvidia-smi', {568}, 1024, 60,
                                                                    clock=clock, sleep=clock.sleep)
    assert released and state['memory_figures'] is False
    run_command, _calls = fake_smi([('', '0, 3, G0\n')])
    assert release.wait_gpu_release_nvidia_smi(run_command, 'nvidia-smi', {568}, 1024, 60, clock=clock,
                                               sleep=clock.sleep)[2]['memory_figures'] is True


def test_wait_gpu_release_nvidia_smi_times_out():
    run_command, _calls = fake_smi([('568, 4334, G0\n777, 100, G0\n', '0, 4343, G0\n')])
    clock = FakeClock()
    released, seconds, state = release.wait_gpu_release_nvidia_smi(run_command, 'nvidia-smi', {568}, 1024, 3,
                                                                   clock=clock, sleep=clock.sleep)
    assert not released and seconds >= 3
    assert state['stopped_pids_listed'] == [568]
    assert state['gpus_over_threshold'] == [{'index': 0, 'memory_used_mib': 4343, 'uuid': 'G0', 'kept_mib': 100}]


def test_wait_gpu_release_nvidia_smi_failing_times_out():
    run_command, _calls = fake_smi([None])
    clock = FakeClock()
    released, _seconds, state = release.wait_gpu_release_nvidia_smi(run_command, 'nvidia-smi', {568}, 1024, 2,
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
    source = _procfs.ProcFS()
    baseline = release.holder_baseline(source, glob)
    assert left_alone.pid in baseline
    released, _seconds, state = release.wait_gpu_release_devices(source, glob, baseline, 1)
    assert released and state == {'holders': []}
    late = spawn(code % str(gpu / 'nvidia1'))
    released, seconds, state = release.wait_gpu_release_devices(source, glob, baseline, 0.3)
    assert not released and seconds >= 0.3
    assert state['holders'] == [{'pid': late.pid, 'gpu_devices': [str(gpu / 'nvidia1')]}]
    assert release.device_holders(source, glob)[left_alone.pid] == [str(gpu / 'nvidia0')]


def test_port_is_free_and_listeners():
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    try:
        assert release.port_is_free('127.0.0.1', port)            # bound, not listening
        sock.listen(1)
        assert not release.port_is_free('127.0.0.1', port)
        assert not release.port_is_free('0.0.0.0', port)
        assert release.port_is_free('192.0.2.1', port)            # not an address of this host
        assert release.port_is_free('name.invalid', port)
        assert [pid for pid, _argv in release.port_listeners(_procfs.ProcFS(), port)] == [os.getpid()]
        clock = FakeClock()
        released, seconds, busy = release.wait_ports_free([('127.0.0.1', port)], 1, clock=clock, sleep=clock.sleep)
        assert not released and busy == [('127.0.0.1', port)]
    finally:
        sock.close()
    assert release.port_is_free('127.0.0.1', port)
    assert release.wait_ports_free([('127.0.0.1', port)], 1)[0]
