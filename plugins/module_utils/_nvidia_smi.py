# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
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


def parse_gpu_memory(text):
    """Parse ``nvidia-smi --query-gpu=index,memory.used --format=csv,noheader,nounits``.

    Returns [{'index': int, 'memory_used_mib': int or None}] sorted by index.
    """
    return [{'index': gpu['index'], 'memory_used_mib': gpu['memory_used_mib']}
            for gpu in parse_query_gpu(text, ('index', 'memory.used'))]


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
