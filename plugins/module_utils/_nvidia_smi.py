# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""Parsers of ``nvidia-smi`` output: GPUs, compute processes, versions, topology and NVLink status.

Nothing here runs nvidia-smi; the modules run it (in the C locale) and pass its output in. The query
helpers (:func:`query_gpu_args`, :func:`compute_apps_args`) build the command lines the parsers read.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

# Columns asked from `nvidia-smi --query-gpu=...` by host_facts, in this order.
QUERY_GPU_FIELDS = ('index', 'name', 'uuid', 'memory.total', 'memory.used', 'compute_cap',
                    'driver_version', 'pci.bus_id')
# Columns asked from `nvidia-smi --query-compute-apps=...` by host_facts, in this order.
COMPUTE_APPS_FIELDS = ('gpu_uuid', 'pid', 'process_name', 'used_gpu_memory')

# Keys of a GPU entry, per query field.
_GPU_KEYS = {
    'index': 'index',
    'name': 'name',
    'uuid': 'uuid',
    'memory.total': 'memory_total_mib',
    'memory.used': 'memory_used_mib',
    'compute_cap': 'compute_cap',
    'driver_version': 'driver_version',
    'pci.bus_id': 'pci_bus_id',
}
# Keys of a compute process entry, per query field.
_APP_KEYS = {
    'gpu_uuid': 'gpu_uuid',
    'pid': 'pid',
    'process_name': 'process_name',
    'used_gpu_memory': 'used_memory_mib',
}

# `nvidia-smi topo -m` legend: X = self; NV# = a bonded set of # NVLinks; the rest are PCIe paths
# (SOC is what drivers before ~390 printed for SYS).
PCIE_LINKS = frozenset(('PIX', 'PXB', 'PHB', 'NODE', 'SYS', 'SOC'))
_NVLINK_RE = re.compile(r'^NV\d+$')

INTERCONNECTS = ('nvlink', 'pcie', 'mixed', 'single', 'none')

# nvidia-smi underlines the header of `topo -m` with terminal escapes even when its output is not a
# terminal (ESC[4m ... ESC[0m): strip them before parsing.
_ANSI_RE = re.compile(r'\x1b\[[0-9;?]*[A-Za-z]')

_NA_VALUES = frozenset(('', 'N/A', '[N/A]', '[Not Supported]', 'Not Supported', '[Unknown Error]'))
_TOPO_STOP_TOKENS = frozenset(('CPU', 'NUMA', 'GPU'))
_CSV_FORMAT = '--format=csv,noheader,nounits'


def query_gpu_args(fields=QUERY_GPU_FIELDS):
    """The arguments of ``nvidia-smi`` for a ``--query-gpu`` of ``fields`` (list of str)."""
    return ['--query-gpu=' + ','.join(fields), _CSV_FORMAT]


def compute_apps_args(fields=COMPUTE_APPS_FIELDS):
    """The arguments of ``nvidia-smi`` for a ``--query-compute-apps`` of ``fields`` (list of str)."""
    return ['--query-compute-apps=' + ','.join(fields), _CSV_FORMAT]


def strip_ansi(text):
    """Text without terminal escape sequences."""
    return _ANSI_RE.sub('', text or '')


def _na(value):
    """None for the placeholders nvidia-smi prints when a value is missing."""
    value = value.strip()
    if value in _NA_VALUES:
        return None
    return value


def parse_mib(value):
    """A memory amount as nvidia-smi prints it -> int MiB: '143771', '143771 MiB', '4334.0' -> the number;
    None for N/A and anything else that is not a number."""
    value = _na(value)
    if value is None:
        return None
    if value.endswith('MiB'):
        value = value[:-3].strip()
    try:
        return int(float(value))
    except (ValueError, OverflowError):
        return None


def _smi_lines(text):
    """Data lines of nvidia-smi csv output: no blanks, no terminal escapes."""
    return [line for line in strip_ansi(text).splitlines() if line.strip()]


def _csv_rows(text, fields, glue):
    """{field: cell} per csv line of ``fields``; a line with fewer cells is skipped. A line with more cells
    has a comma inside the ``glue`` field (a product or process name), which gets it back; without that
    field the extra cells at the end are ignored."""
    fields = tuple(fields)
    rows = []
    for line in _smi_lines(text):
        cells = [c.strip() for c in line.split(',')]
        if len(cells) < len(fields):
            continue
        if len(cells) > len(fields):
            if glue not in fields:
                rows.append(dict(zip(fields, cells)))
                continue
            extra = len(cells) - len(fields)
            pos = fields.index(glue)
            cells[pos:pos + extra + 1] = [', '.join(cells[pos:pos + extra + 1])]
        rows.append(dict(zip(fields, cells)))
    return rows


def parse_query_gpu(text, fields=QUERY_GPU_FIELDS):
    """Parse `nvidia-smi --query-gpu=<fields> --format=csv,noheader,nounits`.

    Also accepts `--format=csv` (header line and ' MiB' units). Lines that are not GPU rows (for
    example 'No devices were found') are skipped. Returns a list of dicts sorted by index, with the
    keys index (int), name, uuid, memory_total_mib (int), memory_used_mib (int), compute_cap,
    driver_version, pci_bus_id; a key whose field was not asked (or reads N/A) is None.
    """
    gpus = []
    for row in _csv_rows(text, fields, 'name'):
        if 'index' in row and not re.match(r'^\d+$', row['index']):
            continue  # header line ("index, name, ...") or noise
        gpu = dict((key, None) for key in _GPU_KEYS.values())
        for field, value in row.items():
            key = _GPU_KEYS.get(field)
            if key is None:
                continue
            if field in ('memory.total', 'memory.used'):
                gpu[key] = parse_mib(value)
            elif field == 'index':
                gpu[key] = int(value)
            else:
                gpu[key] = _na(value)
        gpus.append(gpu)
    gpus.sort(key=lambda g: g['index'] if g['index'] is not None else 0)
    return gpus


def parse_gpu_memory(text, fields=('index', 'memory.used')):
    """Parse ``nvidia-smi --query-gpu=index,memory.used[,uuid] --format=csv,noheader,nounits``.

    :param fields: the fields asked, in order: ``index``, ``memory.used`` and optionally ``uuid``.
    Returns [{'index': int, 'memory_used_mib': int or None[, 'uuid': str]}] sorted by index.
    """
    keep = ['index', 'memory_used_mib'] + (['uuid'] if 'uuid' in fields else [])
    return [dict((key, gpu.get(key)) for key in keep) for gpu in parse_query_gpu(text, tuple(fields))]


def parse_compute_apps(text, fields=COMPUTE_APPS_FIELDS):
    """Parse `nvidia-smi --query-compute-apps=<fields> --format=csv,noheader,nounits` (a header line and
    ' MiB' units are accepted too).

    :param fields: the fields asked, in order, among gpu_uuid, pid, process_name, used_gpu_memory; pid
        must be one of them.
    :returns: a list of dicts with one key per field asked: gpu_uuid, pid (int), process_name,
        used_memory_mib (int or None). 'No running processes found', header lines and rows whose pid
        column is not a number (another column layout) are skipped.
    """
    apps = []
    for row in _csv_rows(text, fields, 'process_name'):
        if not re.match(r'^\d+$', row.get('pid', '')):
            continue  # header line or noise
        app = {}
        for field, value in row.items():
            key = _APP_KEYS.get(field, field)
            if field == 'pid':
                app[key] = int(value)
            elif field == 'used_gpu_memory':
                app[key] = parse_mib(value)
            else:
                app[key] = _na(value)
        apps.append(app)
    return apps


def parse_cuda_version_from_smi(text):
    """The 'CUDA Version' the driver supports, from plain `nvidia-smi` (header box),
    `nvidia-smi -q` ('CUDA Version : 13.0') or `nvidia-smi -q -x` (<cuda_version>). None if absent."""
    text = text or ''
    m = re.search(r'CUDA Version\s*:\s*(\d+(?:\.\d+)*)', text)
    if m:
        return m.group(1)
    m = re.search(r'<cuda_version>\s*(\d+(?:\.\d+)*)\s*</cuda_version>', text)
    if m:
        return m.group(1)
    return None


def parse_driver_version_from_smi(text):
    """The driver version from plain `nvidia-smi`, `nvidia-smi -q` or `-q -x`. None if absent."""
    text = text or ''
    m = re.search(r'Driver Version\s*:\s*(\d+(?:\.\d+)*)', text)
    if m:
        return m.group(1)
    m = re.search(r'<driver_version>\s*(\d+(?:\.\d+)*)\s*</driver_version>', text)
    if m:
        return m.group(1)
    return None


def smi_failure_message(text):
    """First meaningful line of a failed nvidia-smi run (for a warning)."""
    for line in (text or '').splitlines():
        line = line.strip()
        if line:
            return line
    return None


def classify_link(cell):
    """'nvlink' for NV#, 'pcie' for PIX/PXB/PHB/NODE/SYS, 'self' for X, None for anything else."""
    cell = (cell or '').strip()
    if cell == 'X':
        return 'self'
    if _NVLINK_RE.match(cell):
        return 'nvlink'
    if cell in PCIE_LINKS:
        return 'pcie'
    return None


def _device_sort_key(name):
    m = re.match(r'^([A-Za-z]+)(\d+)$', name)
    if m:
        return (m.group(1), int(m.group(2)))
    return (name, -1)


def interconnect_from_matrix(matrix):
    """nvlink / pcie / mixed / single / none from a GPU matrix {GPUi: {GPUj: cell}} (self excluded).

    nvlink: every GPU pair is NV#; pcie: no pair is NV#; mixed: some pairs are; single: one GPU;
    none: no GPU. A pair that reads NV# in either direction counts as NVLink.
    """
    gpus = sorted(matrix, key=_device_sort_key)
    if not gpus:
        return 'none'
    if len(gpus) == 1:
        return 'single'
    nvlink_pairs = 0
    pairs = 0
    for i, a in enumerate(gpus):
        for b in gpus[i + 1:]:
            pairs += 1
            kinds = (classify_link(matrix.get(a, {}).get(b)), classify_link(matrix.get(b, {}).get(a)))
            if 'nvlink' in kinds:
                nvlink_pairs += 1
    if nvlink_pairs == pairs:
        return 'nvlink'
    if nvlink_pairs == 0:
        return 'pcie'
    return 'mixed'


def parse_topology(text):
    """Parse `nvidia-smi topo -m`.

    Returns (matrix, interconnect): matrix maps each GPU to the link cell for every other GPU, e.g.
    {'GPU0': {'GPU1': 'NV18'}, 'GPU1': {'GPU0': 'NV18'}} (the X self cell, NIC rows and columns, and
    the affinity columns are left out); interconnect is one of INTERCONNECTS (see
    interconnect_from_matrix). Text without a matrix (no GPU, an error message) gives ({}, 'none').
    The terminal escapes nvidia-smi puts around the header line are ignored.
    """
    lines = strip_ansi(text).splitlines()
    header = None
    devices = []
    matrix = {}
    for line in lines:
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith('Legend:') or stripped.startswith('NIC Legend'):
            break
        tokens = stripped.split()
        if header is None:
            # the header row: device names, then 'CPU Affinity', 'NUMA Affinity', 'GPU NUMA ID'
            if not re.match(r'^GPU\d+$', tokens[0]):
                continue
            devices = []
            for tok in tokens:
                if tok in _TOPO_STOP_TOKENS:
                    break
                devices.append(tok)
            header = devices
            continue
        label = tokens[0]
        if not re.match(r'^GPU\d+$', label):
            continue  # NIC rows, noise
        cells = tokens[1:1 + len(devices)]
        if len(cells) < len(devices):
            continue
        row = {}
        for dev, cell in zip(devices, cells):
            if not re.match(r'^GPU\d+$', dev) or dev == label:
                continue
            row[dev] = cell
        matrix[label] = row
    # keep only GPUs that have a row, so a half-printed matrix cannot pass as NVLink
    for label in list(matrix):
        matrix[label] = dict((k, v) for k, v in matrix[label].items() if k in matrix)
    return matrix, interconnect_from_matrix(matrix)


def parse_nvlink_status(text):
    """Parse `nvidia-smi nvlink -s`: {gpu index: number of active links}. A link reading
    '<inactive>' is not active."""
    result = {}
    current = None
    for line in strip_ansi(text).splitlines():
        m = re.match(r'^GPU\s+(\d+):', line)
        if m:
            current = int(m.group(1))
            result[current] = 0
            continue
        m = re.match(r'^\s+Link\s+\d+:\s*(.*)$', line)
        if m and current is not None:
            value = m.group(1).strip()
            if value and 'inactive' not in value.lower() and re.search(r'\d', value):
                result[current] += 1
    return result


def interconnect_from_nvlink_status(status, gpu_count):
    """Fallback when `topo -m` is unavailable: only whether GPUs have active NVLinks is known, not
    which pairs they join. No GPU with a link -> pcie; two GPUs both linked -> nvlink; more GPUs, all
    linked -> mixed (cannot tell NVSwitch from bridged pairs, so do not claim nvlink); some -> mixed."""
    if gpu_count <= 0:
        return 'none'
    if gpu_count == 1:
        return 'single'
    active = [status.get(i, 0) > 0 for i in range(gpu_count)]
    if not any(active):
        return 'pcie'
    if all(active) and gpu_count == 2:
        return 'nvlink'
    return 'mixed'


# ---- MIG, lost GPUs, NVML failures ------------------------------------------------------------
# Columns of the MIG query host_facts runs beside the main one (old drivers do not know the field, and
# a failure of this query must not cost the other GPU facts).
QUERY_MIG_FIELDS = ('index', 'mig.mode.current')
MIG_MODES = ('Enabled', 'Disabled')

# `nvidia-smi -L`: 'GPU 0: NVIDIA H200 (UUID: GPU-...)', then per MIG device of that GPU an indented
# '  MIG 3g.71gb     Device  0: (UUID: MIG-...)'.
_LIST_GPU_RE = re.compile(r'^GPU\s+(\d+):\s*(.*?)\s*\(UUID:\s*([^)]+?)\s*\)\s*$')
_LIST_MIG_RE = re.compile(r'^\s+MIG\s+(\S+)\s+Device\s+(\d+):\s*\(UUID:\s*([^)]+?)\s*\)\s*$')
# What nvidia-smi prints, in place of a row, for a GPU it can no longer reach (fallen off the bus, Xid 79):
# 'Unable to determine the device handle for GPU 0000:BA:00.0: Unknown Error' (some releases write
# 'GPU0000:BA:00.0'); the plain table prints 'GPU 00000000:BA:00.0: GPU is lost. ...'.
_BUS_ID = r'([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])'
_LOST_RES = (
    re.compile(r'Unable to determine the device handle for GPU\s*' + _BUS_ID + r'\s*:\s*(.*?)\s*$'),
    re.compile(r'^GPU\s*' + _BUS_ID + r'\s*:\s*(GPU is lost.*?)\s*$'),
)
_NVML_INIT_RE = re.compile(r'Failed to initialize NVML:\s*(.*?)\s*$')
_NVML_LIB_RE = re.compile(r'NVML library version:\s*(\d+(?:\.\d+)*)')
_KERNEL_MODULE_RE = re.compile(r'Kernel Module(?:\s+for\s+\S+)?\s+(\d+(?:\.\d+)+)')
_DRIVER_UNREACHABLE = "couldn't communicate with the NVIDIA driver"

# Kinds of gpu_error (host_facts).
GPU_ERROR_KINDS = ('driver_library_mismatch', 'nvml_init_failed', 'driver_unreachable', 'failed')


def normalize_bus_id(text):
    """A PCI bus id as nvidia-smi's messages write it: 4-digit domain, upper-case hex.

    '00000000:BA:00.0', '0000:ba:00.0' -> '0000:BA:00.0'. Text that is not a bus id comes back as is.
    """
    text = (text or '').strip()
    m = re.match(r'^' + _BUS_ID + r'$', text)
    if not m:
        return text
    domain, rest = text.split(':', 1)
    return ('%04X:%s' % (int(domain, 16), rest)).upper()


def parse_mig_modes(text):
    """Parse ``nvidia-smi --query-gpu=index,mig.mode.current --format=csv,noheader[,nounits]``.

    :returns: {gpu index (int): 'Enabled', 'Disabled' or None (N/A: a GPU without MIG)}. A value that is
        neither word (another column layout, an error line) is None; lines without an index are skipped.
    """
    modes = {}
    for row in _csv_rows(text, QUERY_MIG_FIELDS, None):
        if not re.match(r'^\d+$', row['index']):
            continue
        value = _na(row['mig.mode.current'])
        modes[int(row['index'])] = value if value in MIG_MODES else None
    return modes


def parse_gpu_list(text):
    """Parse ``nvidia-smi -L``: the GPUs and, under each, its MIG devices.

    :returns: {gpu index (int): [{'profile': '3g.71gb', 'device': int (the MIG device number on that GPU),
        'uuid': 'MIG-...'}, ...]}; a GPU without MIG devices maps to [].
    """
    result = {}
    current = None
    for line in strip_ansi(text).splitlines():
        m = _LIST_GPU_RE.match(line)
        if m:
            current = int(m.group(1))
            result[current] = []
            continue
        m = _LIST_MIG_RE.match(line)
        if m and current is not None:
            result[current].append({'profile': m.group(1), 'device': int(m.group(2)), 'uuid': m.group(3)})
    return result


def parse_lost_gpus(text):
    """The GPUs nvidia-smi names as unreachable in its output (any query or the plain table).

    :returns: [{'pci_bus_id': '0000:BA:00.0', 'error': 'Unknown Error'}] in the order printed, each bus id once.
    """
    lost = []
    seen = set()
    for line in strip_ansi(text).splitlines():
        for regex in _LOST_RES:
            m = regex.search(line.strip())
            if m:
                bus_id = normalize_bus_id(m.group(1))
                if bus_id not in seen:
                    seen.add(bus_id)
                    lost.append({'pci_bus_id': bus_id, 'error': m.group(2) or None})
                break
    return lost


def lost_gpus(listed, reported, driver_bus_ids):
    """Every GPU that is lost: those nvidia-smi reports as unreachable, then those the kernel driver knows
    (``/proc/driver/nvidia/gpus/<bus id>``) that nvidia-smi lists no row for.

    :param listed: bus ids of the rows nvidia-smi printed (any spelling).
    :param reported: :func:`parse_lost_gpus` of its output.
    :param driver_bus_ids: the directory names under ``/proc/driver/nvidia/gpus`` (empty when it cannot be read).
    :returns: [{'pci_bus_id': '0000:BA:00.0', 'error': str or None, 'source': 'nvidia-smi' or 'driver'}].
    """
    seen = set(normalize_bus_id(b) for b in listed if b)
    result = []
    for entry in reported:
        if entry['pci_bus_id'] not in seen:
            seen.add(entry['pci_bus_id'])
            result.append({'pci_bus_id': entry['pci_bus_id'], 'error': entry['error'], 'source': 'nvidia-smi'})
    for bus_id in sorted(normalize_bus_id(b) for b in driver_bus_ids or ()):
        if bus_id not in seen:
            seen.add(bus_id)
            result.append({'pci_bus_id': bus_id, 'error': 'known to the driver, but nvidia-smi lists no such GPU',
                           'source': 'driver'})
    return result


def parse_kernel_module_version(text):
    """The loaded NVIDIA kernel module's version from ``/proc/driver/nvidia/version``
    ('NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.172.08  ...' or '... Open Kernel Module for
    x86_64  570.172.08 ...'); None if absent."""
    m = _KERNEL_MODULE_RE.search(text or '')
    return m.group(1) if m else None


def parse_gpu_error(text, rc, kernel_module_version=None):
    """A structured error of an nvidia-smi that failed without listing a GPU.

    :param text: its stdout and stderr.
    :param rc: its exit status.
    :param kernel_module_version: :func:`parse_kernel_module_version` of ``/proc/driver/nvidia/version``.
    :returns: None when ``rc`` is 0 or the output only says 'No devices were found', else a dict with
        ``kind`` (one of GPU_ERROR_KINDS: ``driver_library_mismatch`` for 'Failed to initialize NVML:
        Driver/library version mismatch', ``nvml_init_failed`` for another 'Failed to initialize NVML',
        ``driver_unreachable`` for "couldn't communicate with the NVIDIA driver", else ``failed``),
        ``message`` (the line that says it), ``rc``, ``nvml_library_version`` (what nvidia-smi prints as
        'NVML library version', else None) and ``kernel_module_version`` (as given).
    """
    if rc == 0:
        return None
    text = strip_ansi(text)
    if 'No devices were found' in text and 'NVML' not in text:
        return None
    kind = 'failed'
    message = smi_failure_message(text)
    m = None
    for line in text.splitlines():
        m = _NVML_INIT_RE.search(line)
        if m:
            message = line.strip()
            break
    if m:
        kind = 'driver_library_mismatch' if 'version mismatch' in m.group(1).lower() else 'nvml_init_failed'
    elif _DRIVER_UNREACHABLE in text:
        kind = 'driver_unreachable'
    lib = _NVML_LIB_RE.search(text)
    return {'kind': kind, 'message': message, 'rc': rc, 'nvml_library_version': lib.group(1) if lib else None,
            'kernel_module_version': kernel_module_version}


# ---- which GPU state blocks a (re)start ---------------------------------------------------------
def _mig_gpus(facts):
    return [g for g in (facts or {}).get('gpus') or [] if g.get('mig_mode') == 'Enabled']


def tp_unusable_reason(facts):
    """Why the host's GPU count must not become a tensor parallel size, or None when it may.

    :param facts: host_facts' ``inferops_sglang`` fact (``gpus``, ``lost_gpus``, ``gpu_error``).
    :returns: str or None. A GPU in MIG mode (a process can use one MIG slice, and slices cannot be
        joined by tensor parallelism), a lost GPU or an nvidia-smi error each give a reason.
    """
    facts = facts or {}
    error = facts.get('gpu_error')
    if error:
        return 'nvidia-smi fails (%s)' % error.get('message')
    lost = facts.get('lost_gpus') or []
    if lost:
        return 'GPU %s is lost' % ', '.join(g['pci_bus_id'] for g in lost)
    mig = _mig_gpus(facts)
    if mig:
        return '%d of %d GPUs are in MIG mode' % (len(mig), len(facts.get('gpus') or []))
    return None


def gpu_blockers(facts, gpus_needed=1, require_gpus=True, switch=None):
    """The GPU states that forbid (re)starting a server on this host, each with the advice that fits.

    The one rule of the collection for it (the service pre-flight and the cutover pre-flight use it as the
    filter ``gpu_blockers``, before a running server is touched):

    * NVIDIA kernel module and user-space library differ (``Failed to initialize NVML: Driver/library
      version mismatch``): no new process can use a GPU until the host reboots; the running server keeps
      its already loaded library. Blocks whatever ``require_gpus`` says.
    * A lost GPU (nvidia-smi cannot reach it, or the driver knows a GPU nvidia-smi does not list): reset
      or reboot. Blocks whatever ``require_gpus`` says.
    * The GPUs' health (:func:`_gpu_health.gpu_health_blockers`, from ``nvidia-smi -q -x``): an NVSwitch fabric that Fabric
      Manager has not set up (or a Fabric Manager of another version than the driver), a GPU whose recovery action,
      pending row remap or page retirement, or uncorrectable ECC errors call for a reset, a reboot or replacing, and
      a torch built for a CUDA major version the driver does not support. Blocks whatever ``require_gpus`` says.
    * Other nvidia-smi failures (NVML cannot start, the driver is unreachable): block when ``require_gpus``.
    * More than one GPU needed while the GPUs outside MIG mode are fewer (a process uses at most one MIG
      slice; tensor parallelism cannot span slices): disable MIG or run one server per slice.
    * ``require_gpus``: no GPU, or fewer than needed.

    A host that needs a reset or a reboot gets only that advice (never "lower tp" or "turn the check off").

    :param facts: host_facts' ``inferops_sglang`` fact (``gpus`` with ``mig_mode``, ``gpu_count``,
        ``lost_gpus``, ``gpu_error``); missing keys count as a healthy host without that information.
    :param gpus_needed: int, GPUs per node the server needs (``gpus_needed``).
    :param require_gpus: bool, whether the GPU count is checked (the service role's ``service_require_gpus``).
    :param switch: name of the setting that turns the count check off, named in its advice; None leaves it out.
    :returns: a list of {'kind': 'driver_library_mismatch' | 'lost_gpu' | 'fabric' | 'gpu_recovery' | 'cuda_runtime'
        | 'gpu_error' | 'mig' | 'gpu_count',
        'message': str}; empty when a (re)start may go ahead.
    :raises ValueError: when ``gpus_needed`` is not an integer.
    :raises TypeError: when ``facts`` is not a mapping.
    """
    if facts is None:
        facts = {}
    if not hasattr(facts, 'get'):
        raise TypeError('expected the host facts (a mapping), got %s' % type(facts).__name__)
    try:
        needed = int(gpus_needed if gpus_needed is not None else 1)
    except (TypeError, ValueError):
        raise ValueError('gpus_needed must be an integer, got %r' % (gpus_needed,))
    untouched = ' The running server was left as it is.'
    blockers = []
    error = facts.get('gpu_error') or None
    if error and error.get('kind') == 'driver_library_mismatch':
        blockers.append({'kind': 'driver_library_mismatch', 'message': (
            "nvidia-smi says '%s': the loaded NVIDIA kernel module (%s) and the driver's user-space library "
            "(NVML %s) differ, so no new process can use a GPU. A reboot is needed before any restart (it loads "
            "the module that matches the installed library).%s"
            % (error.get('message'), error.get('kernel_module_version') or 'version unknown',
               error.get('nvml_library_version') or 'version unknown', untouched))})
    for gpu in facts.get('lost_gpus') or []:
        blockers.append({'kind': 'lost_gpu', 'message': (
            'GPU %s is lost: reset or reboot (%s). No server can start on this host until it is back '
            '(nvidia-smi lists it again).%s' % (gpu.get('pci_bus_id'), gpu.get('error') or 'unreachable', untouched))})
    # the GPUs' health rules live in _gpu_health, which reads this module's parsers (imported here, not at the top)
    from ansible_collections.inferops.sglang.plugins.module_utils import _gpu_health
    blockers.extend(_gpu_health.gpu_health_blockers(facts))
    if blockers:
        return blockers
    if error and require_gpus:
        return [{'kind': 'gpu_error', 'message': (
            "nvidia-smi fails ('%s', rc=%s): no GPU can be used. Fix the NVIDIA driver (load it, or reboot "
            "after a driver update) before any restart.%s" % (error.get('message'), error.get('rc'), untouched))}]
    gpus = facts.get('gpus') or []
    mig = _mig_gpus(facts)
    whole = len(gpus) - len(mig)
    if mig and needed > 1 and whole < needed:
        blockers.append({'kind': 'mig', 'message': (
            'The server needs %d GPUs (tensor/pipeline/data parallel) but GPU(s) %s are in MIG mode: a process '
            'uses at most one MIG slice and tensor parallelism cannot span slices. Disable MIG on the GPUs the '
            'server uses (nvidia-smi -i <index> -mig 0, then reset them), or run one server per slice '
            '(tp 1, CUDA_VISIBLE_DEVICES=<MIG UUID>).' % (needed, ', '.join(str(g.get('index')) for g in mig)))})
    count = int(facts.get('gpu_count') or 0)
    if require_gpus and not blockers and (count == 0 or count < needed):
        blockers.append({'kind': 'gpu_count', 'message': (
            'The server needs %d GPU(s) per node (tp x pp x dp, without dp under dp attention, over nnodes) but %d '
            'are seen%s. Lower tp/pp/dp in the server arguments%s.'
            % (needed, count, ' (no nvidia-smi answer)' if count == 0 else '',
               (', or set %s to false' % switch) if switch else ''))})
    return blockers
