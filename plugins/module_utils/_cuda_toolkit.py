# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""CUDA toolkits on a host: where they are, their versions, and the one CUDA_HOME should name.

Directories come from glob patterns the caller gives; ``nvcc --version`` is run by the caller (the
module) only for toolkits whose version files say nothing.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import glob
import json
import os
import re

from ansible_collections.inferops.sglang.plugins.module_utils._procfs import read_text


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
