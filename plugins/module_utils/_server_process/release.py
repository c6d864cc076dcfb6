# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""Waiting until a stopped server's resources are free: its GPUs (memory and device files) and its port.

Every wait takes an injectable clock and sleep, and returns (released, seconds waited, last state).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import errno
import socket
import time

from ansible_collections.inferops.sglang.plugins.module_utils._nvidia_smi import (
    compute_apps_args,
    parse_compute_apps,
    parse_gpu_memory,
    query_gpu_args,
)
from ansible_collections.inferops.sglang.plugins.module_utils._procfs import (
    GONE_STATES,
    compile_device_glob,
    listening_inodes,
    parse_cmdline,
    split_fd_targets,
)
from ansible_collections.inferops.sglang.plugins.module_utils._secrets import redact_argv
from ansible_collections.inferops.sglang.plugins.module_utils._server_process.cmdline import title_of

# What the GPU release wait asks nvidia-smi (the fields SGLang's own killall waits on, and the GPU of each process).
RELEASE_APPS_FIELDS = ('pid', 'used_gpu_memory', 'gpu_uuid')
RELEASE_GPU_FIELDS = ('index', 'memory.used', 'uuid')


def gpu_release_state(apps, gpus, stopped_pids, threshold_mib):
    """What still holds the GPUs after a stop: stopped pids nvidia-smi still lists, GPUs over threshold.

    A GPU is over the threshold when its ``memory.used``, less the memory of the compute processes that were not
    stopped (a managed server on the same GPU, another job; matched by ``gpu_uuid``), is at least ``threshold_mib``.
    Processes nvidia-smi lists without a GPU or a memory figure (``[N/A]`` in some containers) are not subtracted.

    :returns: {'stopped_pids_listed': [pid], 'gpus_over_threshold': [gpu dict with 'kept_mib' added]}.
    """
    stopped = set(stopped_pids)
    kept = {}
    for app in apps:
        if app['pid'] not in stopped and app.get('gpu_uuid') and app.get('used_memory_mib') is not None:
            kept[app['gpu_uuid']] = kept.get(app['gpu_uuid'], 0) + app['used_memory_mib']
    over = []
    for gpu in gpus:
        used = gpu['memory_used_mib']
        left_alone = kept.get(gpu.get('uuid'), 0) if gpu.get('uuid') else 0
        if used is not None and used - left_alone >= threshold_mib:
            over.append(dict(gpu, kept_mib=left_alone))
    return {
        'stopped_pids_listed': sorted(set(app['pid'] for app in apps if app['pid'] in stopped)),
        'gpus_over_threshold': over,
    }


def wait_gpu_release_nvidia_smi(run_command, nvidia_smi, stopped_pids, threshold_mib, timeout,
                                clock=time.monotonic, sleep=time.sleep, interval=0.5):
    """Poll nvidia-smi until no stopped pid is a compute app and every GPU is under the threshold.

    ``run_command(argv) -> (rc, stdout, stderr)``. Returns (released, seconds, state) where state
    has the last readings: compute_apps, gpus, stopped_pids_listed, gpus_over_threshold, error, and memory_figures
    (bool: whether nvidia-smi gave a ``memory.used`` figure for any GPU; without one - ``[N/A]`` in some containers
    and vGPU guests - the wait follows only the pid list, and the memory may still be held when it ends).
    """
    start = clock()
    state = {'compute_apps': [], 'gpus': [], 'stopped_pids_listed': [], 'gpus_over_threshold': [], 'error': None,
             'memory_figures': False}
    while True:
        rc1, out1, err1 = run_command([nvidia_smi] + compute_apps_args(RELEASE_APPS_FIELDS))
        rc2, out2, err2 = run_command([nvidia_smi] + query_gpu_args(RELEASE_GPU_FIELDS))
        if rc1 == 0 and rc2 == 0:
            state['compute_apps'] = parse_compute_apps(out1, RELEASE_APPS_FIELDS)
            state['gpus'] = parse_gpu_memory(out2, RELEASE_GPU_FIELDS)
            state.update(gpu_release_state(state['compute_apps'], state['gpus'], stopped_pids, threshold_mib))
            state['memory_figures'] = any(gpu.get('memory_used_mib') is not None for gpu in state['gpus'])
            state['error'] = None
            if not state['stopped_pids_listed'] and not state['gpus_over_threshold']:
                return True, round(clock() - start, 2), state
        else:
            state['error'] = 'nvidia-smi failed (rc %s): %s' % (rc1 or rc2, ((err1 or '') + (err2 or '')).strip()[:300])
        if clock() - start >= timeout:
            return False, round(clock() - start, 2), state
        sleep(interval)


def device_holders(source, gpu_device_glob, skip=()):
    """{pid: [device paths]} of every process holding a file matching the glob (except ``skip``)."""
    match = compile_device_glob(gpu_device_glob)
    holders = {}
    for pid in source.pids():
        if pid not in skip:
            found = split_fd_targets(source.fd_targets(pid), match)[0]
            if found:
                holders[pid] = sorted(found)
    return holders


def stuck_processes(source, pids, gpu_device_glob):
    """The processes of ``pids`` still there (SIGKILL could not end them: stuck in a kernel call, typically
    the GPU driver) -> [{pid, state, title, devices}], sorted by pid.

    ``state`` is /proc/<pid>/stat field 3 (C(D): uninterruptible sleep); ``devices`` the open files matching
    ``gpu_device_glob``, sorted; ``title`` the redacted command line (at most 160 characters).
    """
    match = compile_device_glob(gpu_device_glob)
    stuck = []
    for pid in sorted(set(pids)):
        st = source.stat(pid)
        if st is None or st.state in GONE_STATES:
            continue
        argv = redact_argv(parse_cmdline(source.cmdline_raw(pid) or b''))
        stuck.append({'pid': pid, 'state': st.state, 'title': title_of(argv)[:160] or st.comm,
                      'devices': sorted(split_fd_targets(source.fd_targets(pid), match)[0])})
    return stuck


def holder_baseline(source, gpu_device_glob, exclude=(), protected=()):
    """{pid: starttime} of the processes holding a matching device file now, except ``exclude``:
    taken before a stop, it names the holders that were deliberately left alone."""
    baseline = {}
    for pid in device_holders(source, gpu_device_glob, skip=protected):
        if pid in exclude:
            continue
        st = source.stat(pid)
        if st is not None:
            baseline[pid] = st.starttime
    return baseline


def wait_gpu_release_devices(source, gpu_device_glob, baseline, timeout, protected=(),
                             clock=time.monotonic, sleep=time.sleep, interval=0.2):
    """Without nvidia-smi: wait until no process holds a matching device file, except those that
    already held one before the stop and were left alone (``baseline``: {pid: starttime}).

    Returns (released, seconds, {'holders': [{pid, gpu_devices}]}).
    """
    start = clock()
    while True:
        holders = []
        for pid, devices in sorted(device_holders(source, gpu_device_glob, skip=protected).items()):
            st = source.stat(pid)
            if st is None or st.state in GONE_STATES:
                continue
            if baseline.get(pid) == st.starttime:
                continue
            holders.append({'pid': pid, 'gpu_devices': devices})
        if not holders:
            return True, round(clock() - start, 2), {'holders': []}
        if clock() - start >= timeout:
            return False, round(clock() - start, 2), {'holders': holders}
        sleep(interval)


def port_is_free(host, port):
    """True when ``port`` can be bound on ``host`` (SO_REUSEADDR, as uvicorn binds).

    An address that is not on this host any more (EADDRNOTAVAIL) cannot be held: free.
    """
    try:
        infos = socket.getaddrinfo(host or None, port, socket.AF_UNSPEC, socket.SOCK_STREAM, 0, socket.AI_PASSIVE)
    except socket.gaierror:
        return True
    for family, socktype, proto, _canon, address in infos:
        sock = socket.socket(family, socktype, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return False
            if exc.errno not in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT):
                return False
        finally:
            sock.close()
    return True


def wait_ports_free(endpoints, timeout, clock=time.monotonic, sleep=time.sleep, interval=0.2, is_free=port_is_free):
    """Wait until every (host, port) can be bound. Returns (released, seconds, [busy endpoints])."""
    start = clock()
    while True:
        busy = [(host, port) for host, port in endpoints if not is_free(host, port)]
        if not busy:
            return True, round(clock() - start, 2), []
        if clock() - start >= timeout:
            return False, round(clock() - start, 2), busy
        sleep(interval)


def port_listeners(source, port):
    """[(pid, argv)] of the processes with a socket listening on ``port`` (this network namespace)."""
    inodes = set()
    for text in source.net_tcp():
        inodes |= listening_inodes(text, port)
    found = []
    if not inodes:
        return found
    for pid in source.pids():
        if split_fd_targets(source.fd_targets(pid), lambda path: False, want_sockets=True)[1] & inodes:
            found.append((pid, redact_argv(parse_cmdline(source.cmdline_raw(pid) or b''))))
    return found
