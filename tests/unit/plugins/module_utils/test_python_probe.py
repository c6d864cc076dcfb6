# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of module_utils/_python_probe.py: the probe runs in real interpreters."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import subprocess
import sys

import pytest

from ansible_collections.inferops.sglang.tests.unit.plugins.module_utils.fake_files import write
from ansible_collections.inferops.sglang.plugins.module_utils._python_probe import (
    PYTHON_PROBE,
    parse_python_probe,
    sitecustomize_error,
)


# ---------------------------------------------------------------------------------------------
# the interpreter probe

def run_probe(python):
    proc = subprocess.run([python, '-c', PYTHON_PROBE], cwd='/', stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, check=False)
    return proc, parse_python_probe(proc.stdout)


def test_python_probe_this_interpreter():
    proc, probe = run_probe(sys.executable)
    assert proc.returncode == 0
    assert probe['version'] == '%d.%d.%d' % sys.version_info[:3]
    assert probe['prefix'] == sys.prefix
    assert 'error' not in probe
    assert probe['stdlib']
    assert isinstance(probe['site_packages'], list)


@pytest.mark.skipif(not os.path.exists('/usr/bin/python3'), reason='no /usr/bin/python3')
def test_python_probe_system_python_sitecustomize():
    proc, probe = run_probe('/usr/bin/python3')
    candidate = os.path.join(probe['stdlib'], 'sitecustomize.py')
    if os.path.exists(candidate):  # Debian/Ubuntu: a link to /etc/python3.X/sitecustomize.py
        assert probe['sitecustomize_imported'] is True
        assert probe['sitecustomize_path'] == candidate
    else:
        assert probe['sitecustomize_path'] != candidate


def test_python_probe_does_not_import_sglang(tmp_path):
    # a fake sglang whose import would fail loudly, with its metadata next to it
    site = tmp_path / 'site'
    write(site / 'sglang' / '__init__.py', 'raise RuntimeError("sglang was imported")\n')
    write(site / 'sglang-0.5.9.dist-info' / 'METADATA', 'Metadata-Version: 2.1\nName: sglang\nVersion: 0.5.9\n')
    write(site / 'sitecustomize.py', 'import os\nos.environ.setdefault("NCCL_PROTO", "LL")\n')
    env = dict(os.environ, PYTHONPATH=str(site))
    proc = subprocess.run([sys.executable, '-c', PYTHON_PROBE], cwd='/', env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, check=False)
    probe = parse_python_probe(proc.stdout)
    assert probe['sglang_version'] == '0.5.9'
    assert 'sglang was imported' not in proc.stderr
    assert probe['sitecustomize_imported'] is True
    assert probe['sitecustomize_path'] == str(site / 'sitecustomize.py')


def test_parse_python_probe_and_sitecustomize_error():
    out = 'noise printed by a sitecustomize\n@@inferops_sglang_probe@@{"version": "3.12.3"}\n'
    assert parse_python_probe(out) == {'version': '3.12.3'}
    assert parse_python_probe('no marker\n') is None
    assert parse_python_probe('@@inferops_sglang_probe@@{broken\n') is None
    err = 'Error in sitecustomize; set PYTHONVERBOSE for traceback:\nNameError: name \'x\' is not defined\n'
    assert sitecustomize_error(err) == ("Error in sitecustomize; set PYTHONVERBOSE for traceback: "
                                        "NameError: name 'x' is not defined")
    assert sitecustomize_error('') is None
