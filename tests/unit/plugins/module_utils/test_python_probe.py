# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
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
    torch_cuda_version,
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


# torch/version.py as torch's build writes it (tools/generate_torch_version.py): 2.x with annotations, 1.x without
TORCH_2_CUDA = ("from typing import Optional\n\n"
                "__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'rocm', 'xpu']\n"
                "__version__ = '2.9.1+cu130'\n"
                "debug = False\n"
                "cuda: Optional[str] = '13.0'\n"
                "git_version = 'd38164a545b4a4e4e0cf73ce67173f70574890b6'\n"
                "hip: Optional[str] = None\n"
                "rocm: Optional[str] = None\n"
                "xpu: Optional[str] = None\n")
TORCH_2_CPU = (TORCH_2_CUDA.replace("'2.9.1+cu130'", "'2.9.1+cpu'")
               .replace("cuda: Optional[str] = '13.0'", "cuda: Optional[str] = None"))
TORCH_2_ROCM = TORCH_2_CPU.replace("hip: Optional[str] = None", "hip: Optional[str] = '6.4.43482-0f2d60242'")
TORCH_1_CUDA = ("__version__ = '1.13.1+cu117'\n"
                "debug = False\n"
                "cuda = '11.7'\n"
                "git_version = '49444c3e546bf240bed24a101e747422d1f8a0ee'\n"
                "hip = None\n")


@pytest.mark.parametrize('text, expected', [
    (TORCH_2_CUDA, '13.0'),
    (TORCH_2_CPU, None),
    (TORCH_2_ROCM, None),
    (TORCH_1_CUDA, '11.7'),
    (TORCH_1_CUDA.replace("cuda = '11.7'", 'cuda = "12.8"  # set by the build'), '12.8'),
    (TORCH_1_CUDA.replace("cuda = '11.7'", 'cuda = None'), None),
    ('', None),
    (None, None),
    ("cuda = 13.0\n", None),            # not a string: not a CUDA version torch would write
    ("cuda = os.environ['X']\n", None),  # not a literal: never evaluated
    ("cuda_home = '/usr/local/cuda'\n", None),
    ("    cuda = '12.1'\n", None),       # indented: not the module-level name
])
def test_torch_cuda_version_from_the_text_of_torch_version_py(text, expected):
    """Versions in the record: torch.version.cuda read from torch/version.py without importing torch, both the
    1.x form (cuda = '11.7') and the 2.x annotated form (cuda: Optional[str] = '13.0'); None for CPU/ROCm builds."""
    assert torch_cuda_version(text) == expected


def test_python_probe_reports_torch_without_importing_it(tmp_path):
    """Versions in the record: the probe reads torch's distribution version and the text of torch/version.py in
    the same run; a torch whose import would fail loudly is not imported."""
    site = tmp_path / 'site'
    write(site / 'torch' / '__init__.py', 'raise RuntimeError("torch was imported")\n')
    write(site / 'torch' / 'version.py', TORCH_2_CUDA)
    write(site / 'torch-2.9.1+cu130.dist-info' / 'METADATA', 'Metadata-Version: 2.1\nName: torch\nVersion: 2.9.1+cu130\n')
    env = dict(os.environ, PYTHONPATH=str(site))
    proc = subprocess.run([sys.executable, '-c', PYTHON_PROBE], cwd='/', env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, check=False)
    probe = parse_python_probe(proc.stdout)
    assert 'torch was imported' not in proc.stderr and 'error' not in probe
    assert probe['torch_version'] == '2.9.1+cu130'
    assert probe['torch_version_py'] == TORCH_2_CUDA
    assert torch_cuda_version(probe['torch_version_py']) == '13.0'


def test_python_probe_without_torch(tmp_path):
    venv = tmp_path / 'venv'
    subprocess.run([sys.executable, '-m', 'venv', '--without-pip', str(venv)], check=True)
    dummy, probe = run_probe(str(venv / 'bin' / 'python3'))
    assert probe['torch_version'] is None and probe['torch_version_py'] is None


def test_parse_python_probe_and_sitecustomize_error():
    out = 'noise printed by a sitecustomize\n@@inferops_sglang_probe@@{"version": "3.12.3"}\n'
    assert parse_python_probe(out) == {'version': '3.12.3'}
    assert parse_python_probe('no marker\n') is None
    assert parse_python_probe('@@inferops_sglang_probe@@{broken\n') is None
    err = 'Error in sitecustomize; set PYTHONVERBOSE for traceback:\nNameError: name \'x\' is not defined\n'
    assert sitecustomize_error(err) == ("Error in sitecustomize; set PYTHONVERBOSE for traceback: "
                                        "NameError: name 'x' is not defined")
    assert sitecustomize_error('') is None


@pytest.mark.parametrize('body, said', [
    ('import os\n' * 17 + 'if True print("x")\n', 'line 18: SyntaxError: '),      # C49
    ('import os\nraise RuntimeError("boom")\n', ': RuntimeError: boom'),
])
def test_c49_broken_sitecustomize_is_named_with_its_file_and_line(tmp_path, body, said):
    """C49: the sitecustomize.py the interpreter imports (here: first on the server's PYTHONPATH) has a syntax error
    at line 18 (or raises): the probe names that file (it is not taken as 'none') and the line, without running it
    a second time."""
    path = str(tmp_path / 'sitecustomize.py')
    write(path, body)
    proc = subprocess.run([sys.executable, '-c', PYTHON_PROBE], cwd='/', stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, check=False,
                          env=dict(os.environ, PYTHONPATH=str(tmp_path)))
    probe = parse_python_probe(proc.stdout)
    assert probe['sitecustomize_imported'] is False and probe['sitecustomize_path'] is None
    assert probe['sitecustomize_failed_path'] == path
    error = sitecustomize_error(proc.stderr, probe)
    assert error.startswith(path) and said in error, error
    assert 'Error in sitecustomize' in error


def test_sitecustomize_error_of_a_probe_without_a_failure():
    assert sitecustomize_error('', {'sitecustomize_path': '/usr/lib/python3.11/sitecustomize.py'}) is None
    assert sitecustomize_error('', {'sitecustomize_failed_path': '/x/sitecustomize.py'}) is None


# ---------------------------------------------------------------------------------------------
# where a new sitecustomize.py goes, and the spawn probe (field case C13)

def test_sitecustomize_candidate_is_a_file_in_the_venvs_own_site_packages():
    """C13: an interpreter that imports no sitecustomize (pyenv, uv, python.org build, or a venv on one): the new
    file goes to the first site directory on sys.path, and the candidate is a full path to the file."""
    probe = {'stdlib': '/root/.pyenv/versions/3.12.7/lib/python3.12',
             'purelib': '/root/ml-env/lib/python3.12/site-packages',
             'platlib': '/root/ml-env/lib/python3.12/site-packages',
             'site_packages': ['/root/ml-env/lib/python3.12/site-packages'],
             'sys_path': ['', '/root/.pyenv/versions/3.12.7/lib/python312.zip', '/root/.pyenv/versions/3.12.7/lib/python3.12',
                          '/root/ml-env/lib/python3.12/site-packages']}
    from ansible_collections.inferops.sglang.plugins.module_utils._python_probe import sitecustomize_candidate
    assert sitecustomize_candidate(probe) == '/root/ml-env/lib/python3.12/site-packages/sitecustomize.py'
    # purelib not on sys.path (python -S, or an odd build): the standard library directory
    probe['sys_path'] = ['/root/.pyenv/versions/3.12.7/lib/python3.12']
    assert sitecustomize_candidate(probe) == '/root/.pyenv/versions/3.12.7/lib/python3.12/sitecustomize.py'
    assert sitecustomize_candidate({}) is None


def test_real_probe_gives_a_candidate_ending_in_sitecustomize_py(tmp_path):
    from ansible_collections.inferops.sglang.plugins.module_utils._python_probe import sitecustomize_candidate
    venv = tmp_path / 'venv'
    subprocess.run([sys.executable, '-m', 'venv', '--without-pip', str(venv)], check=True)
    dummy, probe = run_probe(str(venv / 'bin' / 'python3'))
    candidate = sitecustomize_candidate(probe)
    assert candidate == os.path.join(probe['purelib'], 'sitecustomize.py')
    assert candidate.startswith(str(venv))


def test_spawn_probe_reports_what_a_spawned_child_sees(tmp_path):
    """C13/C08: the variables must reach a child started with multiprocessing spawn from a clean environment;
    a sitecustomize.py on PYTHONPATH is imported by the child too."""
    from ansible_collections.inferops.sglang.plugins.module_utils._python_probe import spawn_env_missing, spawn_probe_argv
    patches = tmp_path / 'patches'
    write(str(patches / 'sitecustomize.py'), "import os\nos.environ.setdefault('INFEROPS_T', 'from-patches')\n")
    argv = spawn_probe_argv(sys.executable, ['INFEROPS_T', 'INFEROPS_U'], str(patches))
    assert argv[:3] == ['/usr/bin/env', '-i', 'PATH=/usr/bin:/bin'] and argv[3] == 'PYTHONPATH=%s' % patches
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False,
                          env=dict(os.environ, INFEROPS_T='from-the-caller'))
    assert proc.returncode == 0, proc.stderr
    assert spawn_env_missing(proc.stdout, {'INFEROPS_T': 'from-patches'}) == []
    assert spawn_env_missing(proc.stdout, {'INFEROPS_T': 'other', 'INFEROPS_U': '1'}) == ['INFEROPS_T', 'INFEROPS_U']
    # without the PYTHONPATH the child sees nothing: the caller's environment does not leak in
    proc = subprocess.run(spawn_probe_argv(sys.executable, ['INFEROPS_T']), stdout=subprocess.PIPE,
                          universal_newlines=True, check=False, env=dict(os.environ, INFEROPS_T='from-the-caller'))
    assert spawn_env_missing(proc.stdout, {'INFEROPS_T': 'from-patches'}) == ['INFEROPS_T']
    assert spawn_env_missing('', {'A': '1', 'B': '2'}) == ['A', 'B']


def test_spawn_probe_argv_refuses_bad_input():
    from ansible_collections.inferops.sglang.plugins.module_utils._python_probe import spawn_probe_argv
    with pytest.raises(ValueError):
        spawn_probe_argv('python3', ['A'])
    with pytest.raises(TypeError):
        spawn_probe_argv('/usr/bin/python3', 'CUDA_HOME')
