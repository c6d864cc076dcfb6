# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of module_utils/_server_process/module.py: absent(), the orchestration, on a fake /proc with the
stop simulated (nothing real is signalled), and the --diff rendering."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import signal
import subprocess

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils._server_process import module
from ansible_collections.inferops.sglang.tests.unit.plugins.module_utils import server_process_fakes as fakes

PY = fakes.PY
NET_TCP = fakes.NET_TCP
SELF = fakes.SELF
proc = fakes.proc
add_reference_server = fakes.add_reference_server
FakeClock = fakes.FakeClock
fake_smi = fakes.fake_smi


def test_render_process_lines():
    members = [{'pid': 12, 'role': 'scheduler', 'title': 'sglang::scheduler_TP1'},
               {'pid': 3, 'role': 'server', 'title': 'python3 -m sglang.launch_server ' + 'x' * 400}]
    text = module.render_process_lines(members)
    lines = text.splitlines()
    assert lines[0].startswith('3 [server] python3 -m sglang.launch_server xxx') and lines[0].endswith('...')
    assert len(lines[0]) < 260
    assert lines[1] == '12 [scheduler] sglang::scheduler_TP1'
    assert text.endswith('\n')
    assert module.render_process_lines([]) == ''


# ------------------------------------------------------------------------------------------------
# absent(): the orchestration, on a fake /proc with the stop simulated (nothing real is signalled)
# ------------------------------------------------------------------------------------------------

def fake_stop(proc, signal_name='SIGTERM', remaining=(), errors=(), restart=None):
    """A stand-in for stop_targets that 'ends' the targets by removing them from the fake /proc."""
    def stop(targets, source, grace_period, kill_timeout, protected=(), clock=None, sleep=None, send=None):
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


BASE = {'grace_period': 1, 'kill_timeout': 1, 'release_timeout': 2, 'wait_port_free': False}


def absent(proc, params, **kwargs):
    clock = FakeClock()
    kwargs.setdefault('self_pid', SELF)
    return module.absent(dict(BASE, **params), source=proc.source(), clock=clock, sleep=clock.sleep, **kwargs)


def test_absent_success_with_device_files(proc, monkeypatch):
    pids = add_reference_server(proc, main=100)
    proc.add(140, ['python3', 'train.py'], ppid=898, pgid=140, fds=['/dev/nvidia5'])   # unrelated, stays
    monkeypatch.setattr(module, 'stop_targets', fake_stop(proc))
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
    monkeypatch.setattr(module, 'stop_targets', fake_stop(
        proc, restart=lambda: proc.add(160, ['python3', 'late.py'], ppid=1, fds=['/dev/nvidia0'])))
    with pytest.raises(module.ModuleFailure) as failure:
        absent(proc, {})
    assert 'GPU device files (/dev/nvidia*) still held' in failure.value.msg
    assert '160 (python3 late.py) holding /dev/nvidia0' in failure.value.msg
    assert failure.value.result['stopped'] and failure.value.result['changed'] is True


def test_absent_nvidia_smi_timeout_names_holders(proc, monkeypatch):
    add_reference_server(proc, main=100)
    proc.add(140, ['python3', 'train.py', '--hf-token', 'hf_x'], ppid=898, pgid=140)
    monkeypatch.setattr(module, 'stop_targets', fake_stop(proc))
    run_command, _calls = fake_smi([('102, 4334, GPU-0\n140, 2000, GPU-1\n', '0, 4343, GPU-0\n1, 3100, GPU-1\n')])
    with pytest.raises(module.ModuleFailure) as failure:
        absent(proc, {'release_timeout': 3}, run_command=run_command, nvidia_smi='/usr/bin/nvidia-smi')
    msg = failure.value.msg
    assert msg.startswith('GPU memory not released 3.0 s after the stop')
    assert 'nvidia-smi still lists stopped pids [102]' in msg
    assert 'GPU 0 uses 4343 MiB (threshold 1024 MiB)' in msg
    # the other job's 2000 MiB on GPU 1 are not waited for; the 1100 MiB nobody lists are
    assert 'GPU 1 uses 3100 MiB (threshold 1024 MiB, not counting 2000 MiB of processes left alone)' in msg
    assert '140 (python3 train.py --hf-token ********): 2000 MiB' in msg and 'hf_x' not in msg
    assert failure.value.result['gpu_release']['compute_apps'][0] == {'pid': 102, 'used_memory_mib': 4334, 'gpu_uuid': 'GPU-0'}


def test_absent_nvidia_smi_released(proc, monkeypatch):
    add_reference_server(proc, main=100)
    monkeypatch.setattr(module, 'stop_targets', fake_stop(proc))
    run_command, calls = fake_smi([('102, 4334, GPU-0\n', '0, 4343, GPU-0\n'), ('', '0, 0, GPU-0\n')])
    result = absent(proc, {}, run_command=run_command, nvidia_smi='/usr/bin/nvidia-smi')
    assert result['gpu_release'] == {'waited': True, 'method': 'nvidia-smi', 'seconds': 0.5,
                                     'gpus': [{'index': 0, 'memory_used_mib': 0, 'uuid': 'GPU-0'}], 'compute_apps': [],
                                     'holders': [], 'memory_figures': True}
    assert len(calls) == 4


def test_absent_wait_gpu_release_off(proc, monkeypatch):
    add_reference_server(proc, main=100)
    monkeypatch.setattr(module, 'stop_targets', fake_stop(proc))
    result = absent(proc, {'wait_gpu_release': False}, run_command=None, nvidia_smi='/usr/bin/nvidia-smi')
    assert result['gpu_release']['waited'] is False and result['changed'] is True


def test_absent_signal_errors_fail(proc, monkeypatch):
    add_reference_server(proc, main=100)
    monkeypatch.setattr(module, 'stop_targets', fake_stop(proc, errors=[(100, 'SIGTERM: Operation not permitted')]))
    with pytest.raises(module.ModuleFailure) as failure:
        absent(proc, {})
    assert failure.value.msg.startswith('could not stop 100 (/root/ml-env/bin/python3 -m sglang.launch_server')
    assert failure.value.msg.endswith('SIGTERM: Operation not permitted')


def test_absent_unkillable_fails(proc, monkeypatch):
    add_reference_server(proc, main=100)
    monkeypatch.setattr(module, 'stop_targets', fake_stop(proc, signal_name='SIGKILL', remaining=[102]))
    with pytest.raises(module.ModuleFailure) as failure:
        absent(proc, {}, want_diff=True)
    # Whatever state it shows, still there after SIGKILL with GPU devices open: a reboot is needed.
    assert failure.value.msg == ('a process stuck in the driver holds the GPUs: reboot needed: 102 (sglang::scheduler_TP0)'
                                 ' in state S holding /dev/nvidia-uvm, /dev/nvidia0, /dev/nvidiactl'
                                 ' (still running 1 s after SIGKILL)')
    assert failure.value.result['reboot_required'] is True
    assert failure.value.result['diff']['after'] == '102 [scheduler] sglang::scheduler_TP0\n'


def test_absent_port_still_busy(proc, monkeypatch):
    add_reference_server(proc, main=100)
    proc.add(160, ['nginx: worker'], ppid=1, fds=['socket:[111]'])
    (proc.root / 'net' / 'tcp').write_text(NET_TCP + '\n')
    monkeypatch.setattr(module, 'stop_targets', fake_stop(proc))
    calls = []

    def busy(endpoints, timeout, clock=None, sleep=None):
        calls.append((endpoints, timeout))
        return False, timeout, endpoints
    monkeypatch.setattr(module, 'wait_ports_free', busy)
    with pytest.raises(module.ModuleFailure) as failure:
        absent(proc, {'wait_port_free': True, 'wait_gpu_release': False, 'release_timeout': 7})
    assert calls == [([('127.0.0.1', 30000)], 7.0)]
    assert failure.value.msg == 'port(s) still in use 7.0 s after the stop: 127.0.0.1:30000 held by 160 (nginx: worker)'
    assert failure.value.result['port_release']['endpoints'] == [{'host': '127.0.0.1', 'port': 30000}]


def test_absent_restarted_by_parent_fails(proc, monkeypatch):
    proc.add(90, ['bash', '-c', 'while :; do python3 -m sglang.launch_server --port 30000; done'], ppid=898, pgid=90)
    proc.add(100, [PY, '-m', 'sglang.launch_server', '--port', '30000'], ppid=90, pgid=90)
    monkeypatch.setattr(module, 'stop_targets', fake_stop(
        proc, restart=lambda: proc.add(101, [PY, '-m', 'sglang.launch_server', '--port', '30000'], ppid=90, pgid=90)))
    with pytest.raises(module.ModuleFailure) as failure:
        absent(proc, {})
    assert failure.value.msg.startswith('stray SGLang server(s) running again after the stop')
    assert 'main pid 101' in failure.value.msg and 'parent 90 (bash -c while :; do python3' in failure.value.msg


def test_absent_check_mode_never_stops(proc, monkeypatch):
    add_reference_server(proc, main=100)

    def forbidden(*_args, **_kwargs):
        raise AssertionError('check mode must not stop anything')
    monkeypatch.setattr(module, 'stop_targets', forbidden)
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
    monkeypatch.setattr(module, 'stop_targets', fake_stop(proc, restart=leave_an_orphan))
    result = absent(proc, {})
    assert len(rounds) == 2
    assert result['target_pids'] == [100, 101, 102, 103, 104, 190]
    assert [s['pid'] for s in result['stopped']][-1] == 190


def test_absent_orphans_that_keep_coming_fail(proc, monkeypatch):
    add_reference_server(proc, main=100)
    counter = [190]

    def another_orphan():
        counter[0] += 1
        proc.add(counter[0], ['sglang::scheduler_TP1'], ppid=1, pgid=100, fds=['/dev/nvidia1'])
    monkeypatch.setattr(module, 'stop_targets', fake_stop(proc, restart=another_orphan))
    with pytest.raises(module.ModuleFailure) as failure:
        absent(proc, {})
    assert 'running again after the stop' in failure.value.msg and 'main pid 192' in failure.value.msg


def stuck_sender(proc, stuck, comm='sglang::schedul'):
    """A stand-in for stop.send_signal on the fake /proc: SIGTERM to a root ends its whole tree except ``stuck``,
    which SIGKILL leaves in state D (uninterruptible, in the driver), as a process stuck in the GPU driver."""
    sent = []

    def send(source, pid, starttime, sig):
        st = source.stat(pid)
        if st is None or st.starttime != starttime:
            return False
        sent.append((pid, sig))
        if sig == signal.SIGKILL and pid in stuck:
            (proc.root / str(pid) / 'stat').write_text(fakes.stat_line(pid, st.comm, 'D', st.ppid, st.pgid,
                                                                       starttime=st.starttime))
        elif pid not in stuck:
            for other in source.pids():
                if other not in stuck and (other == pid or (source.stat(other) and source.stat(other).ppid == pid)):
                    subprocess.call(['rm', '-rf', str(proc.root / str(other))])
        return True
    return send, sent


def test_absent_stuck_in_the_driver_needs_a_reboot(proc):
    """A scheduler that SIGKILL cannot end (state D) and that holds GPUs: the failure says a reboot is needed and
    names it in structured form (stuck, reboot_required)."""
    add_reference_server(proc, main=100)
    send, sent = stuck_sender(proc, stuck=[102])
    with pytest.raises(module.ModuleFailure) as failure:
        absent(proc, {}, send_signal=send)
    assert (102, signal.SIGKILL) in sent
    result = failure.value.result
    assert result['reboot_required'] is True
    assert result['stuck'] == [{'pid': 102, 'state': 'D', 'title': 'sglang::scheduler_TP0',
                                'devices': ['/dev/nvidia-uvm', '/dev/nvidia0', '/dev/nvidiactl']}]
    assert failure.value.msg.startswith('a process stuck in the driver holds the GPUs: reboot needed: ')
    assert '102 (sglang::scheduler_TP0) in state D holding /dev/nvidia-uvm, /dev/nvidia0, /dev/nvidiactl' \
        in failure.value.msg


def test_absent_stuck_without_gpus_is_still_reported(proc):
    """A process SIGKILL cannot end that holds no GPU device: reported in stuck, no reboot demanded for the GPUs."""
    add_reference_server(proc, main=100)
    send, _sent = stuck_sender(proc, stuck=[101])
    with pytest.raises(module.ModuleFailure) as failure:
        absent(proc, {}, send_signal=send)
    result = failure.value.result
    assert result['reboot_required'] is False
    assert [(s['pid'], s['state'], s['devices']) for s in result['stuck']] == [(101, 'D', [])]
    assert failure.value.msg.startswith('still running 1 s after SIGKILL')


def test_absent_reports_no_stuck_process_on_success(proc, monkeypatch):
    add_reference_server(proc, main=100)
    monkeypatch.setattr(module, 'stop_targets', fake_stop(proc))
    result = absent(proc, {})
    assert result['stuck'] == [] and result['reboot_required'] is False


def test_absent_stops_only_proven_strays(proc, monkeypatch):
    # field case: a retitled sleep, an unreadable interpreter and another container's server stay untouched
    pids = add_reference_server(proc, main=100)
    proc.add(300, ['sglang::scheduler_TP0', '1000'], comm='sleep', exe='/usr/bin/sleep', fds=['/dev/nvidia6'])
    proc.add(320, [PY, '-m', 'sglang.launch_server', '--port', '30002'], uid=1000, exe_denied=True)
    proc.add(700, [PY, '-m', 'sglang.launch_server', '--port', '31000', '--tp', '2'], pidns='pid:[4026532401]',
             cgroup='0::/system.slice/docker-%s.scope\n' % ('ab' * 32), fds=['/dev/nvidia7'])
    monkeypatch.setattr(module, 'stop_targets', fake_stop(proc))
    result = absent(proc, {})
    assert result['target_pids'] == pids
    assert [u['pid'] for u in result['unproven']] == [320]
    assert [(f['pid'], f['runtime'], f['port']) for f in result['foreign']] == [(700, 'docker', 31000)]
    for pid in (300, 320, 700):
        assert (proc.root / str(pid)).exists()
    info = module.info({}, source=proc.source(), self_pid=SELF)
    assert [f['pid'] for f in info['foreign']] == [700] and [u['pid'] for u in info['unproven']] == [320]


def test_absent_nvidia_smi_without_memory_figures_warns(proc, monkeypatch):
    """Issue 28: the release wait says it followed only the pid list when nvidia-smi gives no memory figure."""
    add_reference_server(proc, main=100)
    monkeypatch.setattr(module, 'stop_targets', fake_stop(proc))
    run_command, calls = fake_smi([('', '0, [N/A], GPU-0\n')])
    result = absent(proc, {}, run_command=run_command, nvidia_smi='/usr/bin/nvidia-smi')
    assert result['gpu_release']['memory_figures'] is False
    assert 'followed only the stopped pids' in ' '.join(result['warnings'])
