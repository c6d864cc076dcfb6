# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""What the server_process and server_process_info modules do; the module files only map Ansible
parameters and results onto :func:`info` and :func:`absent`.

The package _server_process holds their machinery, one concern per file: cmdline (what a command line is),
discovery (the servers of a host), stop (signalling safely), release (GPU and port waits) and this module (the glue
both modules share). Its __init__.py stays empty (ansible-test sanity's empty-init on ansible-core 2.16).

The options both modules share are declared once here (:data:`SHARED_ARGUMENT_SPEC`) and documented
once (the doc fragment ``inferops.sglang._server_process``).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import time

from ansible_collections.inferops.sglang.plugins.module_utils._procfs import ProcFS, parse_cmdline
from ansible_collections.inferops.sglang.plugins.module_utils._secrets import redact_argv
from ansible_collections.inferops.sglang.plugins.module_utils._server_process.cmdline import title_of
from ansible_collections.inferops.sglang.plugins.module_utils._server_process.discovery import (
    DEFAULT_GPU_DEVICE_GLOB,
    DEFAULT_UNIT,
    discover,
    public,
)
from ansible_collections.inferops.sglang.plugins.module_utils._server_process.release import (
    holder_baseline,
    port_listeners,
    stuck_processes,
    wait_gpu_release_devices,
    wait_gpu_release_nvidia_smi,
    wait_ports_free,
)
from ansible_collections.inferops.sglang.plugins.module_utils._server_process.stop import (
    plan_targets,
    stop_targets,
)

NVIDIA_SMI_DEFAULT = 'nvidia-smi'
# The failure when a process SIGKILL cannot end still holds GPU devices (nothing but a reboot frees them).
STUCK_MESSAGE = 'a process stuck in the driver holds the GPUs: reboot needed'

# The options server_process and server_process_info share: the same discovery, the same defaults.
SHARED_ARGUMENT_SPEC = dict(
    port=dict(type='int'),
    unit=dict(type='str', default=DEFAULT_UNIT),
    exclude_pids=dict(type='list', elements='int', default=[]),
    include_gpu_holders=dict(type='bool', default=True),
    gpu_device_glob=dict(type='str', default=DEFAULT_GPU_DEVICE_GLOB),
)
# The options of server_process only (stopping and the release waits).
STOP_ARGUMENT_SPEC = dict(
    state=dict(type='str', choices=['absent'], default='absent'),
    grace_period=dict(type='float', default=60),
    kill_timeout=dict(type='float', default=30),
    wait_gpu_release=dict(type='bool', default=True),
    release_timeout=dict(type='float', default=120),
    gpu_memory_threshold_mib=dict(type='int', default=1024),
    nvidia_smi=dict(type='str', default=NVIDIA_SMI_DEFAULT),
    wait_port_free=dict(type='bool', default=True),
)
# Options of server_process that must not be negative.
NON_NEGATIVE_OPTIONS = ('grace_period', 'kill_timeout', 'release_timeout', 'gpu_memory_threshold_mib')


def shared_argument_spec():
    """A fresh copy of :data:`SHARED_ARGUMENT_SPEC` (AnsibleModule may modify what it is given)."""
    return copy.deepcopy(SHARED_ARGUMENT_SPEC)


def stop_argument_spec():
    """The argument spec of server_process: the shared options plus :data:`STOP_ARGUMENT_SPEC`."""
    spec = shared_argument_spec()
    spec.update(copy.deepcopy(STOP_ARGUMENT_SPEC))
    return spec


class ModuleFailure(Exception):
    """A failure to report with fail_json: ``msg`` plus the partial result."""

    def __init__(self, msg, result=None):
        super(ModuleFailure, self).__init__(msg)
        self.msg = msg
        self.result = result or {}


def _discover_from_params(params, source=None, self_pid=None):
    return discover(
        source=source,
        unit=params.get('unit') or DEFAULT_UNIT,
        port=params.get('port'),
        exclude_pids=params.get('exclude_pids') or (),
        include_gpu_holders=params.get('include_gpu_holders', True),
        gpu_device_glob=params.get('gpu_device_glob') or DEFAULT_GPU_DEVICE_GLOB,
        self_pid=self_pid,
    )


def info(params, source=None, self_pid=None):
    """Result of inferops.sglang.server_process_info (a dict; see its RETURN)."""
    found = _discover_from_params(params, source or ProcFS(), self_pid)
    return {
        'changed': False,
        'servers': [public(s) for s in found.servers],
        'strays': [public(s) for s in found.strays],
        'managed': [public(s) for s in found.managed],
        'gpu_holders_unrelated': found.gpu_holders_unrelated,
        'ignored': found.ignored,
        'unproven': found.unproven,
        'foreign': found.foreign,
        'listeners': found.listeners,
    }


def render_process_lines(members, limit=240):
    """One line per process, for --diff: '<pid> [<role>] <title>' sorted by pid."""
    lines = []
    for member in sorted(members, key=lambda m: m['pid']):
        title = member['title']
        if len(title) > limit:
            title = title[:limit - 3] + '...'
        lines.append('%d [%s] %s' % (member['pid'], member['role'], title))
    return '\n'.join(lines) + ('\n' if lines else '')


def _describe(source, pid):
    argv = redact_argv(parse_cmdline(source.cmdline_raw(pid) or b''))
    return '%d (%s)' % (pid, title_of(argv)[:160] or '?')


def absent(params, run_command=None, nvidia_smi=None, check_mode=False, want_diff=False, source=None,
           self_pid=None, clock=time.monotonic, sleep=time.sleep, send_signal=None):
    """Result of inferops.sglang.server_process state=absent; raises ModuleFailure.

    ``nvidia_smi`` is the resolved path of nvidia-smi or None; ``run_command(argv) -> (rc, out, err)``;
    ``send_signal`` replaces :func:`stop.send_signal` (tests).
    """
    source = source or ProcFS()
    found = _discover_from_params(params, source, self_pid)
    strays = found.strays
    targets = plan_targets(strays, found.identity)
    before = render_process_lines([m for s in strays for m in s['members']])
    result = {
        'changed': bool(targets),
        'msg': '',
        'strays': [public(s) for s in strays],
        'managed': [public(s) for s in found.managed],
        'gpu_holders_unrelated': found.gpu_holders_unrelated,
        'ignored': found.ignored,
        'unproven': found.unproven,
        'foreign': found.foreign,
        'target_pids': sorted(t.pid for t in targets),
        'stopped': [],
        'gpu_release': {'waited': False, 'method': None, 'seconds': 0.0, 'gpus': [], 'compute_apps': [],
                        'holders': [], 'memory_figures': None},
        'port_release': {'waited': False, 'seconds': 0.0, 'endpoints': []},
        'stuck': [],
        'reboot_required': False,
    }
    if want_diff:
        result['diff'] = {'before_header': 'stray SGLang processes', 'after_header': 'stray SGLang processes',
                          'before': before, 'after': ''}
    if not targets:
        result['msg'] = 'no stray SGLang server process found'
        return result
    summary = '%d stray SGLang server(s), %d process(es): %s' % (
        len(strays), len(targets), ', '.join(str(t.pid) for t in targets))
    if check_mode:
        result['msg'] = 'would stop ' + summary
        return result

    glob = params.get('gpu_device_glob') or DEFAULT_GPU_DEVICE_GLOB
    wait_gpu = params.get('wait_gpu_release', True)
    baseline = None
    if wait_gpu and not nvidia_smi:
        baseline = holder_baseline(source, glob, exclude=set(t.pid for t in targets), protected=found.protected)

    grace_period = float(params.get('grace_period', 60))
    kill_timeout = float(params.get('kill_timeout', 30))
    stopped_pids = set()
    result['changed'] = False
    # Round 0 stops what the scan found. SGLang's own shutdown can leave a worker it spawned meanwhile
    # orphaned: up to two more rounds stop such orphans. A stray server (not orphans) seen again after
    # a round was restarted by someone (a shell loop, a supervisor): that is a failure.
    for stop_round in range(3):
        if stop_round:
            again = _discover_from_params(params, source, self_pid)
            if not again.strays:
                break
            restarted = [s for s in again.strays if not s['orphaned']]
            if restarted or stop_round == 2:
                raise ModuleFailure(_running_again(restarted or again.strays), result)
            targets = plan_targets(again.strays, again.identity)
        outcome = stop_targets(targets, source, grace_period, kill_timeout, protected=found.protected,
                               clock=clock, sleep=sleep, send=send_signal)
        result['stopped'].extend(outcome['stopped'])
        result['changed'] = result['changed'] or outcome['signalled']
        stopped_pids.update(t.pid for t in targets)
        if want_diff:
            remaining = set(t.pid for t in outcome['remaining'])
            result['diff']['after'] = render_process_lines(
                [m for srv in strays for m in srv['members'] if m['pid'] in remaining])
        if outcome['errors']:
            raise ModuleFailure('could not stop %s' % '; '.join(
                '%s: %s' % (_describe(source, pid), message) for pid, message in outcome['errors']), result)
        if outcome['remaining']:
            raise ModuleFailure(_stuck_failure(source, [t.pid for t in outcome['remaining']], glob,
                                               params.get('kill_timeout', 30), result), result)
    result['target_pids'] = sorted(stopped_pids)
    target_pids = stopped_pids

    if wait_gpu:
        timeout = float(params.get('release_timeout', 120))
        threshold = int(params.get('gpu_memory_threshold_mib', 1024))
        if nvidia_smi:
            released, seconds, state = wait_gpu_release_nvidia_smi(run_command, nvidia_smi, target_pids, threshold,
                                                                   timeout, clock=clock, sleep=sleep)
            result['gpu_release'].update(waited=True, method='nvidia-smi', seconds=seconds,
                                         gpus=state['gpus'], compute_apps=state['compute_apps'],
                                         memory_figures=state['memory_figures'])
            if released and not state['memory_figures']:
                result.setdefault('warnings', []).append(
                    'nvidia-smi gave no memory.used figure for any GPU ([N/A]): the GPU release wait followed only the '
                    'stopped pids in its compute process list, so the driver may still be freeing their memory. Check '
                    'nvidia-smi before starting a server that needs all of it.')
        else:
            released, seconds, state = wait_gpu_release_devices(source, glob, baseline, timeout,
                                                                protected=found.protected, clock=clock, sleep=sleep)
            result['gpu_release'].update(waited=True, method='device-files', seconds=seconds,
                                         holders=state['holders'])
        if not released:
            raise ModuleFailure(_gpu_failure(source, state, seconds, threshold, glob), result)

    if params.get('wait_port_free', True):
        endpoints = sorted(set((s['host'], s['port']) for s in strays if s['port'] is not None),
                           key=lambda e: (str(e[0]), e[1]))
        if endpoints:
            released, seconds, busy = wait_ports_free(endpoints, float(params.get('release_timeout', 120)),
                                                      clock=clock, sleep=sleep)
            result['port_release'] = {'waited': True, 'seconds': seconds,
                                      'endpoints': [{'host': h, 'port': p} for h, p in endpoints]}
            if not released:
                raise ModuleFailure('port(s) still in use %s s after the stop: %s' % (
                    seconds, '; '.join(_describe_port(source, host, port) for host, port in busy)), result)

    # A parent that restarts what was stopped a little later would undo all of this.
    again = _discover_from_params(params, source, self_pid).strays
    if again:
        raise ModuleFailure(_running_again(again), result)
    result['msg'] = 'stopped ' + summary
    return result


def _stuck_failure(source, pids, glob, kill_timeout, result):
    """Fill result's stuck and reboot_required for processes SIGKILL did not end; return the failure message."""
    result['stuck'] = stuck_processes(source, pids, glob)
    result['reboot_required'] = any(entry['devices'] for entry in result['stuck'])
    if result['reboot_required']:
        return '%s: %s (still running %s s after SIGKILL)' % (STUCK_MESSAGE, '; '.join(
            '%d (%s) in state %s holding %s' % (entry['pid'], entry['title'], entry['state'], ', '.join(entry['devices']))
            for entry in result['stuck'] if entry['devices']), kill_timeout)
    return 'still running %s s after SIGKILL (uninterruptible sleep in a kernel call?): %s' % (
        kill_timeout, ', '.join(_describe(source, pid) for pid in pids))


def _running_again(strays):
    return ('stray SGLang server(s) running again after the stop (restarted by a parent?): %s'
            % '; '.join(_describe_server(s) for s in strays))


def _gpu_failure(source, state, seconds, threshold, glob):
    """The message of a GPU release timeout, naming what still holds the GPUs."""
    if 'holders' in state:
        return 'GPU device files (%s) still held %s s after the stop by: %s' % (glob, seconds, ', '.join(
            '%s holding %s' % (_describe(source, h['pid']), ', '.join(h['gpu_devices'])) for h in state['holders']))
    problems = []
    if state['error']:
        problems.append(state['error'])
    if state['stopped_pids_listed']:
        problems.append('nvidia-smi still lists stopped pids %s' % state['stopped_pids_listed'])
    for gpu in state['gpus_over_threshold']:
        problems.append('GPU %d uses %s MiB (threshold %s MiB%s)' % (
            gpu['index'], gpu['memory_used_mib'], threshold,
            ', not counting %s MiB of processes left alone' % gpu['kept_mib'] if gpu.get('kept_mib') else ''))
    holders = ['%s: %s MiB' % (_describe(source, app['pid']), app['used_memory_mib']) for app in state['compute_apps']]
    return 'GPU memory not released %s s after the stop: %s; compute processes: %s' % (
        seconds, '; '.join(problems), ', '.join(holders) or 'none listed')


def _describe_port(source, host, port):
    holders = ', '.join('%d (%s)' % (pid, title_of(argv)[:160]) for pid, argv in port_listeners(source, port))
    return '%s:%d held by %s' % (host, port, holders or 'a process this host cannot see')


def _describe_server(server):
    parent = server['parent']
    return 'main pid %d (%s), parent %s' % (
        server['main_pid'], title_of(server['argv'])[:160],
        '%d (%s)' % (parent['pid'], parent['title'][:120]) if parent else 'none')
