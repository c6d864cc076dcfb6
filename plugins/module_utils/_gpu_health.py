# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""A GPU host's health as data, and the rules on it: ``nvidia-smi -q -x`` (recovery action, row remaps, page
retirement, ECC, persistence, the NVSwitch fabric), Fabric Manager and the persistence daemon, the kernel log's Xid
reports, and whether a torch's CUDA runtime runs on the driver. Nothing here runs a command; host_facts does and
passes the output in. ``_nvidia_smi.gpu_blockers`` (the one GPU rule) adds :func:`gpu_health_blockers`.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.inferops.sglang.plugins.module_utils._nvidia_smi import _na, normalize_bus_id


# ---- GPU health: nvidia-smi -q -x -------------------------------------------------------------------------
# The keys host_facts adds to each GPU entry from ``nvidia-smi -q -x`` (None where the driver or the GPU does not
# report the value: N/A, Not Supported, or an element older drivers do not print).
HEALTH_KEYS = ('persistence_mode', 'recovery_action', 'remapped_rows_pending', 'remapped_rows_failure',
               'retired_pages_pending', 'ecc_uncorrectable_volatile', 'fabric_state', 'fabric_status')

# <ecc_errors><volatile> counters of uncorrectable errors: Hopper/Blackwell drivers (R550+) print the sram_*/dram_*
# split, earlier Hopper drivers sram_uncorrectable, Volta/Ampere-era drivers <double_bit><total>.
_ECC_UNCORRECTABLE = ('sram_uncorrectable', 'sram_uncorrectable_parity', 'sram_uncorrectable_secded',
                      'dram_uncorrectable', 'double_bit/total')
# Fabric states of an NVSwitch system (NVML nvmlGpuFabricState_t, printed by nvidia-smi -q as Fabric / State):
# Not Supported (no NVSwitch), Not Started, In Progress, Completed.
FABRIC_NOT_READY = ('Not Started', 'In Progress')


# NVIDIA's unit names (the nvidia-fabricmanager and nvidia-persistenced packages).
FABRIC_MANAGER_UNIT = 'nvidia-fabricmanager.service'
PERSISTENCED_UNIT = 'nvidia-persistenced.service'


def nvidia_units(facts):
    """NVIDIA's units on this host that a GPU server's unit starts after and wants (``After=``/``Wants=``): Fabric
    Manager (an NVSwitch host's GPUs are unusable until it has set up the fabric) and the persistence daemon, each
    where ``systemctl`` says it is loaded.

    :param facts: host_facts' ``inferops_sglang`` fact (``fabric_manager``).
    :returns: a list of unit names (str), in that order; empty where none is installed or PID 1 is not systemd.
    """
    manager = (facts or {}).get('fabric_manager') or {}
    units = []
    if manager.get('load_state') == 'loaded':
        units.append(FABRIC_MANAGER_UNIT)
    if manager.get('persistenced_load_state') == 'loaded':
        units.append(PERSISTENCED_UNIT)
    return units


def parse_fabric_manager_version(text):
    """The version from ``nv-fabricmanager --version`` ('Fabric Manager version is : 580.65.06') -> str, or None."""
    m = re.search(r'version\s+is\s*:\s*([0-9][0-9.]*[0-9])', text or '', re.IGNORECASE)
    return m.group(1) if m else None


def query_xml_args():
    """The arguments of ``nvidia-smi`` for the full query as XML (``-q -x``), which carries the GPU health."""
    return ['-q', '-x']


def _xml_text(element, path):
    found = element.find(path) if element is not None else None
    if found is None or found.text is None:
        return None
    return _na(found.text)


def _yes_no(value):
    if value is None:
        return None
    return value.strip().lower() in ('yes', 'true', 'pending')


def _ecc_uncorrectable(gpu):
    volatile = gpu.find('ecc_errors/volatile')
    counts = [_xml_text(volatile, path) for path in _ECC_UNCORRECTABLE]
    numbers = []
    for count in counts:
        try:
            numbers.append(int(count))
        except (TypeError, ValueError):
            continue
    return sum(numbers) if numbers else None


def parse_query_xml(text):
    """Parse ``nvidia-smi -q -x`` (the full query as XML; element names as in nvsmi_device_v12/v13.dtd).

    :param text: str, the command's standard output.
    :returns: None when ``text`` is not nvidia-smi's XML; else {'driver_version': str|None, 'cuda_version':
        str|None (the newest CUDA the driver supports, e.g. '13.0'), 'gpus': {bus id (normalized as
        :func:`normalize_bus_id`): {'persistence_mode': 'Enabled'|'Disabled'|None, 'recovery_action': str|None
        (``gpu_recovery_action``, R550+: 'None', 'Reset', 'Reboot', 'Drain P2P', 'Drain and Reset'),
        'remapped_rows_pending': bool|None, 'remapped_rows_failure': bool|None (Ampere and later),
        'retired_pages_pending': bool|None (before Ampere), 'ecc_uncorrectable_volatile': int|None (uncorrectable
        ECC errors since the driver loaded, every counter the driver prints summed), 'fabric_state': str|None,
        'fabric_status': str|None (NVSwitch systems; R525+)}}}.
    """
    from xml.etree import ElementTree
    try:
        root = ElementTree.fromstring((text or '').strip())
    except ElementTree.ParseError:
        return None
    if root.tag != 'nvidia_smi_log':
        return None
    gpus = {}
    for gpu in root.findall('gpu'):
        bus_id = normalize_bus_id(gpu.get('id') or _xml_text(gpu, 'pci/pci_bus_id') or '')
        pending = _xml_text(gpu, 'retired_pages/pending_retirement') or _xml_text(gpu, 'retired_pages/pending_blacklist')
        gpus[bus_id] = {
            'persistence_mode': _xml_text(gpu, 'persistence_mode'),
            'recovery_action': _xml_text(gpu, 'gpu_recovery_action'),
            'remapped_rows_pending': _yes_no(_xml_text(gpu, 'remapped_rows/remapped_row_pending')),
            'remapped_rows_failure': _yes_no(_xml_text(gpu, 'remapped_rows/remapped_row_failure')),
            'retired_pages_pending': _yes_no(pending),
            'ecc_uncorrectable_volatile': _ecc_uncorrectable(gpu),
            'fabric_state': _xml_text(gpu, 'fabric/state'),
            'fabric_status': _xml_text(gpu, 'fabric/status'),
        }
    return {'driver_version': _xml_text(root, 'driver_version'), 'cuda_version': _xml_text(root, 'cuda_version'),
            'gpus': gpus}


def add_gpu_health(gpus, health):
    """Set the :data:`HEALTH_KEYS` of each GPU entry (``parse_query_gpu``'s, with ``pci_bus_id``) from
    :func:`parse_query_xml`'s ``gpus``; None for every key where ``health`` is None or lacks the GPU."""
    found = (health or {}).get('gpus') or {}
    for gpu in gpus:
        values = found.get(normalize_bus_id(gpu.get('pci_bus_id') or '')) or {}
        for key in HEALTH_KEYS:
            gpu[key] = values.get(key)
    return gpus


def fabric_summary(gpus):
    """The host's NVSwitch fabric from its GPU entries (with :data:`HEALTH_KEYS`).

    :returns: {'state': 'none' (no GPU reports a fabric: no NVSwitch, or a driver before R525) | 'ready' (every GPU
        that reports one: Completed / Success) | 'not_ready' | 'failed', 'gpus': [index of each GPU not ready or
        failed]}.
    """
    reported = [gpu for gpu in gpus if gpu.get('fabric_state')]
    if not reported:
        return {'state': 'none', 'gpus': []}
    not_ready = [gpu for gpu in reported if gpu['fabric_state'] in FABRIC_NOT_READY]
    failed = [gpu for gpu in reported if gpu['fabric_state'] == 'Completed'
              and (gpu.get('fabric_status') or 'Success') != 'Success']
    state = 'failed' if failed else 'not_ready' if not_ready else 'ready'
    return {'state': state, 'gpus': [gpu.get('index') for gpu in failed + not_ready]}


def gpu_recovery_needs(gpu):
    """What a GPU needs before a new CUDA process can rely on it, from its :data:`HEALTH_KEYS`, or None.

    The driver's own verdict first (``recovery_action``, R550+), then what older drivers leave to the reader: a row
    remap that failed (the GPU needs replacing), a pending row remap or page retirement, uncorrectable ECC errors
    since the driver loaded (both applied or cleared by a GPU reset).

    :returns: None, or {'action': 'reset' | 'reboot' | 'drain_p2p' | 'drain_reset' | 'replace', 'why': str}.
    """
    action = (gpu.get('recovery_action') or '').strip()
    lowered = action.lower()
    if lowered and lowered != 'none':
        kind = ('reboot' if 'reboot' in lowered else 'drain_reset' if 'drain' in lowered and 'reset' in lowered
                else 'drain_p2p' if 'drain' in lowered else 'reset')
        return {'action': kind, 'why': 'GPU Recovery Action: %s' % action}
    if gpu.get('remapped_rows_failure'):
        return {'action': 'replace', 'why': 'a row remap failed (Remapped Rows: Remapping Failure Occurred)'}
    if gpu.get('remapped_rows_pending'):
        return {'action': 'reset', 'why': 'a row remap is pending (Remapped Rows: Pending)'}
    if gpu.get('retired_pages_pending'):
        return {'action': 'reset', 'why': 'a page retirement is pending (Retired Pages: Pending)'}
    if gpu.get('ecc_uncorrectable_volatile'):
        return {'action': 'reset', 'why': '%s uncorrectable ECC error(s) since the driver loaded (Volatile)'
                % gpu['ecc_uncorrectable_volatile']}
    return None


# Recovery advice per action; %(index)s and %(bus)s are the GPU's.
_RECOVERY_ADVICE = {
    'reset': ('stop every process on it (the running server too, in a maintenance window), then reset it '
              '(nvidia-smi -r -i %(index)s) or reboot'),
    'drain_reset': ('drain it (stop every process on it, the running server too), then reset it '
                    '(nvidia-smi -r -i %(index)s)'),
    'drain_p2p': 'drain its peer-to-peer traffic (stop every process on it and its NVLink peers), then reset it',
    'reboot': 'reboot the host (the driver asks for it)',
    'replace': 'drain the host and have the GPU replaced (its memory can no longer remap a failed row)',
}

# The oldest Linux driver each CUDA major version runs on (CUDA minor version compatibility: a runtime of that major
# runs on any driver from this one on; NVIDIA's CUDA Toolkit release notes, "CUDA Driver" table).
CUDA_MAJOR_MIN_DRIVER = {'11': '450.80.02', '12': '525.60.13', '13': '580.65.06'}


def _major_minor(version):
    try:
        parts = [int(part) for part in str(version).split('.')[:2]]
    except (TypeError, ValueError):
        return None
    return tuple(parts + [0] * (2 - len(parts)))


def cuda_runtime_blocker(torch_cuda, driver_cuda, driver_version=None):
    """A torch built for a CUDA major version the driver does not support, as a blocker message; '' when it runs.

    A torch wheel carries its CUDA runtime (``torch.version.cuda``, e.g. '13.0' for +cu130); the driver supports every
    runtime up to its own CUDA version (nvidia-smi's 'CUDA Version', e.g. '12.8' for driver 570) and, by CUDA's minor
    version compatibility, every runtime of the same major version. A newer major fails at CUDA init ('CUDA driver
    version is insufficient for CUDA runtime version'), after the old server was stopped.

    :param torch_cuda: str|None, the server's torch CUDA runtime (host_facts ``python.torch_cuda_version``).
    :param driver_cuda: str|None, the driver's CUDA version (host_facts ``cuda_driver_version``).
    :param driver_version: str|None, the driver's version, named in the message.
    :returns: str, empty when either version is unknown or the runtime's major version is supported.
    """
    runtime, supported = _major_minor(torch_cuda), _major_minor(driver_cuda)
    if runtime is None or supported is None or runtime[0] <= supported[0]:
        return ''
    floor = CUDA_MAJOR_MIN_DRIVER.get(str(runtime[0]))
    return ('torch in the server\'s interpreter is built for CUDA %s, which needs a driver that supports CUDA %d.x%s; '
            'this host\'s driver%s supports CUDA %s. Install a newer NVIDIA driver%s, or a torch built for CUDA %d.x '
            '(e.g. the +cu%d%d wheel) in the server\'s venv.'
            % (torch_cuda, runtime[0], ' (>= %s)' % floor if floor else '',
               ' %s' % driver_version if driver_version else '', driver_cuda,
               ' (>= %s)' % floor if floor else '', supported[0], supported[0], supported[1]))


def gpu_health_blockers(facts):
    """The blockers of :func:`gpu_blockers` that no setting turns off: an NVSwitch fabric that is not ready, a GPU
    that needs a reset, a reboot or replacing, a torch the driver cannot run (see :func:`cuda_runtime_blocker`).

    :param facts: host_facts' ``inferops_sglang`` fact (``gpus`` with :data:`HEALTH_KEYS`, ``fabric_manager``,
        ``python.torch_cuda_version``, ``cuda_driver_version``, ``driver_version``).
    :returns: a list of {'kind': 'fabric' | 'gpu_recovery' | 'cuda_runtime', 'message': str}.
    """
    untouched = ' The running server was left as it is.'
    blockers = []
    gpus = facts.get('gpus') or []
    fabric = fabric_summary(gpus)
    if fabric['state'] in ('not_ready', 'failed'):
        manager = facts.get('fabric_manager') or {}
        unit = manager.get('active_state')
        groups = []
        for gpu in gpus:
            if gpu.get('index') not in fabric['gpus']:
                continue
            said = 'State: %s%s' % (gpu.get('fabric_state'), ', Status: %s' % gpu['fabric_status']
                                    if gpu.get('fabric_status') and gpu['fabric_state'] == 'Completed' else '')
            for group in groups:
                if group[0] == said:
                    group[1].append(str(gpu.get('index')))
                    break
            else:
                groups.append((said, [str(gpu.get('index'))]))
        detail = '; '.join('%s %s: %s' % ('GPU' if len(indexes) == 1 else 'GPUs', ', '.join(indexes), said)
                           for said, indexes in groups)
        blockers.append({'kind': 'fabric', 'message': (
            'The NVSwitch fabric is not ready (%s; nvidia-fabricmanager.service: %s%s): CUDA init fails with '
            "'system not yet initialized' (error 802) until Fabric Manager has set it up. %s, then wait until "
            "nvidia-smi -q shows Fabric State: Completed, Status: Success on every GPU.%s"
            % (detail, unit or 'unknown', ', version %s' % manager['version'] if manager.get('version') else '',
               'Start nvidia-fabricmanager (systemctl start nvidia-fabricmanager)' if unit != 'active'
               else 'Check nvidia-fabricmanager\'s log (journalctl -u nvidia-fabricmanager), restart it',
               untouched))})
    manager = facts.get('fabric_manager') or {}
    driver = facts.get('driver_version')
    if manager.get('version') and driver and manager['version'] != driver:
        blockers.append({'kind': 'fabric', 'message': (
            'Fabric Manager %s differs from the NVIDIA driver %s: it refuses to set up the fabric (or the GPUs stay '
            "'not yet initialized'). Install the nvidia-fabricmanager package of version %s (the driver's), restart it, "
            'then run again.%s' % (manager['version'], driver, driver, untouched))})
    for gpu in gpus:
        needs = gpu_recovery_needs(gpu)
        if needs:
            advice = _RECOVERY_ADVICE[needs['action']] % {'index': gpu.get('index'), 'bus': gpu.get('pci_bus_id')}
            blockers.append({'kind': 'gpu_recovery', 'message': (
                'GPU %s (%s) needs recovery: %s. A new server on it fails or computes on bad memory; %s.%s'
                % (gpu.get('index'), gpu.get('pci_bus_id'), needs['why'], advice, untouched))})
    runtime = cuda_runtime_blocker((facts.get('python') or {}).get('torch_cuda_version'),
                                   facts.get('cuda_driver_version'), driver)
    if runtime:
        blockers.append({'kind': 'cuda_runtime', 'message': runtime + untouched})
    return blockers


# ---- Xid events in the kernel log -------------------------------------------------------------------------------
# The NVIDIA driver's Xid report (open and proprietary kernel modules), e.g.
#   NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.
#   NVRM: Xid (PCI:0000:b7:00): 48, pid=1234, name=python3, An uncorrectable double bit error (DBE) has been detected...
_XID_RE = re.compile(r'NVRM: Xid \(PCI:(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})(?:\.\d)?\): '
                     r'(?P<xid>\d+),\s*(?P<rest>.*)$')
# Xids that mean a GPU needs a reset or a reboot (NVIDIA's Xid catalog): 48 double bit ECC error, 63/64 row remapping
# event/failure, 79 fallen off the bus, 92 high single-bit ECC rate, 94 contained ECC error, 95 uncontained ECC error,
# 119/120 GSP timeout/error, 154 GPU recovery action changed.
XID_NEEDS_RECOVERY = frozenset((48, 63, 64, 79, 92, 94, 95, 119, 120, 154))


def parse_kmsg_record(record):
    """One /dev/kmsg record ('<prio>,<seq>,<usec since boot>,<flags>;<text>', continuation lines after it) ->
    (seconds since boot: float | None, text: str)."""
    head, sep, text = (record or '').partition(';')
    if not sep:
        return None, record or ''
    fields = head.split(',')
    try:
        seconds = int(fields[2]) / 1e6
    except (IndexError, ValueError):
        seconds = None
    return seconds, text.split('\n', 1)[0]


def parse_xid_events(records, limit=20):
    """The NVIDIA Xid reports among kernel log records, oldest first, at most the last ``limit``.

    :param records: iterable of (seconds since boot: float | None, text: str), e.g. from :func:`parse_kmsg_record`.
    :returns: list of {'pci_bus_id': str (normalized, function .0 added), 'xid': int, 'seconds': float | None,
        'text': str (the report after the Xid number, at most 200 characters), 'needs_recovery': bool (the Xid is in
        :data:`XID_NEEDS_RECOVERY`)}.
    """
    events = []
    for seconds, text in records:
        match = _XID_RE.search(text or '')
        if not match:
            continue
        xid = int(match.group('xid'))
        events.append({'pci_bus_id': normalize_bus_id(match.group('bus') + '.0'), 'xid': xid, 'seconds': seconds,
                       'text': match.group('rest').strip()[:200], 'needs_recovery': xid in XID_NEEDS_RECOVERY})
    return events[-int(limit):] if limit else events
