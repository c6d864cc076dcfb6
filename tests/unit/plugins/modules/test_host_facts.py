# -*- coding: utf-8 -*-
# Module-level tests of inferops.sglang.host_facts: real runs through `ansible localhost -c local`,
# fake nvidia-smi scripts printing the captured fixtures, and an in-process run on a fake /proc (C11).

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import glob
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from ansible_collections.inferops.sglang.tests.unit.plugins.modules.module_args import patch_module_args
from ansible_collections.inferops.sglang.plugins.module_utils import _host_init, _nvidia_smi
from ansible_collections.inferops.sglang.plugins.modules import host_facts

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'fixtures', 'nvidia-smi')
ANSIBLE = os.path.join(os.path.dirname(sys.executable), 'ansible')
# the directory holding ansible_collections/inferops/sglang (as imported, symlinks kept)
COLLECTIONS_PATH = os.environ.get('ANSIBLE_COLLECTIONS_PATH') or os.path.abspath(
    os.path.join(os.path.dirname(host_facts.__file__), '..', '..', '..', '..', '..'))

FACT_KEYS = {'init', 'python', 'gpus', 'gpu_count', 'driver_version', 'cuda_driver_version', 'interconnect',
             'topology', 'gpu_processes', 'nvidia_smi', 'cuda', 'listeners', 'units', 'supervisor',
             'servers', 'strays', 'foreign', 'endpoint', 'lost_gpus', 'gpu_error', 'fabric', 'fabric_manager',
             'xid_events', 'network', 'lock_run_id', 'read_as_root'}
INIT_KEYS = {'system', 'pid1', 'pid1_cmdline', 'systemd_booted', 'systemd_version', 'container', 'cron_running',
             'cron'}
CRON_KEYS = {'daemon', 'reads_cron_d', 'crontabs_dir', 'reboot_marker', 'reboot_marker_exists', 'reboot_marker_persists'}
PYTHON_KEYS = {'executable', 'exists', 'version', 'prefix', 'base_prefix', 'is_venv', 'bin_dir', 'site_packages',
               'sitecustomize', 'sglang_version', 'torch_version', 'torch_cuda_version', 'pythonpath', 'pythonpath_from'}
SITECUSTOMIZE_KEYS = {'imported', 'path', 'realpath', 'is_link', 'candidate', 'error'}
GPU_KEYS = {'index', 'name', 'uuid', 'memory_total_mib', 'memory_used_mib', 'compute_cap', 'driver_version',
            'pci_bus_id', 'mig_mode', 'mig_devices', 'persistence_mode', 'recovery_action', 'remapped_rows_pending',
            'remapped_rows_failure', 'retired_pages_pending', 'ecc_uncorrectable_volatile', 'fabric_state',
            'fabric_status'}
LISTENER_KEYS = {'proto', 'host', 'port', 'inode', 'pid', 'process', 'uid', 'user'}
TOOLKIT_KEYS = {'path', 'realpath', 'version', 'nvcc', 'ptxas'}

needs_ansible = pytest.mark.skipif(not os.path.exists(ANSIBLE), reason='no ansible next to this python')


def run_module(args, check=False):
    """Run the module through `ansible localhost -c local`; return (status, result, stderr)."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_PATH, ANSIBLE_NOCOLOR='1',
               ANSIBLE_FORCE_COLOR='0', ANSIBLE_LOCALHOST_WARNING='0', ANSIBLE_INVENTORY_UNPARSED_WARNING='0',
               ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    cmd = [ANSIBLE, 'localhost', '-c', 'local', '-m', 'inferops.sglang.host_facts', '-a', json.dumps(args)]
    if check:
        cmd.append('--check')
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, check=False, timeout=300)
    m = re.search(r'^localhost \| (\w+)(?: \| rc=\d+)? => (\{.*\})\s*$', proc.stdout, re.MULTILINE | re.DOTALL)
    assert m, 'unexpected output:\n%s\n%s' % (proc.stdout, proc.stderr)
    return m.group(1), json.loads(m.group(2)), proc.stderr


def fixture_path(*parts):
    return os.path.abspath(os.path.join(FIXTURES, *parts))


def fake_nvidia_smi(tmp_path, query_gpu=None, topo=None, header=None, compute_apps=None, fail=None, fail_rc=9):
    """A bash nvidia-smi that prints fixtures. CSV fixtures captured with --format=csv are turned
    into what --format=csv,noheader,nounits prints (the module asks for that)."""
    def csv(path):
        return "tail -n +2 '%s' | sed 's/ MiB//g'" % path if path else 'true'
    if fail:
        body = "cat '%s'\nexit %d\n" % (fail, fail_rc)
    else:
        body = (
            'case "$1" in\n'
            '  --query-gpu=*) %s ;;\n'
            '  --query-compute-apps=*) %s ;;\n'
            "  topo) cat '%s' ;;\n"
            "  '') cat '%s' ;;\n"
            '  *) echo "unexpected: $*" >&2; exit 2 ;;\n'
            'esac\n' % (csv(query_gpu), csv(compute_apps), topo, header)
        )
    path = tmp_path / 'nvidia-smi'
    path.write_text('#!/bin/bash\n' + body)
    path.chmod(0o755)
    return str(path)


def check_shape(facts):
    assert set(facts) == FACT_KEYS
    assert set(facts['init']) == INIT_KEYS
    assert set(facts['init']['cron']) == CRON_KEYS
    assert set(facts['python']) == PYTHON_KEYS
    assert set(facts['python']['sitecustomize']) == SITECUSTOMIZE_KEYS
    assert facts['init']['system'] in ('systemd', 'other')
    assert facts['init']['container'] in _host_init.CONTAINER_KINDS
    assert facts['interconnect'] in _nvidia_smi.INTERCONNECTS
    assert facts['gpu_count'] == len(facts['gpus'])
    for gpu in facts['gpus']:
        assert set(gpu) == GPU_KEYS
    for entry in facts['listeners']:
        assert set(entry) == LISTENER_KEYS
        assert entry['proto'] in ('tcp', 'tcp6')
    assert set(facts['cuda']) == {'toolkits', 'home'}
    for tk in facts['cuda']['toolkits']:
        assert set(tk) == TOOLKIT_KEYS
    assert set(facts['supervisor']) == {'installed', 'running', 'config_files', 'programs'}
    if facts['init']['system'] != 'systemd':
        assert facts['units'] == []


@needs_ansible
@pytest.mark.skipif(not os.path.exists('/usr/bin/python3'), reason='no /usr/bin/python3')
def test_real_run_on_this_machine():
    status, result, stderr = run_module({'python': '/usr/bin/python3'})
    assert status == 'SUCCESS'
    assert result['changed'] is False
    assert set(result) - {'changed', 'warnings', 'deprecations'} == {'ansible_facts'}
    facts = result['ansible_facts']['inferops_sglang']
    check_shape(facts)

    # init: what this machine really is (here PID 1 is not systemd)
    with open('/proc/1/comm') as f:
        pid1 = f.read().strip()
    init = facts['init']
    assert init['pid1'] == pid1
    assert init['systemd_booted'] == os.path.isdir('/run/systemd/system')
    expected = 'systemd' if (pid1 == 'systemd' and init['systemd_booted']) else 'other'
    assert init['system'] == expected
    assert init['container'] == _host_init.detect_container()
    if shutil.which('systemctl'):
        assert isinstance(init['systemd_version'], int)

    # python: as on disk
    py = facts['python']
    assert py['executable'] == '/usr/bin/python3'
    assert py['exists'] is True
    assert py['bin_dir'] == '/usr/bin'
    assert re.match(r'^3\.\d+\.\d+$', py['version'])
    assert py['is_venv'] is False
    major_minor = '.'.join(py['version'].split('.')[:2])
    sc = py['sitecustomize']
    candidate = '/usr/lib/python%s/sitecustomize.py' % major_minor
    # a new file would go to the first site directory on sys.path (Debian: /usr/local/lib/python3.X/dist-packages)
    assert sc['candidate'].endswith('/sitecustomize.py') and os.path.isdir(os.path.dirname(sc['candidate']))
    if os.path.exists(candidate):
        assert sc['imported'] is True
        assert sc['path'] == candidate
        assert sc['realpath'] == os.path.realpath(candidate)
        assert sc['is_link'] is os.path.islink(candidate)
    elif not sc['imported']:
        assert sc['path'] is None and sc['realpath'] is None

    # no GPU here: a normal result with a warning
    if not shutil.which('nvidia-smi'):
        assert facts['gpus'] == [] and facts['gpu_count'] == 0
        assert facts['interconnect'] == 'none'
        assert facts['nvidia_smi'] is None
        assert 'nvidia-smi not found' in stderr

    # CUDA toolkits: those on disk
    found = []
    for pattern in ('/usr/local/cuda', '/usr/local/cuda-*'):
        found.extend(p for p in sorted(glob.glob(pattern)) if os.path.isdir(p) and p not in found)
    assert [t['path'] for t in facts['cuda']['toolkits']] == found
    if facts['cuda']['home'] is not None:
        assert facts['cuda']['home'] == os.path.realpath(facts['cuda']['home'])

    # listeners: the same sockets /proc shows (ports only; they may come and go)
    assert all(0 < entry['port'] < 65536 for entry in facts['listeners'])


@needs_ansible
def test_fake_nvidia_smi_h200x2_nvlink(tmp_path):
    # topo_m_raw.txt: topo -m as nvidia-smi really prints it, the header underlined with terminal escapes
    smi = fake_nvidia_smi(tmp_path,
                          query_gpu=fixture_path('h200x2', 'query_gpu.csv'),
                          topo=fixture_path('h200x2', 'topo_m_raw.txt'),
                          header=fixture_path('h200x2', 'nvidia_smi_busy.txt'),
                          compute_apps=fixture_path('h200x2', 'compute_apps_busy.csv'))
    status, result, stderr = run_module({'nvidia_smi': smi})
    assert status == 'SUCCESS'
    facts = result['ansible_facts']['inferops_sglang']
    check_shape(facts)
    assert facts['nvidia_smi'] == smi
    assert facts['gpu_count'] == 2
    assert [g['uuid'] for g in facts['gpus']] == ['GPU-264e02ee-af98-d893-82ae-4ec1afc463e1',
                                                  'GPU-4f3f9924-c31b-11ce-1a00-cd855da98952']
    assert facts['gpus'][0]['memory_total_mib'] == 143771
    assert facts['gpus'][1]['pci_bus_id'] == '00000000:00:07.0'
    assert facts['driver_version'] == '580.159.04'
    assert facts['cuda_driver_version'] == '13.0'
    assert facts['interconnect'] == 'nvlink'
    assert facts['topology'] == {'GPU0': {'GPU1': 'NV18'}, 'GPU1': {'GPU0': 'NV18'}}
    assert [(p['pid'], p['used_memory_mib']) for p in facts['gpu_processes']] == [(568, 4334), (568, 4334)]
    # python not given: the python facts are there, empty
    assert facts['python']['executable'] is None and facts['python']['exists'] is False


@needs_ansible
def test_fake_nvidia_smi_pcie8(tmp_path):
    # 8 GPUs on PCIe only: the reference host's shape (C09)
    query = tmp_path / 'query_gpu.csv'
    lines = ['index, name, uuid, memory.total [MiB], memory.used [MiB], compute_cap, driver_version, pci.bus_id']
    for i in range(8):
        lines.append('%d, NVIDIA RTX PRO 6000 Blackwell Server Edition, GPU-0000000%d-0000-0000-0000-000000000000, '
                     '97887 MiB, 1 MiB, 12.0, 580.82.07, 00000000:%02X:00.0' % (i, i, 0x10 * (i + 1)))
    query.write_text('\n'.join(lines) + '\n')
    smi = fake_nvidia_smi(tmp_path, query_gpu=str(query), topo=fixture_path('pcie8', 'topo_m.txt'),
                          header=fixture_path('h200x2', 'nvidia_smi_busy.txt'))
    status, result, stderr = run_module({'nvidia_smi': smi})
    assert status == 'SUCCESS'
    facts = result['ansible_facts']['inferops_sglang']
    assert facts['gpu_count'] == 8
    assert facts['gpus'][7]['compute_cap'] == '12.0'
    assert facts['interconnect'] == 'pcie'
    assert sorted(facts['topology']) == ['GPU%d' % i for i in range(8)]
    assert facts['gpu_processes'] == []


@needs_ansible
def test_fake_nvidia_smi_mixed8_is_mixed(tmp_path):
    query = tmp_path / 'query_gpu.csv'
    query.write_text('header\n' + ''.join('%d, NVIDIA RTX A6000, GPU-%d, 49140, 0, 8.6, 550.54.15, 00000000:%02X:00.0\n'
                                          % (i, i, i + 1) for i in range(8)))
    smi = fake_nvidia_smi(tmp_path, query_gpu=str(query), topo=fixture_path('mixed8', 'topo_m.txt'),
                          header=fixture_path('h200x2', 'nvidia_smi_busy.txt'))
    status, result, stderr = run_module({'nvidia_smi': smi})
    facts = result['ansible_facts']['inferops_sglang']
    assert status == 'SUCCESS'
    assert facts['interconnect'] == 'mixed'


@needs_ansible
def test_fake_nvidia_smi_single(tmp_path):
    smi = fake_nvidia_smi(tmp_path, query_gpu=fixture_path('h200x1', 'query_gpu.csv'),
                          topo=fixture_path('h200x1', 'topo_m.txt'),
                          header=fixture_path('h200x2', 'nvidia_smi_busy.txt'))
    status, result, stderr = run_module({'nvidia_smi': smi})
    facts = result['ansible_facts']['inferops_sglang']
    assert facts['gpu_count'] == 1
    assert facts['interconnect'] == 'single'
    assert facts['topology'] == {'GPU0': {}}


@needs_ansible
@pytest.mark.parametrize('fixture,rc', [(('no_gpu', 'driver_failed.txt'), 9), (('no_gpu', 'query_gpu_no_devices.txt'), 6)],
                         ids=['driver-failed', 'no-devices'])
def test_failing_nvidia_smi_is_not_a_failure(tmp_path, fixture, rc):
    smi = fake_nvidia_smi(tmp_path, fail=fixture_path(*fixture), fail_rc=rc)
    status, result, stderr = run_module({'nvidia_smi': smi}, check=True)
    assert status == 'SUCCESS'
    assert result['changed'] is False
    facts = result['ansible_facts']['inferops_sglang']
    check_shape(facts)
    assert facts['gpus'] == [] and facts['gpu_count'] == 0
    assert facts['interconnect'] == 'none'
    assert facts['topology'] == {}
    assert facts['driver_version'] is None and facts['cuda_driver_version'] is None
    with open(fixture_path(*fixture)) as f:
        first_line = f.readline().strip()
    assert first_line in ' '.join(stderr.split())


@needs_ansible
def test_missing_python_is_not_a_failure(tmp_path):
    status, result, stderr = run_module({'python': str(tmp_path / 'no-env' / 'bin' / 'python3'),
                                         'nvidia_smi': str(tmp_path / 'no-nvidia-smi')})
    assert status == 'SUCCESS'
    py = result['ansible_facts']['inferops_sglang']['python']
    assert py['exists'] is False
    assert py['executable'] == str(tmp_path / 'no-env' / 'bin' / 'python3')
    assert py['bin_dir'] == str(tmp_path / 'no-env' / 'bin')
    assert py['version'] is None and py['sglang_version'] is None
    assert py['torch_version'] is None and py['torch_cuda_version'] is None
    assert 'does not exist' in stderr


@needs_ansible
@pytest.mark.parametrize('version, version_py, cuda', [
    ('2.9.1+cu130', "from typing import Optional\n\n__version__ = '2.9.1+cu130'\ndebug = False\n"
                    "cuda: Optional[str] = '13.0'\nhip: Optional[str] = None\n", '13.0'),
    ('2.9.1+cpu', "from typing import Optional\n\n__version__ = '2.9.1+cpu'\ndebug = False\n"
                  "cuda: Optional[str] = None\nhip: Optional[str] = None\n", None),
])
def test_venv_torch_versions_are_facts(tmp_path, version, version_py, cuda):
    """Versions in the record: torch's distribution version and the CUDA runtime it was built with, read from its
    metadata and torch/version.py by the one interpreter probe; torch is not imported."""
    env = tmp_path / 'ml-env'
    subprocess.run([sys.executable, '-m', 'venv', '--without-pip', str(env)], check=True)
    site = glob.glob(str(env / 'lib' / 'python3*' / 'site-packages'))[0]
    os.makedirs(os.path.join(site, 'torch'))
    with open(os.path.join(site, 'torch', '__init__.py'), 'w') as f:
        f.write('raise RuntimeError("torch was imported")\n')
    with open(os.path.join(site, 'torch', 'version.py'), 'w') as f:
        f.write(version_py)
    os.makedirs(os.path.join(site, 'torch-%s.dist-info' % version))
    with open(os.path.join(site, 'torch-%s.dist-info' % version, 'METADATA'), 'w') as f:
        f.write('Metadata-Version: 2.1\nName: torch\nVersion: %s\n' % version)
    status, result, stderr = run_module({'python': str(env / 'bin' / 'python3'), 'nvidia_smi': str(tmp_path / 'none')})
    assert status == 'SUCCESS'
    py = result['ansible_facts']['inferops_sglang']['python']
    assert py['torch_version'] == version
    assert py['torch_cuda_version'] == cuda
    assert py['sglang_version'] is None
    assert 'torch was imported' not in stderr


@needs_ansible
def test_venv_python_facts(tmp_path):
    # a venv with a fake sglang whose import would fail, a sitecustomize in its site-packages
    env = tmp_path / 'ml-env'
    subprocess.run([sys.executable, '-m', 'venv', '--without-pip', str(env)], check=True)
    site = glob.glob(str(env / 'lib' / 'python3*' / 'site-packages'))[0]
    os.makedirs(os.path.join(site, 'sglang'))
    with open(os.path.join(site, 'sglang', '__init__.py'), 'w') as f:
        f.write('raise RuntimeError("sglang was imported")\n')
    os.makedirs(os.path.join(site, 'sglang-0.5.9.dist-info'))
    with open(os.path.join(site, 'sglang-0.5.9.dist-info', 'METADATA'), 'w') as f:
        f.write('Metadata-Version: 2.1\nName: sglang\nVersion: 0.5.9\n')
    with open(os.path.join(site, 'sitecustomize.py'), 'w') as f:
        f.write('import os\nos.environ.setdefault("NCCL_PROTO", "LL")\n')
    python = str(env / 'bin' / 'python3')
    status, result, stderr = run_module({'python': python, 'nvidia_smi': str(tmp_path / 'none')})
    assert status == 'SUCCESS'
    py = result['ansible_facts']['inferops_sglang']['python']
    assert py['executable'] == python  # not resolved to the base interpreter
    assert os.path.islink(python)
    assert py['bin_dir'] == str(env / 'bin')
    assert py['is_venv'] is True
    assert py['prefix'] == str(env)
    assert py['base_prefix'] == sys.base_prefix
    assert site in py['site_packages']
    assert py['sglang_version'] == '0.5.9'
    assert py['torch_version'] is None and py['torch_cuda_version'] is None  # no torch in this venv
    # Which sitecustomize.py wins depends on the base interpreter: Debian's /usr/bin/python3 has one in its stdlib
    # directory, which comes before the venv's site-packages on sys.path. Ask the interpreter, as the module does.
    imported = subprocess.run([python, '-c', 'import sys; m = sys.modules.get("sitecustomize"); print(m.__file__)'],
                              stdout=subprocess.PIPE, text=True, check=True).stdout.strip()
    assert py['sitecustomize']['imported'] is True
    assert py['sitecustomize']['path'] == imported
    assert py['sitecustomize']['is_link'] is os.path.islink(imported)
    assert py['sitecustomize']['error'] is None
    if imported != os.path.join(site, 'sitecustomize.py'):
        return  # the base interpreter's own file shadows the venv's; the raising case needs the venv's to win

    # a sitecustomize that raises: not imported, the error is reported
    with open(os.path.join(site, 'sitecustomize.py'), 'w') as f:
        f.write('import os\nraise KeyError("NCCL_ALGO")\n')
    status, result, stderr = run_module({'python': python, 'nvidia_smi': str(tmp_path / 'none')})
    sc = result['ansible_facts']['inferops_sglang']['python']['sitecustomize']
    assert status == 'SUCCESS'
    assert sc['imported'] is False
    assert 'Error in sitecustomize' in sc['error'] and 'NCCL_ALGO' in sc['error']


def run_in_process(monkeypatch, capsys, tmp_path, args):
    """Run host_facts.main() in this process on a fake /proc, /run and /etc."""
    monkeypatch.setattr(host_facts, 'PROC', str(tmp_path / 'proc'))
    monkeypatch.setattr(host_facts, 'RUN', str(tmp_path / 'run'))
    monkeypatch.setattr(host_facts, 'ETC', str(tmp_path / 'etc'))
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exc:
            host_facts.main()
    assert exc.value.code == 0
    return json.loads(capsys.readouterr().out)


def make_fake_host(tmp_path, pid1_comm, pid1_cmdline):
    proc = tmp_path / 'proc'
    for pid, comm, cmdline in ((1, pid1_comm, pid1_cmdline),
                               (812, 'python3', ['/root/ml-env/bin/python3', '-m', 'sglang.launch_server'])):
        d = proc / str(pid)
        (d / 'fd').mkdir(parents=True)
        (d / 'comm').write_text(comm + '\n')
        (d / 'cmdline').write_text('\0'.join(cmdline) + '\0')
    os.symlink('socket:[51234]', str(proc / '812' / 'fd' / '7'))
    (proc / 'net').mkdir()
    (proc / 'net' / 'tcp').write_text(
        '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n'
        '   0: 0100007F:7530 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 51234 1 0 100 0 0 10 0\n')
    (tmp_path / 'run' / 'systemd' / 'system').mkdir(parents=True)  # left behind: systemd is installed
    conf = tmp_path / 'etc' / 'supervisor' / 'conf.d'
    conf.mkdir(parents=True)
    (tmp_path / 'etc' / 'supervisor' / 'supervisord.conf').write_text('[supervisord]\n')
    (conf / 'sglang.conf').write_text('[program:sglang]\ncommand=/root/ml-env/bin/python3\n')


@pytest.mark.parametrize('comm,cmdline', [('sleep', ['sleep', 'infinity']), ('bash', ['/bin/bash'])])
def test_c11_pid1_not_systemd_in_process(monkeypatch, capsys, tmp_path, comm, cmdline):
    make_fake_host(tmp_path, comm, cmdline)
    result = run_in_process(monkeypatch, capsys, tmp_path, {'nvidia_smi': str(tmp_path / 'none')})
    assert result['changed'] is False
    facts = result['ansible_facts']['inferops_sglang']
    check_shape(facts)
    assert facts['init']['system'] == 'other'
    assert facts['init']['pid1'] == comm
    assert facts['init']['pid1_cmdline'] == cmdline
    assert facts['init']['systemd_booted'] is True
    assert facts['units'] == []
    assert facts['listeners'] == [{'proto': 'tcp', 'host': '127.0.0.1', 'port': 30000, 'inode': 51234,
                                   'pid': 812, 'process': 'python3', 'uid': 0, 'user': 'root'}]
    assert facts['supervisor']['programs'] == ['sglang']
    assert facts['supervisor']['installed'] is True
    assert facts['supervisor']['running'] is False


# ---- the endpoint probe -------------------------------------------------------------------------

def _serve(status):
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            self.send_response(status if self.path == '/health' else 404)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = HTTPServer(('127.0.0.1', 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.parametrize('status', [200, 503])
def test_probe_endpoint_reports_the_health_status(status):
    from ansible_collections.inferops.sglang.plugins.modules.host_facts import probe_endpoint
    server = _serve(status)
    try:
        result = probe_endpoint('127.0.0.1', server.server_address[1], 5)
    finally:
        server.shutdown()
    assert result['listening'] is True
    assert result['health_status'] == status
    assert result['seconds'] is not None


def test_probe_endpoint_on_a_closed_port():
    import socket
    from ansible_collections.inferops.sglang.plugins.modules.host_facts import probe_endpoint
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    sock.close()
    result = probe_endpoint('0.0.0.0', port, 2)
    assert result['listening'] is False and result['health_status'] is None
    assert result['error']


def test_server_pythonpath_comes_from_the_server_on_this_interpreter(tmp_path):
    """C13: the hand-started server runs with PYTHONPATH=/opt/patches; the interpreter is probed with it."""
    servers = [{'main_pid': 10, 'executable': '/other/bin/python3', 'env': {'PYTHONPATH': '/elsewhere'}},
               {'main_pid': 11, 'executable': '/root/ml-env/bin/python3', 'env': {'PATH': '/usr/bin'}},
               {'main_pid': 12, 'executable': '/root/ml-env/bin/python3', 'env': {'PYTHONPATH': '/opt/patches'}}]
    assert host_facts.server_pythonpath(servers, '/root/ml-env/bin/python3') == ('/opt/patches', 'server pid 12')
    assert host_facts.server_pythonpath(servers[:2], '/root/ml-env/bin/python3') == (None, None)
    assert host_facts.server_pythonpath(servers, None) == (None, None)


# ---- MIG (C16), lost GPUs (C17), driver/library mismatch (C18): the stand-in nvidia-smi's fault knobs ----

STANDIN_SMI = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'double', 'bin', 'nvidia-smi')
H200_BUS_IDS = ['00000000:18:00.0', '00000000:2A:00.0', '00000000:3A:00.0', '00000000:5D:00.0',
                '00000000:9A:00.0', '00000000:BA:00.0', '00000000:CB:00.0', '00000000:DB:00.0']


def standin_facts(monkeypatch, capsys, tmp_path, config, driver_gpus=(), driver_version=None):
    """host_facts in this process with the stand-in nvidia-smi configured by ``config`` and a stand-in
    /proc/driver/nvidia (``driver_gpus``: its gpus/ entries; ``driver_version``: its version file)."""
    smi_config = tmp_path / 'smi.json'
    smi_config.write_text(json.dumps(dict({'profile': 'h200-nvlink', 'bus_ids': H200_BUS_IDS,
                                           'device_dir': str(tmp_path / 'dev')}, **config)))
    monkeypatch.setenv('INFEROPS_NVIDIA_SMI_CONFIG', str(smi_config))
    driver = tmp_path / 'proc' / 'driver' / 'nvidia'
    (driver / 'gpus').mkdir(parents=True)
    for bus_id in driver_gpus:
        (driver / 'gpus' / bus_id).mkdir()
    if driver_version:
        (driver / 'version').write_text(driver_version)
    result = run_in_process(monkeypatch, capsys, tmp_path, {'nvidia_smi': os.path.abspath(STANDIN_SMI)})
    facts = result['ansible_facts']['inferops_sglang']
    assert {'lost_gpus', 'gpu_error', 'gpus', 'gpu_count'} <= set(facts)
    assert all(set(gpu) == GPU_KEYS for gpu in facts['gpus'])
    warnings = [w if isinstance(w, str) else str(w.get('msg', w)) for w in result.get('warnings', [])]
    return facts, ' '.join(warnings)


def test_c16_mig_mode_and_devices_are_facts(monkeypatch, capsys, tmp_path):
    """C16: every GPU Enabled, with the MIG devices nvidia-smi -L lists under it."""
    facts, warnings = standin_facts(monkeypatch, capsys, tmp_path, {'mig': True, 'mig_devices': 2})
    assert facts['gpu_count'] == 8
    assert [g['mig_mode'] for g in facts['gpus']] == ['Enabled'] * 8
    assert [len(g['mig_devices']) for g in facts['gpus']] == [2] * 8
    assert facts['gpus'][0]['mig_devices'][1]['profile'] == '3g.71gb'
    assert facts['gpus'][0]['mig_devices'][1]['uuid'].startswith('MIG-')
    assert facts['lost_gpus'] == [] and facts['gpu_error'] is None


def test_healthy_host_reports_mig_disabled(monkeypatch, capsys, tmp_path):
    facts, warnings = standin_facts(monkeypatch, capsys, tmp_path, {},
                                    driver_gpus=['0000:' + b[9:].lower() for b in H200_BUS_IDS])
    assert [g['mig_mode'] for g in facts['gpus']] == ['Disabled'] * 8
    assert all(g['mig_devices'] == [] for g in facts['gpus'])
    assert facts['lost_gpus'] == [] and facts['gpu_error'] is None
    assert facts['interconnect'] == 'nvlink'


@pytest.mark.parametrize('failure, expected', [
    (11, [(79, '0000:3B:00.0')]),      # EAGAIN after the records: the end of the log
    (1, None),                          # EPERM on the first read (dmesg_restrict): unreadable
])
def test_xid_events_read_from_the_kernel_log(monkeypatch, failure, expected):
    """/dev/kmsg gives one record per read and EAGAIN at the end; a kernel log root may not read is None."""
    import errno
    records = [b"3,1502,98765432,-;NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen "
               b"off the bus.\n"] if failure == errno.EAGAIN else []
    records.append(OSError(failure, os.strerror(failure)))

    def read(fd, size):
        item = records.pop(0)
        if isinstance(item, Exception):
            raise item
        return item
    monkeypatch.setattr(host_facts.os, 'open', lambda path, flags: 99)
    monkeypatch.setattr(host_facts.os, 'read', read)
    monkeypatch.setattr(host_facts.os, 'close', lambda fd: None)
    events = host_facts.HostFacts.xid_events(None, '/dev/kmsg')
    assert (None if events is None else [(e['xid'], e['pci_bus_id']) for e in events]) == expected


def test_c39_c40_gpu_health_is_a_fact(monkeypatch, capsys, tmp_path):
    (tmp_path / 'faults').mkdir()
    """C39/C40 through the module: the stand-in's fabric In Progress and GPU 3's recovery action are facts, and the
    one rule (gpu_blockers) refuses on them; a healthy H200 host reports every GPU's health and a ready fabric."""
    facts, warnings = standin_facts(monkeypatch, capsys, tmp_path, {})
    assert facts['fabric'] == {'state': 'ready', 'gpus': []}
    assert [g['recovery_action'] for g in facts['gpus']] == ['None'] * 8
    assert facts['gpus'][0]['persistence_mode'] == 'Enabled' and facts['gpus'][0]['ecc_uncorrectable_volatile'] == 0
    assert facts['cuda_driver_version'] == '13.0' and facts['driver_version'] == '580.159.04'
    assert set(facts['fabric_manager']) == {'installed', 'version', 'load_state', 'active_state',
                                            'persistenced_load_state', 'persistenced_active_state'}
    assert _nvidia_smi.gpu_blockers(facts, 8) == []
    facts, warnings = standin_facts(monkeypatch, capsys, tmp_path / 'faults', {
        'fabric_state': 'In Progress', 'fabric_status': 'N/A', 'gpu_health': {'3': {'recovery_action': 'Reset'}}})
    assert facts['fabric']['state'] == 'not_ready' and len(facts['fabric']['gpus']) == 8
    assert facts['gpus'][3]['recovery_action'] == 'Reset'
    assert [b['kind'] for b in _nvidia_smi.gpu_blockers(facts, 8)] == ['fabric', 'gpu_recovery']
    # C39 as the default scenario stages it: the stand-in's fabric follows a Fabric Manager unit that is not active.
    (tmp_path / 'manager').mkdir()
    facts, warnings = standin_facts(monkeypatch, capsys, tmp_path / 'manager', {
        'fabric_manager_unit': 'inferops-no-such-fabricmanager.service'})
    assert facts['fabric']['state'] == 'not_ready' and facts['gpus'][0]['fabric_state'] == 'In Progress'


@pytest.mark.parametrize('rc', [15, 0])
def test_c17_lost_gpu_is_a_fact(monkeypatch, capsys, tmp_path, rc):
    """C17: 'Unable to determine the device handle for GPU 0000:BA:00.0' then 7 rows, exit 15 or 0; the driver's
    /proc/driver/nvidia/gpus lists all 8."""
    facts, warnings = standin_facts(monkeypatch, capsys, tmp_path, {'lost': [5], 'lost_rc': rc},
                                    driver_gpus=['0000:' + b[9:].lower() for b in H200_BUS_IDS])
    assert facts['gpu_count'] == 7
    assert [g['index'] for g in facts['gpus']] == [0, 1, 2, 3, 4, 6, 7]
    assert facts['lost_gpus'] == [{'pci_bus_id': '0000:BA:00.0', 'error': 'Unknown Error', 'source': 'nvidia-smi'}]
    assert '0000:BA:00.0' in warnings


def test_c17_gpu_only_the_driver_knows_is_lost(monkeypatch, capsys, tmp_path):
    """C17: a GPU under /proc/driver/nvidia/gpus without an nvidia-smi row counts as lost too."""
    facts, warnings = standin_facts(monkeypatch, capsys, tmp_path, {'gpu_count': 7, 'bus_ids': H200_BUS_IDS[:7]},
                                    driver_gpus=['0000:' + b[9:].lower() for b in H200_BUS_IDS])
    assert [g['pci_bus_id'] for g in facts['lost_gpus']] == ['0000:DB:00.0']
    assert facts['lost_gpus'][0]['source'] == 'driver'


def test_c18_driver_library_mismatch_is_a_structured_error(monkeypatch, capsys, tmp_path):
    """C18: nvidia-smi fails with the mismatch; the facts carry the NVML library and kernel module versions."""
    facts, warnings = standin_facts(
        monkeypatch, capsys, tmp_path,
        {'nvml_error': 'Driver/library version mismatch', 'nvml_library_version': '570.195'},
        driver_version='NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.172.08  Release Build  '
                       '(dvs-builder@U16-I3-B03-4-3)  Tue Jul  8 17:33:39 UTC 2025\n')
    assert facts['gpus'] == [] and facts['gpu_count'] == 0
    assert facts['gpu_error'] == {'kind': 'driver_library_mismatch',
                                  'message': 'Failed to initialize NVML: Driver/library version mismatch',
                                  'rc': 18, 'nvml_library_version': '570.195', 'kernel_module_version': '570.172.08'}
    assert 'Driver/library version mismatch' in warnings


# ---- the host's lock, taken in the same call ------------------------------------------------------

def _facts_call(monkeypatch, capsys, tmp_path, args, check=False):
    monkeypatch.setattr(host_facts, 'PROC', str(tmp_path / 'proc'))
    monkeypatch.setattr(host_facts, 'RUN', str(tmp_path / 'run'))
    monkeypatch.setattr(host_facts, 'ETC', str(tmp_path / 'etc'))
    if check:
        args = dict(args, _ansible_check_mode=True)
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exc:
            host_facts.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


def test_the_lock_is_taken_before_the_reads_and_a_held_one_fails_naming_the_holder(monkeypatch, capsys, tmp_path):
    from ansible_collections.inferops.sglang.plugins.module_utils import _host_lock
    make_fake_host(tmp_path, 'systemd', ['/sbin/init'])
    path = str(tmp_path / 'lock' / 'inferops-sglang.lock')
    lock = {'run_id': 'run-a', 'controller': 'ops@ctl', 'playbook': 'inferops.sglang.site', 'path': path}
    base = {'nvidia_smi': str(tmp_path / 'none')}
    try:
        would_code, would = _facts_call(monkeypatch, capsys, tmp_path, dict(base, lock=lock), check=True)
        assert would_code == 0 and would['lock']['changed'] and 'Would take' in would['lock']['msg']
        assert not os.path.exists(path) or not _host_lock.peek(path)['held']
        assert would['ansible_facts']['inferops_sglang']['lock_run_id'] == '', 'check mode takes no lock'

        code, taken = _facts_call(monkeypatch, capsys, tmp_path, dict(base, lock=lock))
        assert code == 0 and taken['changed'] is False
        assert taken['lock']['changed'] and taken['lock']['lock']['run_id'] == 'run-a' and taken['lock']['stale'] is None
        assert 'diff' not in taken['lock'] and 'warnings' not in taken['lock'] and 'failed' not in taken['lock']
        check_shape(taken['ansible_facts']['inferops_sglang'])
        assert taken['ansible_facts']['inferops_sglang']['lock_run_id'] == 'run-a', 'the facts name the run whose lock they were read under'
        assert taken['ansible_facts']['inferops_sglang']['read_as_root'] is (os.geteuid() == 0)

        again_code, again = _facts_call(monkeypatch, capsys, tmp_path, dict(base, lock=lock))
        assert again_code == 0 and not again['lock']['changed'] and 'already' in again['lock']['msg']
        assert again['ansible_facts']['inferops_sglang']['lock_run_id'] == 'run-a'

        busy_code, busy = _facts_call(monkeypatch, capsys, tmp_path, dict(base, lock=dict(lock, run_id='run-b')))
        assert busy_code != 0 and busy['failed']
        assert 'Another run holds the lock of this host (%s): run run-a of ops@ctl (inferops.sglang.site)' % path in busy['msg']
        assert 'ansible_facts' not in busy, 'nothing is read while another run holds the host'

        held_code, held = _facts_call(monkeypatch, capsys, tmp_path, dict(base, lock=dict(lock, run_id='run-b')), check=True)
        assert held_code == 0 and not held['lock']['changed'] and 'Would wait' in held['lock']['msg']
        assert 'held by run run-a' in json.dumps(held.get('warnings')), held

        bad_code, bad = _facts_call(monkeypatch, capsys, tmp_path, dict(base, lock=dict(lock, wait=-1)))
        assert bad_code != 0 and 'lock.wait must be 0 or more' in bad['msg']
    finally:
        assert _host_lock.release(path, 'run-a')['result'] in ('released', 'not_held', 'expired')

    code, unlocked = _facts_call(monkeypatch, capsys, tmp_path, base)
    assert code == 0 and 'lock' not in unlocked and unlocked['ansible_facts']['inferops_sglang']['lock_run_id'] == ''


def test_take_reports_as_host_lock_did(tmp_path):
    """_host_lock.take: one home for what each outcome of taking the lock reports (host_lock, host_facts)."""
    from ansible_collections.inferops.sglang.plugins.module_utils import _host_lock
    path = str(tmp_path / 'inferops-sglang.lock')
    would = _host_lock.take(path, 'run-a', 'ops@ctl', 'inferops.sglang.site', 0, 60, check_mode=True)
    assert would['changed'] and would['lock'] == {} and would['diff']['after'] == 'locked by run run-a\n'
    taken = _host_lock.take(path, 'run-a', 'ops@ctl', 'inferops.sglang.site', 0, 60)
    try:
        assert taken['changed'] and not taken['failed'] and taken['waited'] == 0.0
        assert taken['msg'].startswith('Took the lock (holder pid %d, for at most 60 s).' % taken['lock']['holder_pid'])
        busy = _host_lock.take(path, 'run-b', '', '', 0, 60)
        assert busy['failed'] and not busy['changed'] and busy['lock']['run_id'] == 'run-a'
        assert 'raise inferops_sglang_lock_wait' in busy['msg']
        ours = _host_lock.take(path, 'run-a', '', '', 0, 60, check_mode=True)
        assert not ours['changed'] and ours['msg'] == 'This run holds the lock already.'
    finally:
        _host_lock.release(path, 'run-a')
