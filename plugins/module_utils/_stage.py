# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
#
# Standard library only, Linux only (mincore(2) through ctypes, /proc/meminfo).
"""Staging a model's weight files into the page cache before a cutover stops the running server (issue 32).

SGLang 0.5.23 loads the ``*.safetensors`` files of the model directory that ``model.safetensors.index.json``'s
``weight_map`` lists (``sglang/srt/model_loader/loader.py`` ``DefaultModelLoader._prepare_weights``,
``weight_utils.py`` ``filter_duplicate_safetensors_files``), all of them when there is no index. A file's size is
fixed by its own header: 8 bytes little-endian ``N``, ``N`` bytes of JSON whose tensors' ``data_offsets`` end at the
end of the data (``safetensors`` format). Reading those files into the page cache while the old server still serves
turns the new server's load from a disk read into a memory copy.

Pure functions (:func:`model_paths`, :func:`parse_meminfo`, :func:`stage_plan`, :func:`expected_size`) decide; the
readers (:func:`weight_files`, :func:`resident_bytes`, :func:`read_into_cache`, :func:`stage`) touch files.
Nothing here evicts a page (no ``posix_fadvise(DONTNEED)``) or reads more than ``MemAvailable`` minus the margin.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import ctypes
import ctypes.util
import glob
import json
import mmap
import os
import struct
import threading
import time

from ansible_collections.inferops.sglang.plugins.module_utils._server_args import argv_to_args

INDEX = 'model.safetensors.index.json'
MODES = ('all', 'fit', 'none')
CHUNK = 64 << 20
WINDOW = 1 << 30  # mincore over at most 1 GiB of mapping at a time
PAGE = mmap.PAGESIZE


def model_paths(command=None, paths=None):
    """The model directories to stage: ``paths`` as given, then ``--model-path`` (``--model``) and
    ``--speculative-draft-model-path`` of the server's ``command`` (argv list) that are absolute paths (a hub id is
    not a local directory), without repeats.

    :returns: list of str.
    """
    found = [p for p in (paths or []) if p]
    args = argv_to_args(list(command or []))
    for key in ('model-path', 'model', 'speculative-draft-model-path'):
        value = args.get(key)
        if isinstance(value, str) and value.startswith('/'):
            found.append(value)
    seen = []
    for path in found:
        path = path.rstrip('/') or '/'
        if path not in seen:
            seen.append(path)
    return seen


def expected_size(header):
    """The size a safetensors file must have, from its first bytes.

    :param header: bytes: at least the first 8 bytes of the file, and the ``N`` bytes of JSON header they announce.
    :returns: int bytes (8 + N + the largest ``data_offsets`` end), or None when ``header`` is not a safetensors header.
    """
    if len(header) < 8:
        return None
    length = struct.unpack('<Q', header[:8])[0]
    if length > len(header) - 8:
        return None
    try:
        meta = json.loads(header[8:8 + length].decode('utf-8'))
    except ValueError:
        return None
    if not isinstance(meta, dict):
        return None
    end = 0
    for name, tensor in meta.items():
        if name == '__metadata__' or not isinstance(tensor, dict):
            continue
        offsets = tensor.get('data_offsets') or [0, 0]
        end = max(end, int(offsets[1]))
    return 8 + length + end


def _read_header(path):
    with open(path, 'rb') as handle:
        head = handle.read(8)
        if len(head) < 8:
            return head
        length = struct.unpack('<Q', head)[0]
        if length > 100 << 20:
            return head
        return head + handle.read(length)


def weight_files(model_dir):
    """The weight files SGLang loads from ``model_dir``, checked against the index and their headers.

    :returns: dict ``files`` (list of {``path``, ``size``}), ``problems`` (list of str: an index that cannot be read,
        a shard the index lists that is missing, a file whose size is not the one its header gives - each says what to
        do), ``indexed`` (bool).
    """
    problems, files = [], []
    index = os.path.join(model_dir, INDEX)
    present = sorted(glob.glob(os.path.join(model_dir, '*.safetensors')))
    indexed = os.path.isfile(index)
    if indexed:
        try:
            with open(index) as handle:
                listed = sorted(set((json.load(handle).get('weight_map') or {}).values()))
        except (OSError, ValueError, AttributeError) as exc:
            return {'files': [], 'indexed': True,
                    'problems': ['%s cannot be read (%s): copy the model again.' % (index, exc)]}
        missing = [name for name in listed if not os.path.isfile(os.path.join(model_dir, name))]
        if missing:
            problems.append('%s: %d of the %d shards %s lists are missing (%s): copy them before the cutover; the new '
                            'server would fail to load.' % (model_dir, len(missing), len(listed), INDEX, ', '.join(missing)))
        present = [os.path.join(model_dir, name) for name in listed if name not in missing]
    for path in present:
        size = os.path.getsize(path)
        try:
            want = expected_size(_read_header(path))
        except OSError as exc:
            problems.append('%s cannot be read (%s): fix its permissions or copy it again.' % (path, exc))
            continue
        if want is None:
            problems.append('%s is not a safetensors file (no readable header): copy it again.' % path)
        elif want != size:
            problems.append('%s has %d bytes, its header gives %d: the copy is %s; copy it again.'
                            % (path, size, want, 'truncated' if size < want else 'longer than its data'))
        files.append({'path': path, 'size': size})
    return {'files': files, 'problems': problems, 'indexed': indexed}


def parse_meminfo(text):
    """``/proc/meminfo``'s fields in bytes (``MemAvailable: 123 kB`` -> ``{'MemAvailable': 125952}``)."""
    out = {}
    for line in (text or '').splitlines():
        name, _sep, rest = line.partition(':')
        words = rest.split()
        if words and words[0].isdigit():
            out[name.strip()] = int(words[0]) * (1024 if len(words) > 1 and words[1] == 'kB' else 1)
    return out


_LIBC = []


def _libc():
    if not _LIBC:
        libc = ctypes.CDLL(ctypes.util.find_library('c') or 'libc.so.6', use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
        _LIBC.append(libc)
    return _LIBC[0]


def resident_bytes(path):
    """Bytes of ``path`` in the page cache now (``mincore(2)`` over a read-only shared mapping, 1 GiB at a time; the
    mapping touches no page). The last page counts whole up to the file's size.

    :raises OSError: the file cannot be opened or mapped.
    """
    libc = _libc()
    size = os.path.getsize(path)
    if size == 0:
        return 0
    fd = os.open(path, os.O_RDONLY)
    try:
        pages = 0
        offset = 0
        while offset < size:
            length = min(WINDOW, size - offset)
            addr = libc.mmap(None, length, mmap.PROT_READ, mmap.MAP_SHARED, fd, offset)
            if addr in (None, ctypes.c_void_p(-1).value):
                err = ctypes.get_errno()
                raise OSError(err, 'mmap of %s failed: %s' % (path, os.strerror(err)))
            try:
                count = (length + PAGE - 1) // PAGE
                vec = (ctypes.c_ubyte * count)()
                if libc.mincore(addr, length, vec) != 0:
                    err = ctypes.get_errno()
                    raise OSError(err, 'mincore of %s failed: %s' % (path, os.strerror(err)))
                pages += sum(1 for byte in vec if byte & 1)
                if offset + length == size and vec[count - 1] & 1:
                    pages -= 1
                    resident_tail = length - (count - 1) * PAGE
                else:
                    resident_tail = 0
            finally:
                libc.munmap(addr, length)
            offset += length
        return pages * PAGE + resident_tail
    finally:
        os.close(fd)


def stage_plan(files, mem_available, margin, mode):
    """Which files to read, so that the host never reads more than it has free for it.

    :param files: list of {``path``, ``size``, ``resident``} (bytes; resident from :func:`resident_bytes`).
    :param mem_available: ``MemAvailable`` in bytes.
    :param margin: bytes left available after staging.
    :param mode: ``all`` (every file, or nothing when they do not all fit), ``fit`` (the files that fit, in order),
        ``none`` (nothing; only measure).
    :returns: dict ``stage`` (list of paths), ``stage_bytes`` (the non-resident bytes those files add), ``missing_bytes``
        (all non-resident bytes), ``budget`` (max(0, mem_available - margin)), ``fits`` (bool: all of missing_bytes fit
        in the budget), ``skipped`` (paths left cold), ``message`` (str, what happens and why).
    :raises ValueError: an unknown mode.
    """
    if mode not in MODES:
        raise ValueError('mode must be one of %s, not %r' % (', '.join(MODES), mode))
    budget = max(0, int(mem_available) - int(margin))
    cold = [(f['path'], max(0, int(f['size']) - int(f.get('resident', 0)))) for f in files]
    cold = [(path, need) for path, need in cold if need > 0]
    missing = sum(need for _path, need in cold)
    fits = missing <= budget
    stage, used = [], 0
    if mode == 'all' and fits:
        stage, used = [p for p, _n in cold], missing
    elif mode == 'fit':
        for path, need in cold:
            if used + need <= budget:
                stage.append(path)
                used += need
    skipped = [p for p, _n in cold if p not in stage]
    gib = float(1 << 30)
    if not files:
        message = 'no weight files to stage'
    elif not cold:
        message = 'all %d file(s) are resident already; nothing to read' % len(files)
    elif mode == 'none':
        message = 'staging is off (mode none): %.2f GiB of %d file(s) stay cold' % (missing / gib, len(cold))
    elif fits:
        message = 'reading %.2f GiB of %d file(s); %.2f GiB available above the margin' % (missing / gib, len(cold), budget / gib)
    else:
        message = ('%.2f GiB are cold but only %.2f GiB are available above the margin of %.2f GiB: %s'
                   % (missing / gib, budget / gib, int(margin) / gib,
                      'staging %.2f GiB of %d file(s) that fit' % (used / gib, len(stage)) if mode == 'fit'
                      else 'staging nothing (mode all stages every file or none)'))
    return {'stage': stage, 'stage_bytes': used, 'missing_bytes': missing, 'budget': budget, 'fits': fits,
            'skipped': skipped, 'message': message}


def read_into_cache(paths, threads=8, chunk=CHUNK):
    """Read ``paths`` whole with ``threads`` threads (each takes ``chunk``-byte ranges of any file from a shared
    queue, ``os.pread``), so that their pages land in the page cache. Nothing is kept in memory.

    :returns: dict ``bytes`` (read), ``seconds``, ``gb_per_s`` (1e9 bytes per second; 0.0 when nothing was read).
    :raises OSError: the first read error of any thread.
    """
    work = []
    for path in paths:
        size = os.path.getsize(path)
        work.extend((path, offset, min(chunk, size - offset)) for offset in range(0, size, chunk))
    lock = threading.Lock()
    state = {'next': 0, 'bytes': 0}
    errors = []

    def worker():
        fds = {}
        try:
            while True:
                with lock:
                    if state['next'] >= len(work) or errors:
                        return
                    path, offset, length = work[state['next']]
                    state['next'] += 1
                if path not in fds:
                    fds[path] = os.open(path, os.O_RDONLY)
                done = 0
                while done < length:
                    got = len(os.pread(fds[path], min(length - done, 8 << 20), offset + done))
                    if not got:
                        break
                    done += got
                with lock:
                    state['bytes'] += done
        except OSError as exc:
            with lock:
                errors.append(exc)
        finally:
            for fd in fds.values():
                os.close(fd)

    started = time.monotonic()
    pool = [threading.Thread(target=worker) for _i in range(max(1, min(int(threads), len(work) or 1)))]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    seconds = time.monotonic() - started
    if errors:
        raise errors[0]
    total = state['bytes']
    return {'bytes': total, 'seconds': round(seconds, 3),
            'gb_per_s': round(total / 1e9 / seconds, 3) if total and seconds > 0 else 0.0}


def _resident(files):
    return [dict(f, resident=resident_bytes(f['path'])) for f in files]


def stage(paths, mode='fit', margin=8 << 30, threads=8, check=False, meminfo='/proc/meminfo'):
    """Check and stage the weight files of the model directories ``paths``.

    :returns: dict ``models`` (per directory: ``path``, ``files``, ``bytes``, ``indexed``; a path that is no directory
        is listed with ``files`` 0 and ``skipped_reason``), ``problems`` (list of str), ``mem_available`` (bytes, before),
        ``plan`` (:func:`stage_plan`), ``resident_before``/``resident_after`` (bytes of all files), ``total_bytes``,
        ``read`` (:func:`read_into_cache`'s result; zeros when nothing was read or in check mode), ``changed`` (bool),
        ``summary`` (what the cutover's record keeps: ``mode``, ``check``, ``total_bytes``, ``resident_before``,
        ``resident_after``, ``read_bytes``, ``seconds``, ``gb_per_s``, ``message``).
        With problems nothing is read.
    """
    models, files, problems = [], [], []
    for path in paths:
        if not os.path.isdir(path):
            models.append({'path': path, 'files': 0, 'bytes': 0, 'indexed': False, 'skipped_reason': 'not a directory'})
            continue
        found = weight_files(path)
        problems.extend(found['problems'])
        files.extend(found['files'])
        models.append({'path': path, 'files': len(found['files']), 'bytes': sum(f['size'] for f in found['files']),
                       'indexed': found['indexed']})
    with open(meminfo) as handle:
        mem_available = parse_meminfo(handle.read()).get('MemAvailable', 0)
    files = _resident(files)
    before = sum(f['resident'] for f in files)
    plan = stage_plan(files, mem_available, margin, mode if not problems else 'none')
    read = {'bytes': 0, 'seconds': 0.0, 'gb_per_s': 0.0}
    if plan['stage'] and not check and not problems:
        read = read_into_cache(plan['stage'], threads=threads)
        after = sum(resident_bytes(f['path']) for f in files)
    else:
        after = before
    total = sum(f['size'] for f in files)
    return {'models': models, 'problems': problems, 'mem_available': mem_available, 'plan': plan,
            'resident_before': before, 'resident_after': after, 'total_bytes': total,
            'read': read, 'changed': bool(read['bytes']),
            'summary': {'mode': mode, 'check': bool(check), 'total_bytes': total, 'resident_before': before,
                        'resident_after': after, 'read_bytes': read['bytes'], 'seconds': read['seconds'],
                        'gb_per_s': read['gb_per_s'], 'message': plan['message']}}
