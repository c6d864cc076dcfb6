# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of module_utils/_nvidia_smi.py against captured nvidia-smi output (tests/unit/fixtures/nvidia-smi)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils._nvidia_smi import (
    COMPUTE_APPS_FIELDS,
    QUERY_GPU_FIELDS,
    classify_link,
    interconnect_from_matrix,
    interconnect_from_nvlink_status,
    parse_compute_apps,
    parse_cuda_version_from_smi,
    parse_driver_version_from_smi,
    parse_gpu_memory,
    parse_nvlink_status,
    parse_query_gpu,
    parse_topology,
    smi_failure_message,
)
from ansible_collections.inferops.sglang.plugins.module_utils._server_process.release import RELEASE_APPS_FIELDS


FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'fixtures', 'nvidia-smi')


def fixture(*parts):
    with open(os.path.join(FIXTURES, *parts)) as f:
        return f.read()


def as_noheader_nounits(text):
    """What --format=csv,noheader,nounits prints, from a --format=csv capture."""
    lines = text.splitlines()[1:]
    return '\n'.join(line.replace(' MiB', '') for line in lines) + '\n'


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


# The columns the GPU release wait of server_process asks for (pid, used_gpu_memory; index, memory.used).
# The h200x2 fixtures (/work/shared/fixtures/nvidia-smi/h200x2): one python process holding 4 GiB per GPU.
COMPUTE_APPS_BUSY_CSV = (
    'gpu_uuid, pid, process_name, used_gpu_memory [MiB]\n'
    'GPU-264e02ee-af98-d893-82ae-4ec1afc463e1, 568, python3, 4334 MiB\n'
    'GPU-4f3f9924-c31b-11ce-1a00-cd855da98952, 568, python3, 4334 MiB\n')
MEMORY_BUSY_CSV = '0, 4343, 143771\n1, 4343, 143771\n'


@pytest.mark.parametrize('text, expected', [
    ('568, 4334\n568, 4334\n', [{'pid': 568, 'used_memory_mib': 4334}] * 2),
    ('568, 4334 MiB\n', [{'pid': 568, 'used_memory_mib': 4334}]),
    ('pid, used_gpu_memory [MiB]\n568, 4334 MiB\n', [{'pid': 568, 'used_memory_mib': 4334}]),
    ('568, [N/A]\n', [{'pid': 568, 'used_memory_mib': None}]),
    ('No running processes found\n', []),
    ('', []),
])
def test_parse_compute_apps_pid_and_memory(text, expected):
    assert parse_compute_apps(text, ('pid', 'used_gpu_memory')) == expected


def test_parse_compute_apps_pid_and_memory_rejects_uuid_column():
    # The fixture has gpu_uuid first: not a pid, so every row is skipped rather than misread.
    assert parse_compute_apps(COMPUTE_APPS_BUSY_CSV, RELEASE_APPS_FIELDS) == []


def test_parse_compute_apps_release_fields():
    assert parse_compute_apps('568, 4334, GPU-264e02ee\n', RELEASE_APPS_FIELDS) == [
        {'pid': 568, 'used_memory_mib': 4334, 'gpu_uuid': 'GPU-264e02ee'}]


@pytest.mark.parametrize('text, expected', [
    (MEMORY_BUSY_CSV, [{'index': 0, 'memory_used_mib': 4343}, {'index': 1, 'memory_used_mib': 4343}]),
    ('0, 0\n1, 12 MiB\n', [{'index': 0, 'memory_used_mib': 0}, {'index': 1, 'memory_used_mib': 12}]),
    ('index, memory.used [MiB]\n0, [Not Supported]\n', [{'index': 0, 'memory_used_mib': None}]),
    ('', []),
])
def test_parse_gpu_memory(text, expected):
    assert parse_gpu_memory(text) == expected


# ---------------------------------------------------------------------------------------------
# MIG (C16), lost GPUs (C17), NVML failures (C18), and the rule gpu_blockers

from ansible_collections.inferops.sglang.plugins.module_utils import _gpu_health, _nvidia_smi  # noqa: E402

MIG_LIST = (
    'GPU 0: NVIDIA H200 (UUID: GPU-264e02ee-af98-d893-82ae-4ec1afc463e1)\n'
    '  MIG 3g.71gb     Device  0: (UUID: MIG-6ac5e0b3-0b1c-5e1f-9a0e-7d2f6c1b2a01)\n'
    '  MIG 3g.71gb     Device  1: (UUID: MIG-7bd6f1c4-1c2d-6f20-ab1f-8e3a7d2c3b12)\n'
    'GPU 1: NVIDIA H200 (UUID: GPU-4f3f9924-c31b-11ce-1a00-cd855da98952)\n'
    '  MIG 1g.18gb     Device  0: (UUID: MIG-GPU-4f3f9924-c31b-11ce-1a00-cd855da98952/7/0)\n'
    'GPU 2: NVIDIA H200 (UUID: GPU-00000000-0000-0000-0000-000000000002)\n'
)


def test_c16_mig_modes_and_devices():
    """C16: per GPU MIG mode from --query-gpu=index,mig.mode.current, MIG devices from -L."""
    modes = _nvidia_smi.parse_mig_modes('0, Enabled\n1, Enabled\n2, Disabled\n3, [N/A]\n')
    assert modes == {0: 'Enabled', 1: 'Enabled', 2: 'Disabled', 3: None}
    assert _nvidia_smi.parse_mig_modes('index, mig.mode.current\n0, Enabled\n') == {0: 'Enabled'}
    # another column layout (a stand-in that answers every query alike) is not taken for a mode
    assert _nvidia_smi.parse_mig_modes('0, NVIDIA H200, GPU-1, 143771\n') == {0: None}
    devices = _nvidia_smi.parse_gpu_list(MIG_LIST)
    assert devices[0] == [{'profile': '3g.71gb', 'device': 0, 'uuid': 'MIG-6ac5e0b3-0b1c-5e1f-9a0e-7d2f6c1b2a01'},
                          {'profile': '3g.71gb', 'device': 1, 'uuid': 'MIG-7bd6f1c4-1c2d-6f20-ab1f-8e3a7d2c3b12'}]
    assert devices[1] == [{'profile': '1g.18gb', 'device': 0, 'uuid': 'MIG-GPU-4f3f9924-c31b-11ce-1a00-cd855da98952/7/0'}]
    assert devices[2] == []


LOST_QUERY = (
    'Unable to determine the device handle for GPU 0000:BA:00.0: Unknown Error\n'
    + ''.join('%d, NVIDIA H200, GPU-%d, 143771, 0, 9.0, 570.172.08, 00000000:%s:00.0\n' % (i, i, bus)
              for i, bus in enumerate(('18', '2A', '3A', '5D', '9A', 'AB', 'DB')))
)


def test_c17_lost_gpu_in_query_output():
    """C17: the 'Unable to determine the device handle' line names the lost GPU; the 7 rows still parse."""
    assert len(_nvidia_smi.parse_query_gpu(LOST_QUERY)) == 7
    assert _nvidia_smi.parse_lost_gpus(LOST_QUERY) == [{'pci_bus_id': '0000:BA:00.0', 'error': 'Unknown Error'}]
    # the spelling without a space, and the plain table's line
    assert _nvidia_smi.parse_lost_gpus('Unable to determine the device handle for GPU0000:ba:00.0: Unknown Error\n'
                                       'GPU 00000000:BA:00.0: GPU is lost. Reboot the system to recover this GPU\n') == [
        {'pci_bus_id': '0000:BA:00.0', 'error': 'Unknown Error'}]


def test_c17_lost_gpus_compared_with_the_driver():
    """C17: a GPU the kernel driver lists under /proc/driver/nvidia/gpus without an nvidia-smi row is lost too."""
    listed = ['00000000:18:00.0', '00000000:2A:00.0']
    assert _nvidia_smi.lost_gpus(listed, [], ['0000:18:00.0', '0000:2a:00.0']) == []
    lost = _nvidia_smi.lost_gpus(listed, [{'pci_bus_id': '0000:BA:00.0', 'error': 'Unknown Error'}],
                                 ['0000:18:00.0', '0000:2a:00.0', '0000:ba:00.0', '0000:cb:00.0'])
    assert lost == [
        {'pci_bus_id': '0000:BA:00.0', 'error': 'Unknown Error', 'source': 'nvidia-smi'},
        {'pci_bus_id': '0000:CB:00.0', 'error': 'known to the driver, but nvidia-smi lists no such GPU', 'source': 'driver'},
    ]


MISMATCH = 'Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 570.195\n'
PROC_VERSION = ('NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.172.08  Release Build  '
                '(dvs-builder@U16-I3-B03-4-3)  Tue Jul  8 17:33:39 UTC 2025\nGCC version:  gcc version 13.3.0\n')


def test_c18_driver_library_mismatch_is_a_structured_error():
    """C18: the NVML library version from nvidia-smi, the kernel module's from /proc/driver/nvidia/version."""
    module = _nvidia_smi.parse_kernel_module_version(PROC_VERSION)
    assert module == '570.172.08'
    assert _nvidia_smi.parse_kernel_module_version(
        'NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n') == '550.54.15'
    assert _nvidia_smi.parse_kernel_module_version('') is None
    assert _nvidia_smi.parse_gpu_error(MISMATCH, 18, module) == {
        'kind': 'driver_library_mismatch', 'message': 'Failed to initialize NVML: Driver/library version mismatch',
        'rc': 18, 'nvml_library_version': '570.195', 'kernel_module_version': '570.172.08'}


@pytest.mark.parametrize('text, rc, kind', [
    ('Failed to initialize NVML: Unknown Error\n', 255, 'nvml_init_failed'),
    ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest "
     "NVIDIA driver is installed and running.\n", 9, 'driver_unreachable'),
    ('Segmentation fault\n', 139, 'failed'),
    ('No devices were found\n', 6, None),
    (MISMATCH, 0, None),
])
def test_gpu_error_kinds(text, rc, kind):
    error = _nvidia_smi.parse_gpu_error(text, rc)
    assert (error or {}).get('kind') == kind


def test_normalize_bus_id():
    assert _nvidia_smi.normalize_bus_id('00000000:ba:00.0') == '0000:BA:00.0'
    assert _nvidia_smi.normalize_bus_id('0000:BA:00.0') == '0000:BA:00.0'
    assert _nvidia_smi.normalize_bus_id('not a bus id') == 'not a bus id'


def gpu_facts(count=8, mig=(), lost=(), error=None):
    gpus = [{'index': i, 'pci_bus_id': '00000000:%02X:00.0' % (0x10 * (i + 1)),
             'mig_mode': 'Enabled' if i in mig else 'Disabled', 'mig_devices': []} for i in range(count)]
    return {'gpus': gpus, 'gpu_count': count, 'lost_gpus': [{'pci_bus_id': b, 'error': 'Unknown Error',
                                                            'source': 'nvidia-smi'} for b in lost],
            'gpu_error': error}


MISMATCH_ERROR = _nvidia_smi.parse_gpu_error(MISMATCH, 18, '570.172.08')
NEVER = ('lower', 'service_require_gpus', 'tp/pp/dp')


def kinds(blockers):
    return [b['kind'] for b in blockers]


def test_healthy_host_has_no_blockers():
    assert _nvidia_smi.gpu_blockers(gpu_facts(), 8) == []
    assert _nvidia_smi.tp_unusable_reason(gpu_facts()) is None


@pytest.mark.parametrize('require', [True, False])
def test_c18_mismatch_blocks_whatever_the_gpu_check(require):
    """C18: a reboot is needed before any restart; never 'lower tp' or 'turn the check off'."""
    facts = gpu_facts(count=0, error=MISMATCH_ERROR)
    blockers = _nvidia_smi.gpu_blockers(facts, 8, require, 'service_require_gpus')
    assert kinds(blockers) == ['driver_library_mismatch']
    message = blockers[0]['message']
    assert 'a reboot is needed before any restart' in message.lower()
    assert '570.172.08' in message and '570.195' in message
    assert not any(word in message for word in NEVER)
    assert _nvidia_smi.tp_unusable_reason(facts)


@pytest.mark.parametrize('require', [True, False])
def test_c17_lost_gpu_blocks_whatever_the_gpu_check(require):
    """C17: 'GPU 0000:BA:00.0 is lost: reset or reboot', and no advice to lower tp (7 GPUs are seen, 8 needed)."""
    facts = gpu_facts(count=7, lost=['0000:BA:00.0'])
    blockers = _nvidia_smi.gpu_blockers(facts, 8, require, 'service_require_gpus')
    assert kinds(blockers) == ['lost_gpu']
    assert 'GPU 0000:BA:00.0 is lost: reset or reboot' in blockers[0]['message']
    assert not any(word in blockers[0]['message'] for word in NEVER)
    assert _nvidia_smi.tp_unusable_reason(facts) == 'GPU 0000:BA:00.0 is lost'


def test_c16_mig_refuses_more_than_one_gpu():
    """C16: tp > 1 across MIG slices is refused with 'disable MIG or run one server per slice'; tp 1 runs."""
    facts = gpu_facts(mig=range(8))
    blockers = _nvidia_smi.gpu_blockers(facts, 4, True, 'service_require_gpus')
    assert kinds(blockers) == ['mig']
    assert 'Disable MIG' in blockers[0]['message'] and 'one server per slice' in blockers[0]['message']
    assert _nvidia_smi.gpu_blockers(facts, 4, False) == blockers
    assert _nvidia_smi.gpu_blockers(facts, 1) == []
    assert _nvidia_smi.tp_unusable_reason(facts) == '8 of 8 GPUs are in MIG mode'
    # enough whole GPUs beside the MIG ones: not refused
    assert _nvidia_smi.gpu_blockers(gpu_facts(mig=[6, 7]), 4) == []


def test_gpu_count_and_other_errors_follow_the_check():
    short = _nvidia_smi.gpu_blockers(gpu_facts(count=2), 4, True, 'service_require_gpus')
    assert kinds(short) == ['gpu_count']
    assert 'needs 4 GPU(s)' in short[0]['message'] and 'service_require_gpus to false' in short[0]['message']
    assert _nvidia_smi.gpu_blockers(gpu_facts(count=2), 4, False) == []
    unreachable = _nvidia_smi.parse_gpu_error("NVIDIA-SMI has failed because it couldn't communicate with the "
                                              "NVIDIA driver.", 9)
    facts = gpu_facts(count=0, error=unreachable)
    assert kinds(_nvidia_smi.gpu_blockers(facts, 1, True)) == ['gpu_error']
    assert _nvidia_smi.gpu_blockers(facts, 1, False) == []
    assert _nvidia_smi.gpu_blockers({}, 1, False) == []
    with pytest.raises(TypeError):
        _nvidia_smi.gpu_blockers(['not facts'], 1)
    with pytest.raises(ValueError):
        _nvidia_smi.gpu_blockers({}, 'x')


# ---------------------------------------------------------------------------------------------
# GPU health from nvidia-smi -q -x (C39, C40, C41): the real H200 capture, and the same capture with one fault each

def h200_xml(**replace):
    """The captured H200 x2 XML with elements replaced: {old: new} on the first GPU's block only."""
    text = fixture('h200x2', 'nvidia_smi_q.xml')
    first, sep, rest = text.partition('</gpu>')
    for old, new in replace.items():
        assert old in first, old
        first = first.replace(old, new, 1)
    return first + sep + rest


def health_facts(xml, torch_cuda=None, manager=None):
    parsed = _gpu_health.parse_query_xml(xml)
    gpus = [{'index': str(i), 'pci_bus_id': bus} for i, bus in enumerate(sorted(parsed['gpus']))]
    _gpu_health.add_gpu_health(gpus, parsed)
    return {'gpus': gpus, 'gpu_count': len(gpus), 'lost_gpus': [], 'gpu_error': None,
            'driver_version': parsed['driver_version'], 'cuda_driver_version': parsed['cuda_version'],
            'python': {'torch_cuda_version': torch_cuda}, 'fabric_manager': manager or {}}


def test_query_xml_of_a_real_h200():
    parsed = _gpu_health.parse_query_xml(fixture('h200x2', 'nvidia_smi_q.xml'))
    assert parsed['driver_version'] == '580.159.04' and parsed['cuda_version'] == '13.0'
    assert sorted(parsed['gpus']) == ['0000:00:06.0', '0000:00:07.0']
    assert parsed['gpus']['0000:00:06.0'] == {
        'persistence_mode': 'Enabled', 'recovery_action': 'None', 'remapped_rows_pending': False,
        'remapped_rows_failure': False, 'retired_pages_pending': None, 'ecc_uncorrectable_volatile': 0,
        'fabric_state': 'Completed', 'fabric_status': 'Success'}
    facts = health_facts(fixture('h200x2', 'nvidia_smi_q.xml'), torch_cuda='13.0')
    assert _gpu_health.fabric_summary(facts['gpus']) == {'state': 'ready', 'gpus': []}
    assert _nvidia_smi.gpu_blockers(facts, 2) == []


def test_query_xml_of_a_real_h100_without_nvswitch():
    """Captured by tests/hardware/run-h200.sh on a lent H100 80GB HBM3 (driver 580.159.04): no fabric (N/A), so
    the host's fabric is 'none' and nothing blocks."""
    parsed = _gpu_health.parse_query_xml(fixture('h100x1', 'nvidia_smi_q.xml'))
    assert parsed['driver_version'] == '580.159.04' and parsed['cuda_version'] == '13.0'
    assert list(parsed['gpus'].values()) == [{
        'persistence_mode': 'Enabled', 'recovery_action': 'None', 'remapped_rows_pending': False,
        'remapped_rows_failure': False, 'retired_pages_pending': None, 'ecc_uncorrectable_volatile': 0,
        'fabric_state': None, 'fabric_status': None}]
    facts = health_facts(fixture('h100x1', 'nvidia_smi_q.xml'), torch_cuda='13.0')
    assert _gpu_health.fabric_summary(facts['gpus']) == {'state': 'none', 'gpus': []}
    assert _nvidia_smi.gpu_blockers(facts, 1) == []


@pytest.mark.parametrize('text', ['', 'Failed to initialize NVML: Unknown Error\n', '<other/>', '<nvidia_smi_log>'])
def test_query_xml_that_is_not_nvidia_smi_xml(text):
    assert _gpu_health.parse_query_xml(text) is None
    gpus = [{'index': '0', 'pci_bus_id': '00000000:00:06.0'}]
    _gpu_health.add_gpu_health(gpus, None)
    assert all(gpus[0][key] is None for key in _gpu_health.HEALTH_KEYS)
    assert _gpu_health.fabric_summary(gpus)['state'] == 'none'


def test_old_driver_xml_without_health_elements():
    """A driver before R525 prints none of fabric, gpu_recovery_action, remapped_rows: unknown, not a blocker."""
    xml = ('<nvidia_smi_log><driver_version>470.239.06</driver_version><cuda_version>11.4</cuda_version>'
           '<gpu id="00000000:3B:00.0"><ecc_errors><volatile><double_bit><total>0</total></double_bit></volatile>'
           '</ecc_errors><retired_pages><pending_retirement>No</pending_retirement></retired_pages></gpu>'
           '</nvidia_smi_log>')
    parsed = _gpu_health.parse_query_xml(xml)
    assert parsed['gpus']['0000:3B:00.0'] == {
        'persistence_mode': None, 'recovery_action': None, 'remapped_rows_pending': None,
        'remapped_rows_failure': None, 'retired_pages_pending': False, 'ecc_uncorrectable_volatile': 0,
        'fabric_state': None, 'fabric_status': None}
    assert _nvidia_smi.gpu_blockers(health_facts(xml), 1) == []


@pytest.mark.parametrize('replace, says', [
    ({'<state>Completed</state>': '<state>In Progress</state>', '<status>Success</status>': '<status>N/A</status>'},
     'GPU 0: State: In Progress'),
    ({'<status>Success</status>': '<status>Failure</status>'}, 'GPU 0: State: Completed, Status: Failure'),
    ({'<state>Completed</state>': '<state>Not Started</state>'}, 'GPU 0: State: Not Started'),
])
@pytest.mark.parametrize('require', [True, False])
def test_c39_fabric_not_ready_blocks(replace, says, require):
    """C39: Fabric In Progress (or Completed with a failure), the Fabric Manager unit inactive: refused, with what to do."""
    facts = health_facts(h200_xml(**replace), manager={'active_state': 'inactive', 'version': None})
    blockers = _nvidia_smi.gpu_blockers(facts, 2, require, 'service_require_gpus')
    assert kinds(blockers) == ['fabric']
    message = blockers[0]['message']
    assert says in message and 'nvidia-fabricmanager.service: inactive' in message
    assert 'Start nvidia-fabricmanager' in message and 'Fabric State: Completed' in message
    assert 'left as it is' in message and not any(word in message for word in NEVER)
    running = _nvidia_smi.gpu_blockers(dict(facts, fabric_manager={'active_state': 'active'}), 2)
    assert "journalctl -u nvidia-fabricmanager" in running[0]['message']


def test_every_gpu_of_a_fabric_in_progress_is_named_once():
    xml = fixture('h200x2', 'nvidia_smi_q.xml').replace('<state>Completed</state>', '<state>In Progress</state>')
    blockers = _nvidia_smi.gpu_blockers(health_facts(xml), 2)
    assert 'GPUs 0, 1: State: In Progress' in blockers[0]['message']


def test_c39_fabric_manager_of_another_version_blocks():
    facts = health_facts(fixture('h200x2', 'nvidia_smi_q.xml'), manager={'active_state': 'active', 'version': '580.65.06'})
    blockers = _nvidia_smi.gpu_blockers(facts, 2)
    assert kinds(blockers) == ['fabric']
    assert 'Fabric Manager 580.65.06 differs from the NVIDIA driver 580.159.04' in blockers[0]['message']
    same = dict(facts, fabric_manager={'active_state': 'active', 'version': '580.159.04'})
    assert _nvidia_smi.gpu_blockers(same, 2) == []


@pytest.mark.parametrize('replace, why, advice', [
    ({'<gpu_recovery_action>None</gpu_recovery_action>': '<gpu_recovery_action>Reset</gpu_recovery_action>'},
     'GPU Recovery Action: Reset', 'nvidia-smi -r -i 0'),
    ({'<gpu_recovery_action>None</gpu_recovery_action>': '<gpu_recovery_action>Reboot</gpu_recovery_action>'},
     'GPU Recovery Action: Reboot', 'reboot the host'),
    ({'<gpu_recovery_action>None</gpu_recovery_action>': '<gpu_recovery_action>Drain and Reset</gpu_recovery_action>'},
     'GPU Recovery Action: Drain and Reset', 'drain it'),
    ({'<gpu_recovery_action>None</gpu_recovery_action>': '<gpu_recovery_action>Drain P2P</gpu_recovery_action>'},
     'GPU Recovery Action: Drain P2P', 'peer-to-peer'),
    ({'<remapped_row_pending>No</remapped_row_pending>': '<remapped_row_pending>Yes</remapped_row_pending>'},
     'a row remap is pending', 'nvidia-smi -r -i 0'),
    ({'<remapped_row_failure>No</remapped_row_failure>': '<remapped_row_failure>Yes</remapped_row_failure>'},
     'a row remap failed', 'replaced'),
    ({'<dram_uncorrectable>0</dram_uncorrectable>': '<dram_uncorrectable>2</dram_uncorrectable>'},
     '2 uncorrectable ECC error(s)', 'nvidia-smi -r -i 0'),
])
@pytest.mark.parametrize('require', [True, False])
def test_c40_gpu_needing_recovery_blocks(replace, why, advice, require):
    """C40: a GPU whose recovery action is Reset (or pending remapped rows, volatile uncorrectable ECC) is refused,
    naming the GPU and what to do; only that GPU."""
    facts = health_facts(h200_xml(**replace))
    blockers = _nvidia_smi.gpu_blockers(facts, 2, require, 'service_require_gpus')
    assert kinds(blockers) == ['gpu_recovery']
    message = blockers[0]['message']
    assert message.startswith('GPU 0 (0000:00:06.0) needs recovery: ' + why)
    assert advice in message and not any(word in message for word in NEVER)


def test_aggregate_ecc_alone_does_not_block():
    """Uncorrectable errors of earlier driver loads (aggregate) were handled then; only volatile ones block."""
    text = fixture('h200x2', 'nvidia_smi_q.xml')
    aggregate = text.index('<aggregate>')
    later = text[aggregate:].replace('<dram_uncorrectable>0</dram_uncorrectable>', '<dram_uncorrectable>5</dram_uncorrectable>', 1)
    text = text[:aggregate] + later
    assert _nvidia_smi.gpu_blockers(health_facts(text), 2) == []


@pytest.mark.parametrize('torch_cuda, driver_cuda, driver, blocked', [
    ('13.0', '12.8', '570.124.06', True),      # C41
    ('12.9', '12.8', '570.124.06', False),     # minor version compatibility
    ('12.8', '13.0', '580.159.04', False),
    ('13.0', '13.0', '580.159.04', False),
    (None, '12.8', '570.124.06', False),       # no torch in the interpreter: nothing to say
    ('13.0', None, None, False),               # no GPU facts
    ('twelve', '12.8', None, False),
])
def test_c41_torch_cuda_above_the_driver(torch_cuda, driver_cuda, driver, blocked):
    message = _gpu_health.cuda_runtime_blocker(torch_cuda, driver_cuda, driver)
    assert bool(message) == blocked
    if blocked:
        assert message.startswith("torch in the server's interpreter is built for CUDA 13.0, which needs a driver "
                                  "that supports CUDA 13.x (>= 580.65.06); this host's driver 570.124.06 supports "
                                  "CUDA 12.8.")
        assert '+cu128' in message
        facts = health_facts(fixture('h200x2', 'nvidia_smi_q.xml'), torch_cuda=torch_cuda)
        facts.update(cuda_driver_version=driver_cuda, driver_version=driver)
        assert kinds(_nvidia_smi.gpu_blockers(facts, 2, False)) == ['cuda_runtime']


@pytest.mark.parametrize('text, version', [
    ('Fabric Manager version is : 580.65.06\n', '580.65.06'),
    ('Fabric Manager version is: 535.104.05', '535.104.05'),
    ('nv-fabricmanager: unknown option', None),
    ('', None),
])
def test_fabric_manager_version(text, version):
    assert _gpu_health.parse_fabric_manager_version(text) == version


KMSG = [
    '6,1201,4521033,-;NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  580.159.04',
    "3,1502,98765432,-;NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
    '3,1503,99000000,-;NVRM: Xid (PCI:0000:b7:00): 48, pid=1234, name=python3, An uncorrectable double bit error '
    '(DBE) has been detected on GPU in the framebuffer at partition 0, subpartition 0.\n SUBSYSTEM=pci',
    '4,1504,99100000,-;NVRM: Xid (PCI:0000:b7:00): 13, Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0)',
    'no separator',
]


def test_xid_events_from_kernel_log_records():
    records = [_gpu_health.parse_kmsg_record(record) for record in KMSG]
    assert records[0] == (4.521033, 'NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  580.159.04')
    assert records[-1] == (None, 'no separator')
    events = _gpu_health.parse_xid_events(records)
    assert [(e['pci_bus_id'], e['xid'], e['needs_recovery']) for e in events] == [
        ('0000:3B:00.0', 79, True), ('0000:B7:00.0', 48, True), ('0000:B7:00.0', 13, False)]
    assert events[0]['seconds'] == 98.765432 and events[0]['text'].endswith('GPU has fallen off the bus.')
    assert 'SUBSYSTEM' not in events[1]['text']
    assert _gpu_health.parse_xid_events(records, limit=1) == events[-1:]
