# -*- coding: utf-8 -*-
# Unit tests for plugins/module_utils/_host.py (pure parsers and readers of host_facts).

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils._host import (
    COMPUTE_APPS_FIELDS,
    PYTHON_PROBE,
    QUERY_GPU_FIELDS,
    choose_cuda_home,
    classify_link,
    cron_running,
    detect_container,
    detect_init,
    find_supervisor_configs,
    find_unit_files,
    inspect_cuda_toolkits,
    interconnect_from_matrix,
    interconnect_from_nvlink_status,
    list_processes,
    map_socket_inodes,
    parse_compute_apps,
    parse_cuda_version_from_smi,
    parse_driver_version_from_smi,
    parse_nvcc_version,
    parse_nvlink_status,
    parse_proc_net_tcp,
    parse_python_probe,
    parse_query_gpu,
    parse_supervisor_programs,
    parse_systemctl_show,
    parse_systemctl_version,
    parse_topology,
    sitecustomize_error,
    smi_failure_message,
    supervisord_running,
    version_key,
)

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'fixtures', 'nvidia-smi')


def fixture(*parts):
    with open(os.path.join(FIXTURES, *parts)) as f:
        return f.read()


def as_noheader_nounits(text):
    """What --format=csv,noheader,nounits prints, from a --format=csv capture."""
    lines = text.splitlines()[1:]
    return '\n'.join(line.replace(' MiB', '') for line in lines) + '\n'


def write(path, content='', mode=None):
    d = os.path.dirname(str(path))
    if not os.path.isdir(d):
        os.makedirs(d)
    with open(str(path), 'w') as f:
        f.write(content)
    if mode is not None:
        os.chmod(str(path), mode)


# ---------------------------------------------------------------------------------------------
# nvidia-smi --query-gpu

H200X2_GPUS = [
    {'index': 0, 'name': 'NVIDIA H200', 'uuid': 'GPU-264e02ee-af98-d893-82ae-4ec1afc463e1',
     'memory_total_mib': 143771, 'memory_used_mib': 0, 'compute_cap': '9.0',
     'driver_version': '580.159.04', 'pci_bus_id': '00000000:00:06.0'},
    {'index': 1, 'name': 'NVIDIA H200', 'uuid': 'GPU-4f3f9924-c31b-11ce-1a00-cd855da98952',
     'memory_total_mib': 143771, 'memory_used_mib': 0, 'compute_cap': '9.0',
     'driver_version': '580.159.04', 'pci_bus_id': '00000000:00:07.0'},
]


@pytest.mark.parametrize('text', [
    fixture('h200x2', 'query_gpu.csv'),                        # captured with --format=csv
    as_noheader_nounits(fixture('h200x2', 'query_gpu.csv')),   # what the module asks for
], ids=['csv', 'csv-noheader-nounits'])
def test_parse_query_gpu_h200x2(text):
    assert parse_query_gpu(text) == H200X2_GPUS


@pytest.mark.parametrize('text,uuid', [
    (fixture('h200x1', 'query_gpu.csv'), 'GPU-a3db0ea1-7909-ad2d-a809-7f539ba0b6b8'),
    (as_noheader_nounits(fixture('h200x1', 'query_gpu.csv')), 'GPU-a3db0ea1-7909-ad2d-a809-7f539ba0b6b8'),
    # captured with the module's own query on another H200 machine
    (fixture('h200x1', 'query_gpu_noheader_nounits.csv'), 'GPU-670faebe-c50b-7daf-514b-17dcc7f02c95'),
], ids=['csv', 'csv-noheader-nounits', 'real-noheader-nounits'])
def test_parse_query_gpu_h200x1(text, uuid):
    gpus = parse_query_gpu(text)
    assert len(gpus) == 1
    assert gpus[0]['index'] == 0
    assert gpus[0]['uuid'] == uuid
    assert gpus[0]['memory_total_mib'] == 143771
    assert isinstance(gpus[0]['memory_total_mib'], int)
    assert gpus[0]['compute_cap'] == '9.0'


@pytest.mark.parametrize('text', [
    '',
    fixture('no_gpu', 'query_gpu_no_devices.txt'),
    fixture('no_gpu', 'driver_failed.txt'),
    'Field "compute_cap" is not a valid field to query.\n',
], ids=['empty', 'no-devices', 'driver-failed', 'bad-field'])
def test_parse_query_gpu_no_gpu(text):
    assert parse_query_gpu(text) == []


def test_parse_query_gpu_na_values_and_comma_in_name():
    text = ('1, NVIDIA RTX PRO 6000 Blackwell, Server Edition, GPU-x1, 97887, [N/A], 12.0, 580.82.07, 00000000:41:00.0\n'
            '0, NVIDIA RTX PRO 6000 Blackwell Server Edition, GPU-x0, 97887, 3, 12.0, 580.82.07, 00000000:01:00.0\n')
    gpus = parse_query_gpu(text)
    assert [g['index'] for g in gpus] == [0, 1]  # sorted by index
    assert gpus[1]['name'] == 'NVIDIA RTX PRO 6000 Blackwell, Server Edition'
    assert gpus[1]['memory_used_mib'] is None
    assert gpus[1]['pci_bus_id'] == '00000000:41:00.0'
    assert gpus[0]['memory_used_mib'] == 3


def test_parse_query_gpu_without_compute_cap():
    fields = [f for f in QUERY_GPU_FIELDS if f != 'compute_cap']
    text = '0, Tesla V100-SXM2-16GB, GPU-v, 16160, 0, 470.57.02, 00000000:00:1E.0\n'
    gpus = parse_query_gpu(text, fields)
    assert gpus[0]['compute_cap'] is None
    assert gpus[0]['driver_version'] == '470.57.02'
    assert gpus[0]['memory_total_mib'] == 16160


# ---------------------------------------------------------------------------------------------
# nvidia-smi topo -m  (field case C09)

def test_topology_h200x2_nvlink():
    matrix, interconnect = parse_topology(fixture('h200x2', 'topo_m.txt'))
    assert matrix == {'GPU0': {'GPU1': 'NV18'}, 'GPU1': {'GPU0': 'NV18'}}
    assert interconnect == 'nvlink'


def with_escapes(text):
    """The header line as nvidia-smi really prints it: underlined with terminal escapes."""
    lines = text.split('\n')
    lines[0] = lines[0].replace('GPU0', '\x1b[4mGPU0', 1) + '\x1b[0m'
    return '\n'.join(lines)


@pytest.mark.parametrize('name', ['topo_m.txt', 'topo_m_raw.txt'], ids=['cleaned', 'raw-with-escapes'])
def test_topology_h200x1_single(name):
    matrix, interconnect = parse_topology(fixture('h200x1', name))
    assert matrix == {'GPU0': {}}
    assert interconnect == 'single'


@pytest.mark.parametrize('name', ['h200x1', 'h200x2'])
def test_topology_raw_fixture_has_escapes(name):
    # captured on the lent H200 machines: nvidia-smi underlines the header even into a file
    assert '\x1b[4m' in fixture(name, 'topo_m_raw.txt')


def test_topology_h200x2_raw():
    assert parse_topology(fixture('h200x2', 'topo_m_raw.txt')) == (
        {'GPU0': {'GPU1': 'NV18'}, 'GPU1': {'GPU0': 'NV18'}}, 'nvlink')


@pytest.mark.parametrize('name,expected', [('h200x2', 'nvlink'), ('pcie8', 'pcie'), ('mixed8', 'mixed')])
def test_topology_with_escapes(name, expected):
    matrix, interconnect = parse_topology(with_escapes(fixture(name, 'topo_m.txt')))
    assert interconnect == expected
    assert 'GPU0' in matrix and len(matrix) == (2 if name == 'h200x2' else 8)


def test_topology_pcie8_reference_host_shape():
    matrix, interconnect = parse_topology(fixture('pcie8', 'topo_m.txt'))
    assert interconnect == 'pcie'
    assert sorted(matrix) == ['GPU%d' % i for i in range(8)]
    for gpu, row in matrix.items():
        assert sorted(row) == sorted(g for g in matrix if g != gpu)  # no self, no NIC columns
        assert set(row.values()) <= {'PIX', 'PXB', 'PHB', 'NODE', 'SYS'}
    assert matrix['GPU0']['GPU1'] == 'PIX'
    assert matrix['GPU0']['GPU2'] == 'PXB'
    assert matrix['GPU0']['GPU4'] == 'SYS'
    assert matrix['GPU7']['GPU4'] == 'NODE'
    assert 'NIC0' not in matrix


def test_topology_mixed8():
    matrix, interconnect = parse_topology(fixture('mixed8', 'topo_m.txt'))
    assert interconnect == 'mixed'
    assert len(matrix) == 8
    assert matrix['GPU0']['GPU1'] == 'NV4'
    assert matrix['GPU6']['GPU7'] == 'NV4'
    assert matrix['GPU0']['GPU2'] == 'PHB'
    assert matrix['GPU3']['GPU4'] == 'SYS'


def test_topology_nvswitch8():
    matrix, interconnect = parse_topology(fixture('nvswitch8', 'topo_m.txt'))
    assert interconnect == 'nvlink'
    assert all(v == 'NV18' for row in matrix.values() for v in row.values())
    assert sum(len(row) for row in matrix.values()) == 8 * 7


@pytest.mark.parametrize('text', [
    '',
    fixture('no_gpu', 'topo_m_empty.txt'),
    fixture('no_gpu', 'driver_failed.txt'),
], ids=['empty', 'legend-only', 'driver-failed'])
def test_topology_no_gpu(text):
    assert parse_topology(text) == ({}, 'none')


@pytest.mark.parametrize('name,expected', [
    ('h200x1', 'single'),
    ('h200x1/topo_m_raw.txt', 'single'),
    ('h200x2', 'nvlink'),
    ('h200x2/topo_m_raw.txt', 'nvlink'),
    ('pcie8', 'pcie'),
    ('mixed8', 'mixed'),
    ('nvswitch8', 'nvlink'),
])
def test_topology_fixture_interconnect(name, expected):
    parts = name.split('/') if '/' in name else [name, 'topo_m.txt']
    assert parse_topology(fixture(*parts))[1] == expected


def test_topology_space_separated_and_legacy_soc():
    # older drivers: spaces instead of tabs, SOC instead of SYS, no NUMA columns
    text = ('        GPU0    GPU1    GPU2    CPU Affinity\n'
            'GPU0     X      PHB     SOC     0-11\n'
            'GPU1    PHB      X      SOC     0-11\n'
            'GPU2    SOC     SOC      X      12-23\n')
    matrix, interconnect = parse_topology(text)
    assert interconnect == 'pcie'
    assert matrix['GPU2'] == {'GPU0': 'SOC', 'GPU1': 'SOC'}


def test_topology_truncated_matrix_is_not_nvlink():
    # a header naming 4 GPUs but only two rows: only the GPUs with rows count
    text = '\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\nGPU0\t X \tNV8\tSYS\tSYS\t0-7\nGPU1\tNV8\t X \tSYS\tSYS\t0-7\n'
    matrix, interconnect = parse_topology(text)
    assert matrix == {'GPU0': {'GPU1': 'NV8'}, 'GPU1': {'GPU0': 'NV8'}}
    assert interconnect == 'nvlink'


@pytest.mark.parametrize('cell,kind', [
    ('NV18', 'nvlink'), ('NV1', 'nvlink'), (' X ', 'self'), ('PIX', 'pcie'), ('PXB', 'pcie'),
    ('PHB', 'pcie'), ('NODE', 'pcie'), ('SYS', 'pcie'), ('SOC', 'pcie'), ('NV', None), ('', None),
])
def test_classify_link(cell, kind):
    assert classify_link(cell) == kind


@pytest.mark.parametrize('matrix,expected', [
    ({}, 'none'),
    ({'GPU0': {}}, 'single'),
    ({'GPU0': {'GPU1': 'NV2'}, 'GPU1': {'GPU0': 'NV2'}}, 'nvlink'),
    ({'GPU0': {'GPU1': 'PIX'}, 'GPU1': {'GPU0': 'PIX'}}, 'pcie'),
    ({'GPU0': {'GPU1': 'NV2', 'GPU2': 'SYS'}, 'GPU1': {'GPU0': 'NV2', 'GPU2': 'SYS'},
      'GPU2': {'GPU0': 'SYS', 'GPU1': 'SYS'}}, 'mixed'),
])
def test_interconnect_from_matrix(matrix, expected):
    assert interconnect_from_matrix(matrix) == expected


# ---------------------------------------------------------------------------------------------
# nvidia-smi nvlink -s (fallback when topo -m is unusable)

def test_parse_nvlink_status_fixture():
    assert parse_nvlink_status(fixture('h200x2', 'nvlink_status.txt')) == {0: 18, 1: 18}


def test_parse_nvlink_status_inactive():
    text = ('GPU 0: NVIDIA RTX A6000 (UUID: GPU-a)\n\t Link 0: <inactive>\n\t Link 1: <inactive>\n'
            'GPU 1: NVIDIA RTX A6000 (UUID: GPU-b)\n')
    assert parse_nvlink_status(text) == {0: 0, 1: 0}


@pytest.mark.parametrize('status,count,expected', [
    ({}, 0, 'none'),
    ({0: 0}, 1, 'single'),
    ({0: 18, 1: 18}, 2, 'nvlink'),
    ({0: 0, 1: 0}, 2, 'pcie'),
    ({i: 18 for i in range(8)}, 8, 'mixed'),
    ({0: 4, 1: 4, 2: 0, 3: 0}, 4, 'mixed'),
])
def test_interconnect_from_nvlink_status(status, count, expected):
    assert interconnect_from_nvlink_status(status, count) == expected


# ---------------------------------------------------------------------------------------------
# compute apps, CUDA / driver version, failure messages

def test_parse_compute_apps_fixture():
    expected = [
        {'gpu_uuid': 'GPU-264e02ee-af98-d893-82ae-4ec1afc463e1', 'pid': 568, 'process_name': 'python3',
         'used_memory_mib': 4334},
        {'gpu_uuid': 'GPU-4f3f9924-c31b-11ce-1a00-cd855da98952', 'pid': 568, 'process_name': 'python3',
         'used_memory_mib': 4334},
    ]
    text = fixture('h200x2', 'compute_apps_busy.csv')
    assert parse_compute_apps(text) == expected
    assert parse_compute_apps(as_noheader_nounits(text)) == expected


@pytest.mark.parametrize('text,expected', [
    ('', []),
    ('No running processes found\n', []),
    ('GPU-a, 4242, /root/ml-env/bin/python3, [N/A]\n',
     [{'gpu_uuid': 'GPU-a', 'pid': 4242, 'process_name': '/root/ml-env/bin/python3', 'used_memory_mib': None}]),
    ('GPU-a, 7, sglang::scheduler_TP0, x, 100\n',
     [{'gpu_uuid': 'GPU-a', 'pid': 7, 'process_name': 'sglang::scheduler_TP0, x', 'used_memory_mib': 100}]),
])
def test_parse_compute_apps_cases(text, expected):
    assert parse_compute_apps(text) == expected


def test_compute_apps_fields():
    assert COMPUTE_APPS_FIELDS == ('gpu_uuid', 'pid', 'process_name', 'used_gpu_memory')


@pytest.mark.parametrize('text,expected', [
    (fixture('h200x2', 'nvidia_smi_busy.txt'), '13.0'),
    (fixture('h200x2', 'nvidia_smi_q.xml'), '13.0'),
    ('Driver Version                            : 550.54.15\nCUDA Version                              : 12.4\n', '12.4'),
    (fixture('no_gpu', 'driver_failed.txt'), None),
    ('', None),
], ids=['plain-header', 'q-xml', 'q-text', 'driver-failed', 'empty'])
def test_parse_cuda_version_from_smi(text, expected):
    assert parse_cuda_version_from_smi(text) == expected


@pytest.mark.parametrize('text,expected', [
    (fixture('h200x2', 'nvidia_smi_busy.txt'), '580.159.04'),
    (fixture('h200x2', 'nvidia_smi_q.xml'), '580.159.04'),
    ('Driver Version                            : 550.54.15\n', '550.54.15'),
    ('', None),
])
def test_parse_driver_version_from_smi(text, expected):
    assert parse_driver_version_from_smi(text) == expected


def test_smi_failure_message():
    assert smi_failure_message(fixture('no_gpu', 'driver_failed.txt')).startswith(
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver")
    assert smi_failure_message('\n\n') is None


# ---------------------------------------------------------------------------------------------
# init system (field case C11)

def make_proc(root, pid=1, comm=None, cmdline=None, exe=None, environ=None, cgroup=None):
    base = root / 'proc' / str(pid)
    base.mkdir(parents=True, exist_ok=True)
    if comm is not None:
        write(base / 'comm', comm + '\n')
    if cmdline is not None:
        write(base / 'cmdline', '\0'.join(cmdline) + '\0')
    if exe is not None:
        os.symlink(exe, str(base / 'exe'))
    if environ is not None:
        write(base / 'environ', '\0'.join(environ) + '\0')
    if cgroup is not None:
        write(base / 'cgroup', cgroup)
    return str(root / 'proc')


def make_run(root, systemd_system=False, systemd_installed=False):
    run = root / 'run'
    run.mkdir(exist_ok=True)
    if systemd_installed:
        (run / 'systemd').mkdir(exist_ok=True)
    if systemd_system:
        (run / 'systemd' / 'system').mkdir(parents=True, exist_ok=True)
    return str(run)


@pytest.mark.parametrize('comm,cmdline,exe,booted,expected', [
    ('systemd', ['/sbin/init'], None, True, 'systemd'),
    ('systemd', ['/lib/systemd/systemd', '--system'], '/usr/lib/systemd/systemd', True, 'systemd'),
    ('init', ['/sbin/init'], '/usr/lib/systemd/systemd', True, 'systemd'),
    # C11: systemd installed, a stale /run/systemd/system even, but PID 1 is sleep or bash
    ('sleep', ['sleep', 'infinity'], '/usr/bin/sleep', True, 'other'),
    ('bash', ['/bin/bash'], '/usr/bin/bash', True, 'other'),
    ('sleep', ['sleep', 'infinity'], None, False, 'other'),
    ('bash', ['bash', '-c', 'sleep 1d'], None, False, 'other'),
    # PID 1 is systemd but /run/systemd/system is missing: not booted with systemd (sd_booted)
    ('systemd', ['/sbin/init'], None, False, 'other'),
    ('tini', ['/usr/bin/tini', '--', 'python3'], None, False, 'other'),
    ('process_api', ['/process_api', '--firecracker-init'], None, False, 'other'),
], ids=['systemd', 'systemd-exe', 'init-link-to-systemd', 'C11-sleep-stale-run', 'C11-bash-stale-run',
        'C11-sleep', 'C11-bash', 'systemd-not-booted', 'tini', 'other-init'])
def test_detect_init(tmp_path, comm, cmdline, exe, booted, expected):
    proc = make_proc(tmp_path, comm=comm, cmdline=cmdline, exe=exe)
    run = make_run(tmp_path, systemd_system=booted, systemd_installed=True)
    init = detect_init(proc, run)
    assert init == {'system': expected, 'pid1': comm, 'pid1_cmdline': cmdline, 'systemd_booted': booted}


def test_detect_init_unreadable_pid1(tmp_path):
    (tmp_path / 'proc').mkdir()
    run = make_run(tmp_path, systemd_system=True)
    init = detect_init(str(tmp_path / 'proc'), run)
    assert init == {'system': 'other', 'pid1': None, 'pid1_cmdline': [], 'systemd_booted': True}


def test_detect_init_this_machine():
    init = detect_init('/proc', '/run')
    assert init['system'] in ('systemd', 'other')
    with open('/proc/1/comm') as f:
        comm = f.read().strip()
    assert init['pid1'] == comm
    assert init['systemd_booted'] == os.path.isdir('/run/systemd/system')
    if comm != 'systemd' or not os.path.isdir('/run/systemd/system'):
        assert init['system'] == 'other'


# ---------------------------------------------------------------------------------------------
# containers

@pytest.mark.parametrize('setup,expected', [
    ({}, 'none'),
    ({'dockerenv': True}, 'docker'),
    ({'containerenv': True}, 'podman'),
    ({'environ': ['PATH=/bin', 'container=lxc']}, 'lxc'),
    ({'environ': ['container=podman']}, 'podman'),
    ({'environ': ['container=systemd-nspawn']}, 'other'),
    ({'environ': ['container=oci']}, 'other'),
    ({'run_container': 'docker\n'}, 'docker'),
    ({'run_container': 'lxc\n', 'dockerenv': True}, 'lxc'),
    ({'cgroup': '12:pids:/docker/3f2a9c\n0::/docker/3f2a9c\n'}, 'docker'),
    ({'cgroup': '0::/system.slice/docker-3f2a9c.scope\n'}, 'docker'),
    ({'cgroup': '0::/machine.slice/libpod-3f2a9c.scope/container\n'}, 'podman'),
    ({'cgroup': '0::/kubepods.slice/kubepods-burstable.slice/cri-containerd-3f2a.scope\n'}, 'containerd'),
    ({'cgroup': '0::/lxc.payload.101/init.scope\n'}, 'lxc'),
    ({'cgroup': '0::/init.scope\n'}, 'none'),
    ({'cgroup': '9:name=systemd:/\n0::/\n'}, 'none'),
], ids=['none', 'dockerenv', 'containerenv', 'environ-lxc', 'environ-podman', 'environ-nspawn',
        'environ-oci', 'run-systemd-container', 'run-systemd-container-wins', 'cgroup-v1-docker',
        'cgroup-v2-docker', 'cgroup-podman', 'cgroup-containerd', 'cgroup-lxc', 'cgroup-host',
        'cgroup-ns-root'])
def test_detect_container(tmp_path, setup, expected):
    proc = make_proc(tmp_path, comm='init', environ=setup.get('environ'), cgroup=setup.get('cgroup'))
    run = make_run(tmp_path)
    root = tmp_path / 'root'
    root.mkdir()
    if setup.get('dockerenv'):
        write(root / '.dockerenv')
    if setup.get('containerenv'):
        write(tmp_path / 'run' / '.containerenv')
    if setup.get('run_container'):
        write(tmp_path / 'run' / 'systemd' / 'container', setup['run_container'])
    assert detect_container(proc, run, str(root)) == expected


# ---------------------------------------------------------------------------------------------
# systemctl, processes, cron, supervisord

@pytest.mark.parametrize('text,expected', [
    ('systemd 255 (255.4-1ubuntu8)\n+PAM +AUDIT +SELINUX\n', 255),
    ('systemd 252 (252.38-1~deb12u1)\n+PAM\n', 252),
    ('systemd 219\n+PAM\n', 219),
    ('System has not been booted with systemd as init system (PID 1). Can\'t operate.\n', None),
    ('', None),
])
def test_parse_systemctl_version(text, expected):
    assert parse_systemctl_version(text) == expected


def test_list_processes(tmp_path):
    make_proc(tmp_path, 1, comm='sleep', cmdline=['sleep', 'infinity'])
    make_proc(tmp_path, 42, comm='cron', cmdline=['/usr/sbin/cron', '-f'])
    (tmp_path / 'proc' / '77').mkdir()  # a process that went away: no comm
    (tmp_path / 'proc' / 'net').mkdir()
    procs = list_processes(str(tmp_path / 'proc'))
    assert procs == [{'pid': 1, 'comm': 'sleep', 'cmdline': ['sleep', 'infinity']},
                     {'pid': 42, 'comm': 'cron', 'cmdline': ['/usr/sbin/cron', '-f']}]


@pytest.mark.parametrize('procs,expected', [
    ([], False),
    ([{'comm': 'cron', 'cmdline': ['/usr/sbin/cron', '-f']}], True),
    ([{'comm': 'crond', 'cmdline': ['/usr/sbin/crond', '-n']}], True),
    ([{'comm': 'busybox', 'cmdline': ['busybox', 'crond', '-f']}], True),
    ([{'comm': 'busybox', 'cmdline': ['busybox', 'sh']}], False),
    ([{'comm': 'sleep', 'cmdline': ['sleep', 'infinity']}, {'comm': 'bash', 'cmdline': ['bash']}], False),
    ([{'comm': 'croncheck', 'cmdline': ['croncheck']}], False),
])
def test_cron_running(procs, expected):
    assert cron_running(procs) is expected


@pytest.mark.parametrize('procs,expected', [
    ([{'comm': 'supervisord', 'cmdline': ['/usr/bin/python3', '/usr/bin/supervisord', '-n']}], True),
    ([{'comm': 'python3', 'cmdline': ['/usr/bin/python3', '/usr/local/bin/supervisord']}], True),
    ([{'comm': 'supervisorctl', 'cmdline': ['/usr/bin/supervisorctl', 'status']}], False),
])
def test_supervisord_running(procs, expected):
    assert supervisord_running(procs) is expected


def test_find_unit_files_and_systemctl_show(tmp_path):
    etc = tmp_path / 'etc' / 'systemd' / 'system'
    lib = tmp_path / 'lib' / 'systemd' / 'system'
    write(etc / 'sglang.service', '[Service]\n')
    write(etc / 'sglang-router.service', '[Service]\n')
    (etc / 'sglang.service.d').mkdir()
    write(etc / 'ssh.service', '[Service]\n')
    os.symlink('/dev/null', str(etc / 'sglang-old.service'))
    write(lib / 'sglang@.service', '[Service]\n')
    os.symlink(str(lib), str(tmp_path / 'usrlib'))  # /usr/lib/systemd/system as a second name
    units = find_unit_files([str(etc), str(lib), str(tmp_path / 'usrlib'), str(tmp_path / 'missing')],
                            'sglang*.service')
    assert units == [
        {'name': 'sglang-old.service', 'path': str(etc / 'sglang-old.service')},
        {'name': 'sglang-router.service', 'path': str(etc / 'sglang-router.service')},
        {'name': 'sglang.service', 'path': str(etc / 'sglang.service')},
        {'name': 'sglang@.service', 'path': str(lib / 'sglang@.service')},
    ]
    show = 'Id=sglang.service\nActiveState=active\n\nId=sglang-router.service\nActiveState=inactive\n'
    assert parse_systemctl_show(show) == [{'Id': 'sglang.service', 'ActiveState': 'active'},
                                          {'Id': 'sglang-router.service', 'ActiveState': 'inactive'}]


def test_supervisor_configs_and_programs(tmp_path):
    etc = tmp_path / 'etc'
    write(etc / 'supervisor' / 'supervisord.conf', '[supervisord]\n[include]\nfiles = /etc/supervisor/conf.d/*.conf\n')
    write(etc / 'supervisor' / 'conf.d' / 'sglang.conf',
          '[program:sglang]\ncommand=/root/ml-env/bin/python3 -m sglang.launch_server\n'
          '[program:sglang-router]\ncommand=x\n  [program:nginx]\ncommand=y\n')
    write(etc / 'supervisor' / 'conf.d' / 'notes.txt', '[program:sglang-ignored]\n')
    configs = find_supervisor_configs(str(etc))
    assert configs == [str(etc / 'supervisor' / 'supervisord.conf'), str(etc / 'supervisor' / 'conf.d' / 'sglang.conf')]
    with open(configs[1]) as f:
        assert parse_supervisor_programs(f.read(), 'sglang*') == ['sglang', 'sglang-router']
    assert parse_supervisor_programs('', 'sglang*') == []
    assert find_supervisor_configs(str(tmp_path / 'nothing')) == []


# ---------------------------------------------------------------------------------------------
# /proc/net/tcp, /proc/net/tcp6 and socket owners

TCP4 = (
    '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n'
    '   0: 0100007F:7530 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 51234 1 0000000000000000 100 0 0 10 0\n'
    '   1: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1143 1 0000000000000000 100 0 0 10 0\n'
    '   2: 0100007F:7530 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000     0        0 61234 1 0000000000000000 20 4 30 10 -1\n'
    '   3: 020200C0:C218 507100CB:0050 06 00000000:00000000 03:000016E3 00000000     0        0 0 3 0000000000000000\n'
)


def tcp6_line(sl, local, remote, state, uid, inode):
    return ('  %2d: %s %s %s 00000000:00000000 00:00000000 00000000 %5d        0 %d 1 0000000000000000 100 0 0 10 0\n'
            % (sl, local, remote, state, uid, inode))


ANY6 = '00000000000000000000000000000000:0000'
TCP6 = (
    '  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when '
    'retrnsmt   uid  timeout inode\n'
    + tcp6_line(0, '00000000000000000000000000000000:1F90', ANY6, '0A', 0, 7001)        # [::]:8080
    + tcp6_line(1, '00000000000000000000000001000000:7531', ANY6, '0A', 1000, 7002)     # [::1]:30001
    + tcp6_line(2, '0000000000000000FFFF00000100007F:7532', ANY6, '0A', 0, 7003)        # [::ffff:127.0.0.1]:30002
    + tcp6_line(3, '00000000000000000000000001000000:7531', '00000000000000000000000001000000:A3C2', '01', 1000, 7004)
)


def test_parse_proc_net_tcp_ipv4():
    assert parse_proc_net_tcp(TCP4, ipv6=False, byteorder='little') == [
        {'proto': 'tcp', 'host': '127.0.0.1', 'port': 30000, 'inode': 51234, 'pid': None},
        {'proto': 'tcp', 'host': '0.0.0.0', 'port': 22, 'inode': 1143, 'pid': None},
    ]


def test_parse_proc_net_tcp_ipv6():
    assert parse_proc_net_tcp(TCP6, ipv6=True, byteorder='little') == [
        {'proto': 'tcp6', 'host': '::', 'port': 8080, 'inode': 7001, 'pid': None},
        {'proto': 'tcp6', 'host': '::1', 'port': 30001, 'inode': 7002, 'pid': None},
        {'proto': 'tcp6', 'host': '::ffff:127.0.0.1', 'port': 30002, 'inode': 7003, 'pid': None},
    ]


def test_parse_proc_net_tcp_big_endian_host():
    line = '   0: 7F000001:7530 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 9 1\n'
    assert parse_proc_net_tcp(line, byteorder='big')[0]['host'] == '127.0.0.1'


@pytest.mark.parametrize('text', ['', 'garbage\n', TCP4.splitlines()[0] + '\n'])
def test_parse_proc_net_tcp_nothing(text):
    assert parse_proc_net_tcp(text) == []


def test_parse_proc_net_tcp_this_machine():
    with open('/proc/net/tcp') as f:
        entries = parse_proc_net_tcp(f.read())
    for entry in entries:
        assert entry['proto'] == 'tcp' and 0 < entry['port'] < 65536


def test_map_socket_inodes(tmp_path):
    for pid, links in ((1, ['/dev/null']), (300, ['socket:[51234]', 'pipe:[9]', 'socket:[7001]']),
                       (301, ['socket:[51234]']), (12, ['anon_inode:[eventfd]'])):
        fd = tmp_path / 'proc' / str(pid) / 'fd'
        fd.mkdir(parents=True)
        for i, target in enumerate(links):
            os.symlink(target, str(fd / str(i)))
    (tmp_path / 'proc' / '55').mkdir()  # no fd dir (gone, or not ours)
    proc = str(tmp_path / 'proc')
    assert map_socket_inodes(proc) == {51234: 300, 7001: 300}
    assert map_socket_inodes(proc, {51234}) == {51234: 300, 7001: 300}
    assert map_socket_inodes(proc, set()) == {}


# ---------------------------------------------------------------------------------------------
# CUDA toolkits

def make_toolkit(root, name, version=None, nvcc=True, ptxas=True, version_txt=None):
    path = root / name
    (path / 'bin').mkdir(parents=True)
    if version is not None:
        write(path / 'version.json', json.dumps({'cuda': {'name': 'CUDA SDK', 'version': version},
                                                 'cuda_nvcc': {'version': version}}))
    if version_txt is not None:
        write(path / 'version.txt', version_txt)
    if nvcc:
        write(path / 'bin' / 'nvcc', '#!/bin/sh\n', 0o755)
    if ptxas:
        write(path / 'bin' / 'ptxas', '#!/bin/sh\n', 0o755)
    return str(path)


def test_cuda_toolkits_13_and_12_4_with_link(tmp_path):
    local = tmp_path / 'usr' / 'local'
    local.mkdir(parents=True)
    cuda13 = make_toolkit(local, 'cuda-13.0', '13.0.1')
    cuda124 = make_toolkit(local, 'cuda-12.4', '12.4.1')
    os.symlink(cuda124, str(local / 'cuda'))  # /usr/local/cuda still points at the old one
    write(local / 'cuda-keyring.txt', 'not a toolkit')
    toolkits = inspect_cuda_toolkits([str(local / 'cuda'), str(local / 'cuda-*')])
    assert toolkits == [
        {'path': str(local / 'cuda'), 'realpath': cuda124, 'version': '12.4.1', 'nvcc': True, 'ptxas': True},
        {'path': cuda124, 'realpath': cuda124, 'version': '12.4.1', 'nvcc': True, 'ptxas': True},
        {'path': cuda13, 'realpath': cuda13, 'version': '13.0.1', 'nvcc': True, 'ptxas': True},
    ]
    assert choose_cuda_home(toolkits) == cuda13


def test_cuda_home_skips_toolkit_without_ptxas(tmp_path):
    local = tmp_path / 'local'
    make_toolkit(local, 'cuda-13.0', '13.0.1', ptxas=False)  # newest, but ptxas missing
    cuda124 = make_toolkit(local, 'cuda-12.4', '12.4.1')
    os.symlink(str(local / 'cuda-13.0'), str(local / 'cuda'))
    toolkits = inspect_cuda_toolkits([str(local / 'cuda'), str(local / 'cuda-*')])
    assert [t['ptxas'] for t in toolkits] == [False, True, False]
    assert choose_cuda_home(toolkits) == cuda124


def test_cuda_home_link_resolved(tmp_path):
    local = tmp_path / 'local'
    cuda13 = make_toolkit(local, 'cuda-13.0', '13.0.1')
    os.symlink(cuda13, str(local / 'cuda'))
    toolkits = inspect_cuda_toolkits([str(local / 'cuda')])
    assert choose_cuda_home(toolkits) == cuda13


def test_cuda_home_version_sources(tmp_path):
    local = tmp_path / 'local'
    old = make_toolkit(local, 'cuda-10.2', version_txt='CUDA Version 10.2.89\n')
    bare = make_toolkit(local, 'cuda-12.8')  # no version file: ask nvcc
    calls = []

    def nvcc_version(path):
        calls.append(path)
        return ('nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2025 NVIDIA Corporation\n'
                'Cuda compilation tools, release 12.8, V12.8.93\nBuild cuda_12.8.r12.8/compiler.35583870_0\n')
    toolkits = inspect_cuda_toolkits([str(local / 'cuda-*')], nvcc_version)
    assert [(t['path'], t['version']) for t in toolkits] == [(old, '10.2.89'), (bare, '12.8.93')]
    assert calls == [os.path.join(bare, 'bin', 'nvcc')]
    assert choose_cuda_home(toolkits) == bare


@pytest.mark.parametrize('toolkits,expected', [
    ([], None),
    ([{'path': '/a', 'realpath': '/a', 'version': '12.4', 'nvcc': False, 'ptxas': True}], None),
    ([{'path': '/a', 'realpath': '/a', 'version': '12.4', 'nvcc': True, 'ptxas': False}], '/a'),
    ([{'path': '/a', 'realpath': '/a', 'version': None, 'nvcc': True, 'ptxas': True},
      {'path': '/b', 'realpath': '/b', 'version': '11.8', 'nvcc': True, 'ptxas': True}], '/b'),
    ([{'path': '/u/cuda-12.10', 'realpath': '/u/cuda-12.10', 'version': '12.10', 'nvcc': True, 'ptxas': True},
      {'path': '/u/cuda-12.9', 'realpath': '/u/cuda-12.9', 'version': '12.9', 'nvcc': True, 'ptxas': True}],
     '/u/cuda-12.10'),
])
def test_choose_cuda_home_cases(toolkits, expected):
    assert choose_cuda_home(toolkits) == expected


@pytest.mark.parametrize('text,expected', [
    ('nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 13.0, V13.0.88\n', '13.0.88'),
    ('Cuda compilation tools, release 12.4, V12.4.131\nBuild cuda_12.4.r12.4/compiler.34097967_0\n', '12.4.131'),
    ('Cuda compilation tools, release 9.2\n', '9.2'),
    ('bash: nvcc: command not found\n', None),
    ('', None),
])
def test_parse_nvcc_version(text, expected):
    assert parse_nvcc_version(text) == expected


def test_version_key():
    assert version_key('12.10') > version_key('12.9')
    assert version_key(None) < version_key('1')


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
