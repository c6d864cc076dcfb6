# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE to the inferops.sglang collection. This module_utils file is an implementation detail of
# inferops.sglang.host_facts (and other modules of this collection); it is not a public API, and its
# functions may change or disappear in any release without notice. Do not import it from other
# collections or from playbooks.
#
# Pure parsers and readers for host facts: nvidia-smi output, the init system and container, /proc/net/tcp,
# CUDA toolkits, systemd units and supervisord configs. Everything that touches the file system takes its
# root (proc root, /run, /etc, ...) as a parameter so that tests can point it at a temporary tree. Nothing
# here runs commands; the module runs them and passes their output in.
# Keep this file compatible with Python 3.8 (managed hosts include Debian 12 / Ubuntu 24.04 and older).

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import fnmatch
import glob
import json
import os
import re
import socket
import sys

# Columns asked from `nvidia-smi --query-gpu=...`, in this order.
QUERY_GPU_FIELDS = ('index', 'name', 'uuid', 'memory.total', 'memory.used', 'compute_cap',
                    'driver_version', 'pci.bus_id')
# Columns asked from `nvidia-smi --query-compute-apps=...`, in this order.
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
_GPU_INT_FIELDS = ('index', 'memory.total', 'memory.used')

# `nvidia-smi topo -m` legend: X = self; NV# = a bonded set of # NVLinks; the rest are PCIe paths
# (SOC is what drivers before ~390 printed for SYS).
PCIE_LINKS = frozenset(('PIX', 'PXB', 'PHB', 'NODE', 'SYS', 'SOC'))
_NVLINK_RE = re.compile(r'^NV\d+$')

INTERCONNECTS = ('nvlink', 'pcie', 'mixed', 'single', 'none')
CONTAINER_KINDS = ('docker', 'podman', 'lxc', 'containerd', 'other', 'none')
CRON_DAEMONS = frozenset(('cron', 'crond', 'cronie', 'fcron'))

# State of a listening socket in /proc/net/tcp{,6} (TCP_LISTEN).
TCP_LISTEN = '0A'

# nvidia-smi underlines the header of `topo -m` with terminal escapes even when its output is not a
# terminal (ESC[4m ... ESC[0m): strip them before parsing.
_ANSI_RE = re.compile(r'\x1b\[[0-9;?]*[A-Za-z]')

_NA_VALUES = frozenset(('', 'N/A', '[N/A]', '[Not Supported]', 'Not Supported', '[Unknown Error]'))


def read_text(path, default=None):
    """Return the content of a file as text, or default when it cannot be read."""
    try:
        with open(path, 'rb') as f:
            data = f.read()
    except (OSError, IOError):
        return default
    return data.decode('utf-8', 'replace')


def strip_ansi(text):
    """Text without terminal escape sequences."""
    return _ANSI_RE.sub('', text or '')


def _split_nul(data):
    if data is None:
        return []
    parts = data.split('\0')
    while parts and parts[-1] == '':
        parts.pop()
    return parts


def _na(value):
    """None for the placeholders nvidia-smi prints when a value is missing."""
    value = value.strip()
    if value in _NA_VALUES:
        return None
    return value


def _mib(value):
    """'143771 MiB' or '143771' -> 143771; None for N/A."""
    value = _na(value)
    if value is None:
        return None
    m = re.match(r'^(\d+)(?:\s*MiB)?$', value)
    if not m:
        return None
    return int(m.group(1))


def _smi_lines(text):
    """Data lines of nvidia-smi csv output: no blanks, no header line."""
    lines = []
    for line in strip_ansi(text).splitlines():
        if not line.strip():
            continue
        lines.append(line)
    return lines


def parse_query_gpu(text, fields=QUERY_GPU_FIELDS):
    """Parse `nvidia-smi --query-gpu=<fields> --format=csv,noheader,nounits`.

    Also accepts `--format=csv` (header line and ' MiB' units). Lines that are not GPU rows (for
    example 'No devices were found') are skipped. Returns a list of dicts with the keys index (int),
    name, uuid, memory_total_mib (int), memory_used_mib (int), compute_cap, driver_version, pci_bus_id;
    a key whose field was not asked (or reads N/A) is None.
    """
    fields = tuple(fields)
    gpus = []
    for line in _smi_lines(text):
        cells = [c.strip() for c in line.split(',')]
        if len(cells) < len(fields):
            continue
        if len(cells) > len(fields) and 'name' in fields:
            # a comma inside the product name: glue the extra cells back into it
            extra = len(cells) - len(fields)
            pos = fields.index('name')
            cells[pos:pos + extra + 1] = [', '.join(cells[pos:pos + extra + 1])]
        elif len(cells) > len(fields):
            continue
        row = dict(zip(fields, cells))
        if 'index' in row and not re.match(r'^\d+$', row['index']):
            continue  # header line ("index, name, ...") or noise
        gpu = dict((key, None) for key in _GPU_KEYS.values())
        for field, value in row.items():
            key = _GPU_KEYS.get(field)
            if key is None:
                continue
            if field in ('memory.total', 'memory.used'):
                gpu[key] = _mib(value)
            elif field == 'index':
                gpu[key] = int(value)
            else:
                gpu[key] = _na(value)
        gpus.append(gpu)
    gpus.sort(key=lambda g: g['index'] if g['index'] is not None else 0)
    return gpus


def parse_compute_apps(text):
    """Parse `nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name,used_gpu_memory
    --format=csv,noheader,nounits` (a header line and ' MiB' units are accepted too).

    Returns a list of dicts: gpu_uuid, pid (int), process_name, used_memory_mib (int or None).
    'No running processes found' and similar lines give an empty list.
    """
    apps = []
    for line in _smi_lines(text):
        cells = [c.strip() for c in line.split(',')]
        if len(cells) < 4:
            continue
        uuid, pid = cells[0], cells[1]
        memory = cells[-1]
        name = ', '.join(cells[2:-1])
        if not re.match(r'^\d+$', pid):
            continue  # header line or noise
        apps.append({
            'gpu_uuid': _na(uuid),
            'pid': int(pid),
            'process_name': _na(name),
            'used_memory_mib': _mib(memory),
        })
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


def _device_sort_key(name):
    m = re.match(r'^([A-Za-z]+)(\d+)$', name)
    if m:
        return (m.group(1), int(m.group(2)))
    return (name, -1)


_TOPO_STOP_TOKENS = frozenset(('CPU', 'NUMA', 'GPU'))


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


def read_proc_pid(proc_root, pid):
    """(comm, cmdline list, exe link target) of a process; None / [] where unreadable."""
    base = os.path.join(proc_root, str(pid))
    comm = read_text(os.path.join(base, 'comm'))
    if comm is not None:
        comm = comm.strip('\n')
    cmdline = _split_nul(read_text(os.path.join(base, 'cmdline')))
    try:
        exe = os.readlink(os.path.join(base, 'exe'))
    except (OSError, IOError):
        exe = None
    return comm, cmdline, exe


def _is_systemd(comm, cmdline, exe):
    names = set()
    if comm:
        names.add(comm)
    if cmdline:
        names.add(os.path.basename(cmdline[0]))
    if exe:
        names.add(os.path.basename(exe.replace(' (deleted)', '')))
    return 'systemd' in names


def detect_init(proc_root='/proc', run_dir='/run'):
    """The init system as it really is (field case C11).

    systemd only when <run_dir>/systemd/system exists (what sd_booted() checks) AND PID 1 is systemd
    (its comm, argv[0] or exe). A container with systemd installed but PID 1 'sleep' or 'bash' is
    'other', even if /run/systemd/system was left behind. Returns a dict: system, pid1 (comm of PID 1
    or None), pid1_cmdline (list), systemd_booted (bool).
    """
    comm, cmdline, exe = read_proc_pid(proc_root, 1)
    booted = os.path.isdir(os.path.join(run_dir, 'systemd', 'system'))
    system = 'systemd' if (booted and _is_systemd(comm, cmdline, exe)) else 'other'
    return {
        'system': system,
        'pid1': comm,
        'pid1_cmdline': cmdline,
        'systemd_booted': booted,
    }


def _container_kind(value):
    value = (value or '').strip().lower()
    if not value:
        return None
    if value.startswith('docker'):
        return 'docker'
    if value.startswith('podman') or value == 'libpod':
        return 'podman'
    if value.startswith('lxc'):
        return 'lxc'
    if value.startswith('containerd') or value == 'cri-containerd':
        return 'containerd'
    return 'other'


def _container_from_cgroup(text):
    for line in (text or '').splitlines():
        path = line.split(':', 2)[-1]
        if re.search(r'(^|[/-])docker[-/.]|/docker$', path):
            return 'docker'
        if re.search(r'libpod|podman', path):
            return 'podman'
        if re.search(r'cri-containerd|containerd|kubepods', path):
            return 'containerd'
        if re.search(r'(^|/)lxc[./]|lxc\.payload|\.lxc$|/lxc$', path):
            return 'lxc'
    return None


def detect_container(proc_root='/proc', run_dir='/run', root_dir='/'):
    """docker / podman / lxc / containerd / other / none.

    Sources, most explicit first: <run_dir>/systemd/container (written by systemd and container
    managers), container= in <proc_root>/1/environ (lxc, podman, systemd-nspawn set it), <root_dir>/.dockerenv,
    <run_dir>/.containerenv (podman), then the cgroup path of PID 1 in <proc_root>/1/cgroup.
    An unreadable file is skipped (a non-root run may not read /proc/1/environ).
    """
    kind = _container_kind(read_text(os.path.join(run_dir, 'systemd', 'container')))
    if kind:
        return kind
    for item in _split_nul(read_text(os.path.join(proc_root, '1', 'environ'))):
        if item.startswith('container='):
            kind = _container_kind(item[len('container='):])
            if kind:
                return kind
    if os.path.exists(os.path.join(root_dir, '.dockerenv')):
        return 'docker'
    if os.path.exists(os.path.join(run_dir, '.containerenv')):
        return 'podman'
    kind = _container_from_cgroup(read_text(os.path.join(proc_root, '1', 'cgroup')))
    if kind:
        return kind
    return 'none'


def parse_systemctl_version(text):
    """'systemd 255 (255.4-1ubuntu8)' (first line of `systemctl --version`) -> 255; None otherwise."""
    for line in (text or '').splitlines():
        m = re.match(r'^\s*systemd\s+(\d+)', line)
        if m:
            return int(m.group(1))
        if line.strip():
            break
    return None


def list_processes(proc_root='/proc'):
    """[{pid, comm, cmdline}] for every process readable under proc_root, sorted by pid."""
    try:
        names = os.listdir(proc_root)
    except (OSError, IOError):
        return []
    procs = []
    for name in names:
        if not name.isdigit():
            continue
        base = os.path.join(proc_root, name)
        comm = read_text(os.path.join(base, 'comm'))
        if comm is None:
            continue  # gone, or not readable
        procs.append({
            'pid': int(name),
            'comm': comm.strip('\n'),
            'cmdline': _split_nul(read_text(os.path.join(base, 'cmdline'))),
        })
    procs.sort(key=lambda p: p['pid'])
    return procs


def cron_running(processes):
    """True when a cron daemon runs: cron (Debian), crond/cronie (RHEL), fcron, busybox crond."""
    for proc in processes:
        comm = proc.get('comm') or ''
        cmdline = proc.get('cmdline') or []
        if comm in CRON_DAEMONS:
            return True
        argv0 = os.path.basename(cmdline[0]) if cmdline else ''
        if argv0 in CRON_DAEMONS:
            return True
        if (comm == 'busybox' or argv0 == 'busybox') and len(cmdline) > 1 and cmdline[1] == 'crond':
            return True
    return False


def supervisord_running(processes):
    """True when a supervisord process runs (started directly or as `python supervisord`)."""
    for proc in processes:
        if proc.get('comm') == 'supervisord':
            return True
        for arg in (proc.get('cmdline') or [])[:2]:
            if os.path.basename(arg) == 'supervisord':
                return True
    return False


def _decode_hex_address(hex_addr, ipv6, byteorder):
    # /proc/net/tcp prints each 32-bit word of the (network order) address as a host-order integer
    raw = b''
    for i in range(0, len(hex_addr), 8):
        raw += int(hex_addr[i:i + 8], 16).to_bytes(4, byteorder)
    family = socket.AF_INET6 if ipv6 else socket.AF_INET
    return socket.inet_ntop(family, raw)


def parse_proc_net_tcp(text, ipv6=False, byteorder=None):
    """LISTEN sockets (state 0A) of /proc/net/tcp (ipv6=False) or /proc/net/tcp6 (ipv6=True).

    Returns [{proto: 'tcp'|'tcp6', host, port (int), inode (int), pid: None}]; the caller fills pid
    from map_socket_inodes(). byteorder is that of the host that wrote the text (default: this one).
    """
    byteorder = byteorder or sys.byteorder
    width = 32 if ipv6 else 8
    proto = 'tcp6' if ipv6 else 'tcp'
    result = []
    for line in (text or '').splitlines():
        fields = line.split()
        if len(fields) < 10 or not fields[0].endswith(':') or not fields[0][:-1].isdigit():
            continue  # header line
        if fields[3].upper() != TCP_LISTEN:
            continue
        local = fields[1]
        if ':' not in local:
            continue
        addr, port = local.rsplit(':', 1)
        if len(addr) != width:
            continue
        try:
            host = _decode_hex_address(addr, ipv6, byteorder)
            port = int(port, 16)
            inode = int(fields[9])
        except (ValueError, OSError):
            continue
        result.append({'proto': proto, 'host': host, 'port': port, 'inode': inode, 'pid': None})
    return result


def map_socket_inodes(proc_root='/proc', wanted=None):
    """{socket inode: pid} from the 'socket:[N]' links in <proc_root>/<pid>/fd/. With several
    holders (forked workers) the lowest pid wins. wanted (a set of inodes) stops the scan early."""
    found = {}
    if wanted is not None and not wanted:
        return found
    try:
        names = os.listdir(proc_root)
    except (OSError, IOError):
        return found
    pids = sorted(int(n) for n in names if n.isdigit())
    for pid in pids:
        fd_dir = os.path.join(proc_root, str(pid), 'fd')
        try:
            fds = os.listdir(fd_dir)
        except (OSError, IOError):
            continue
        for fd in fds:
            try:
                target = os.readlink(os.path.join(fd_dir, fd))
            except (OSError, IOError):
                continue
            m = re.match(r'^socket:\[(\d+)\]$', target)
            if not m:
                continue
            inode = int(m.group(1))
            if inode not in found:
                found[inode] = pid
        if wanted is not None and all(i in found for i in wanted):
            break
    return found


def parse_nvcc_version(text):
    """`nvcc --version` -> the compiler version: 'Cuda compilation tools, release 12.4, V12.4.131'
    gives '12.4.131' (the 'release' value, '12.4', when there is no V part). None if absent."""
    text = text or ''
    m = re.search(r'release\s+(\d+(?:\.\d+)*)\s*,\s*V(\d+(?:\.\d+)*)', text)
    if m:
        return m.group(2)
    m = re.search(r'release\s+(\d+(?:\.\d+)*)', text)
    if m:
        return m.group(1)
    return None


def read_toolkit_version(path):
    """Version of the CUDA toolkit at path from version.json (CUDA >= 11.1: {"cuda": {"version": ..}})
    or version.txt (older: 'CUDA Version 10.2.89'). None when neither gives one."""
    data = read_text(os.path.join(path, 'version.json'))
    if data:
        try:
            doc = json.loads(data)
        except ValueError:
            doc = None
        if isinstance(doc, dict):
            cuda = doc.get('cuda')
            if isinstance(cuda, dict) and cuda.get('version'):
                return str(cuda['version'])
    data = read_text(os.path.join(path, 'version.txt'))
    if data:
        m = re.search(r'CUDA Version\s+(\d+(?:\.\d+)*)', data)
        if m:
            return m.group(1)
    return None


def _is_exec(path):
    return os.path.isfile(path) and os.access(path, os.X_OK)


def inspect_cuda_toolkits(patterns, nvcc_version=None):
    """CUDA toolkits in the directories matched by the glob patterns.

    Returns [{path, realpath, version, nvcc (bool), ptxas (bool)}] in pattern order (each pattern's
    matches sorted), each directory once. nvcc_version, when given, is called with the path of
    bin/nvcc for toolkits whose version files say nothing, and returns `nvcc --version` output.
    """
    seen = set()
    toolkits = []
    for pattern in patterns:
        for path in sorted(glob.glob(pattern)):
            path = os.path.normpath(path)
            if path in seen or not os.path.isdir(path):
                continue
            seen.add(path)
            nvcc = os.path.join(path, 'bin', 'nvcc')
            has_nvcc = _is_exec(nvcc)
            version = read_toolkit_version(path)
            if version is None and has_nvcc and nvcc_version is not None:
                version = parse_nvcc_version(nvcc_version(nvcc))
            toolkits.append({
                'path': path,
                'realpath': os.path.realpath(path),
                'version': version,
                'nvcc': has_nvcc,
                'ptxas': _is_exec(os.path.join(path, 'bin', 'ptxas')),
            })
    return toolkits


def version_key(version):
    """Sortable key of a dotted version string; None sorts below everything."""
    if not version:
        return ()
    return tuple(int(x) for x in re.findall(r'\d+', str(version)))


def choose_cuda_home(toolkits):
    """The toolkit CUDA_HOME should name: the highest version that has both bin/nvcc and bin/ptxas,
    else the highest with nvcc; symlinks (/usr/local/cuda) resolved. None when no toolkit has nvcc."""
    best = None
    best_key = None
    for tk in toolkits:
        if not tk.get('nvcc'):
            continue
        key = (bool(tk.get('ptxas')), version_key(tk.get('version')),
               # on a tie prefer the real directory over the link to it
               tk.get('path') == tk.get('realpath'))
        if best_key is None or key > best_key:
            best, best_key = tk, key
    if best is None:
        return None
    return best.get('realpath') or best.get('path')


def find_unit_files(dirs, pattern):
    """[{name, path}] of files (or links, masked units included) matching pattern in the unit
    directories, first directory first; a directory reached twice (/lib -> /usr/lib) is read once."""
    seen_dirs = set()
    units = []
    for d in dirs:
        real = os.path.realpath(d)
        if real in seen_dirs or not os.path.isdir(d):
            continue
        seen_dirs.add(real)
        try:
            names = sorted(os.listdir(d))
        except (OSError, IOError):
            continue
        for name in names:
            path = os.path.join(d, name)
            if not fnmatch.fnmatchcase(name, pattern):
                continue
            if os.path.isdir(path) and not os.path.islink(path):
                continue  # sglang.service.d drop-in directories
            units.append({'name': name, 'path': path})
    return units


def parse_systemctl_show(text):
    """`systemctl show -p Id,ActiveState u1 u2` -> [{'Id': .., 'ActiveState': ..}, ...], one per unit
    in the order asked (blocks are separated by blank lines)."""
    blocks = []
    current = {}
    for line in (text or '').splitlines():
        if not line.strip():
            if current:
                blocks.append(current)
                current = {}
            continue
        if '=' in line:
            key, value = line.split('=', 1)
            current[key.strip()] = value.strip()
    if current:
        blocks.append(current)
    return blocks


def find_supervisor_configs(etc_dir='/etc'):
    """Existing supervisord configuration files: the main files and the usual include dirs."""
    candidates = [
        os.path.join(etc_dir, 'supervisord.conf'),
        os.path.join(etc_dir, 'supervisor', 'supervisord.conf'),
    ]
    patterns = [
        os.path.join(etc_dir, 'supervisor', 'conf.d', '*.conf'),
        os.path.join(etc_dir, 'supervisord.d', '*.conf'),
        os.path.join(etc_dir, 'supervisord.d', '*.ini'),
    ]
    for pattern in patterns:
        candidates.extend(sorted(glob.glob(pattern)))
    return [p for p in candidates if os.path.isfile(p)]


def parse_supervisor_programs(text, pattern='sglang*'):
    """Names of [program:NAME] sections matching pattern in a supervisord config file."""
    names = []
    for m in re.finditer(r'^\s*\[program:([^\]]+)\]', text or '', re.MULTILINE):
        name = m.group(1).strip()
        if fnmatch.fnmatchcase(name, pattern) and name not in names:
            names.append(name)
    return names


# The interpreter probe: run as `<python> -c PYTHON_PROBE` in the interpreter that will run the
# server. It imports neither sglang nor torch; it reports which sitecustomize the interpreter really
# imported at startup. Written for any Python 3 (no f-strings beyond 3.6 syntax, no walrus).
PROBE_MARKER = '@@inferops_sglang_probe@@'
PYTHON_PROBE = r'''
import json, os, sys
r = {}
try:
    import sysconfig
    r["version"] = "%d.%d.%d" % tuple(sys.version_info[:3])
    r["prefix"] = sys.prefix
    r["base_prefix"] = getattr(sys, "base_prefix", getattr(sys, "real_prefix", sys.prefix))
    r["sys_executable"] = sys.executable
    sp = []
    try:
        import site
        sp.extend(site.getsitepackages())
    except Exception:
        pass
    for k in ("purelib", "platlib"):
        try:
            sp.append(sysconfig.get_paths()[k])
        except Exception:
            pass
    seen = []
    for p in sp:
        if p not in seen:
            seen.append(p)
    r["site_packages"] = seen
    m = sys.modules.get("sitecustomize")
    r["sitecustomize_imported"] = m is not None
    r["sitecustomize_path"] = getattr(m, "__file__", None) if m is not None else None
    r["stdlib"] = sysconfig.get_paths()["stdlib"]
    v = None
    try:
        from importlib import metadata as md
    except ImportError:
        md = None
    if md is not None:
        try:
            v = md.version("sglang")
        except Exception:
            v = None
    else:
        import glob
        for d in seen:
            for meta in sorted(glob.glob(os.path.join(d, "sglang-*.dist-info", "METADATA"))):
                with open(meta) as f:
                    for line in f:
                        if line.startswith("Version:"):
                            v = line.split(":", 1)[1].strip()
                            break
                if v:
                    break
            if v:
                break
    r["sglang_version"] = v
except Exception as e:
    r["error"] = "%s: %s" % (type(e).__name__, e)
sys.stdout.write("\n" + "@@inferops_sglang_probe@@" + json.dumps(r) + "\n")
'''


def parse_python_probe(stdout):
    """The dict PYTHON_PROBE printed (its last marked line), or None."""
    found = None
    for line in (stdout or '').splitlines():
        if line.startswith(PROBE_MARKER):
            try:
                found = json.loads(line[len(PROBE_MARKER):])
            except ValueError:
                found = None
    return found if isinstance(found, dict) else None


def sitecustomize_error(stderr):
    """The 'Error in sitecustomize' report site.py writes to stderr when sitecustomize raises,
    with the exception line that follows it; None when there is none."""
    lines = (stderr or '').splitlines()
    for i, line in enumerate(lines):
        if 'Error in sitecustomize' in line:
            rest = [x.strip() for x in lines[i + 1:] if x.strip()]
            return line.strip() + ((' ' + rest[-1]) if rest else '')
    return None
