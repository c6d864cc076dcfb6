# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of module_utils/_server_process/discovery.py, on fake /proc trees read by the real ProcFS reader
(and a smoke test on the real /proc)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import subprocess

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import _secrets
from ansible_collections.inferops.sglang.plugins.module_utils._server_process import discovery
from ansible_collections.inferops.sglang.plugins.module_utils._server_process import stop
from ansible_collections.inferops.sglang.tests.unit.plugins.module_utils import server_process_fakes as fakes

PY = fakes.PY
NET_TCP = fakes.NET_TCP
SELF = fakes.SELF
LAUNCH = fakes.LAUNCH
SPAWN = fakes.SPAWN
TRACKER = fakes.TRACKER
proc = fakes.proc
add_reference_server = fakes.add_reference_server
run = fakes.run
by_main = fakes.by_main
ignored_pids = fakes.ignored_pids


def test_discover_reference_server(proc):
    pids = add_reference_server(proc)
    proc.add(110, SPAWN, ppid=100, pgid=100)   # a spawn child not retitled yet
    found = run(proc)
    assert [s['main_pid'] for s in found.servers] == [100]
    server = found.servers[0]
    assert server['pids'] == sorted(pids + [110])
    roles = dict((m['pid'], m['role']) for m in server['members'])
    assert roles == {100: 'server', 101: 'resource_tracker', 102: 'scheduler', 103: 'scheduler',
                     104: 'detokenizer', 110: 'spawn_child'}
    assert server['module'] == 'sglang.launch_server'
    assert server['args'] == ['--model-path', '/models/m', '--tp', '2', '--port', '30000']
    assert server['executable'] == PY
    assert (server['host'], server['port'], server['tp'], server['dp'], server['pp']) == ('127.0.0.1', 30000, 2, 1, 1)
    assert server['env']['HF_TOKEN'] == _secrets.MASK and server['env']['CUDA_HOME'] == '/usr/local/cuda'
    assert server['redacted_env'] == ['HF_TOKEN']
    assert server['cwd'] == '/root' and server['user'] == 'root' and server['uid'] == 0
    assert server['gpu_devices'] == ['/dev/nvidia-uvm', '/dev/nvidia0', '/dev/nvidia1', '/dev/nvidiactl']
    assert server['cgroup'] == '/user.slice/user-0.slice/session-3.scope'
    assert server['managed'] is False and server['orphaned'] is False
    assert server['start_time'] == pytest.approx(1700000000 + 1100 / 100.0)
    assert server['uptime_seconds'] == pytest.approx(1000 - 11)
    assert server['parent'] is None and server['ppid'] == 1
    assert [s['main_pid'] for s in found.strays] == [100] and found.managed == []
    assert found.gpu_holders_unrelated == []
    # The module's own ancestor (the ansible command line mentions inferops.sglang) is protected.
    assert ignored_pids(found)[899].startswith('runs this module')


def test_discover_decoys_are_never_servers(proc):
    add_reference_server(proc)
    decoys = {
        200: ['grep', 'sglang.launch_server'],
        201: ['tail', '-f', 'sglang.log'],
        202: ['vim', '/src/sglang/python/sglang/launch_server.py'],
        203: ['python3', '-c', 'import time; time.sleep(60)', 'launch_server.py'],
        204: ['python3', '-m', 'sglang.bench_serving', '--port', '30000'],
        206: ['sglang::router'],
        207: ['/venv/bin/python3', '/venv/bin/pip', 'install', 'sglang'],
        208: ['bash', '-c', 'python3 -m sglang.launch_server --port 30001; sleep 1'],
        210: ['python3', '-m', 'sglang.bench_one_batch_server', '--model-path', '/m'],
        212: ['python3', '-m', 'sglang.srt.disaggregation.launch_lb', '--port', '8000'],
        213: ['python3', '-m', 'sglang.srt.mem_cache.flush_cache'],
    }
    for pid, argv in decoys.items():
        proc.add(pid, argv, ppid=898, pgid=pid)
    # The router's own child stays with the router.
    proc.add(215, ['sglang-router-worker'], ppid=206, pgid=206, fds=['/dev/nvidia0'])
    # The shell wrapper's child is the server; the wrapper is not.
    proc.add(209, ['python3', '-m', 'sglang.launch_server', '--port', '30001'], ppid=208, pgid=208)
    # bench_one_batch_server launches a server: the child is matched by its own argv, the client is not.
    proc.add(211, ['python3', '-m', 'sglang.launch_server', '--port', '30002'], ppid=210, pgid=210)
    found = run(proc)
    assert sorted(by_main(found)) == [100, 209, 211]
    reasons = ignored_pids(found)
    for pid in decoys:
        if pid != 203:   # its command line does not mention sglang at all: simply unrelated
            assert pid in reasons, pid
    assert 'router' in reasons[206] and 'client' in reasons[204] and 'client' in reasons[210]
    assert 'shell wrapper' in reasons[208]
    assert 'load balancer' in reasons[212] and 'runs no engine' in reasons[213]
    all_members = set(pid for s in found.servers for pid in s['pids'])
    assert not all_members & (set(decoys) | {215, 1, 898, 899, SELF})
    assert found.gpu_holders_unrelated and [h['pid'] for h in found.gpu_holders_unrelated] == [215]


def test_discover_sglang_serve_and_candidate(proc):
    proc.add(300, ['/venv/bin/python3', '/venv/bin/sglang', 'serve', '/models/m', '--port=31000', '--dp', '2'],
             ppid=1)
    proc.add(301, ['sglang::scheduler'], ppid=300, pgid=300)
    proc.add(310, ['python3', '-m', 'sglang.srt.some_server', '--port', '32000'], ppid=1)
    proc.add(311, ['sglang::scheduler_TP0'], ppid=310, pgid=310)
    proc.add(320, ['python3', '-m', 'sglang.srt.weight_cache.daemon'], ppid=1)
    proc.add(321, ['python3', '-c', 'x'], ppid=320, pgid=320)
    found = run(proc)
    servers = by_main(found)
    assert sorted(servers) == [300, 310]
    assert servers[300]['module'] == 'sglang serve'
    assert (servers[300]['port'], servers[300]['dp']) == (31000, 2)
    assert servers[310]['module'] == 'sglang.srt.some_server' and servers[310]['port'] == 32000
    assert 'runs no engine' in ignored_pids(found)[320]


def test_discover_c01_orphaned_dp_schedulers(proc):
    # Launcher (pgid 400) and controller were killed -9: the schedulers are children of PID 1 now.
    proc.add(402, ['sglang::scheduler_DP0_TP0_EP0'], ppid=1, pgid=400, fds=['/dev/nvidia0', '/dev/nvidiactl'])
    proc.add(403, ['sglang::scheduler_DP1_TP1_EP1'], ppid=1, pgid=400, fds=['/dev/nvidia1', '/dev/nvidiactl'])
    proc.add(404, TRACKER, ppid=402, pgid=400)
    found = run(proc)
    assert len(found.servers) == 1
    orphan = found.servers[0]
    assert orphan['orphaned'] is True and orphan['main_pid'] == 402
    assert orphan['pids'] == [402, 403, 404]
    assert orphan['module'] is None and orphan['port'] is None and orphan['args'] == []
    assert orphan['gpu_devices'] == ['/dev/nvidia0', '/dev/nvidia1', '/dev/nvidiactl']
    assert orphan['_roots'] == [402, 403]
    targets = stop.plan_targets(found.strays, found.identity)
    assert [(t.pid, t.term) for t in targets] == [(402, True), (403, True), (404, False)]


def test_discover_orphans_of_two_servers_form_two_groups(proc):
    # 403 holds no GPU: it has the interpreter of 402, an orphan of its group with evidence.
    proc.add(402, ['sglang::scheduler_DP0'], ppid=1, pgid=400, fds=['/dev/nvidia0'])
    proc.add(403, ['sglang::scheduler_DP1'], ppid=1, pgid=400)
    proc.add(502, ['sglang::scheduler_DP0'], ppid=1, pgid=500, fds=['/dev/nvidia1'])
    found = run(proc)
    assert [(s['main_pid'], s['pids']) for s in found.servers] == [(402, [402, 403]), (502, [502])]


@pytest.mark.parametrize('relation', ['gpu', 'pgid', 'cgroup', 'none', 'ambiguous_gpu'])
def test_discover_orphans_attach_to_live_server(proc, relation):
    cg = '0::/system.slice/run-r1.service\n'
    add_reference_server(proc, main=100, gpus=(0, 3) if relation == 'ambiguous_gpu' else (0, 1),
                         cgroup=cg if relation == 'cgroup' else '0::/\n')
    add_reference_server(proc, main=150, port=30001, gpus=(2, 3) if relation != 'ambiguous_gpu' else (3, 4))
    fds = ['/dev/nvidia3'] if relation in ('gpu', 'ambiguous_gpu') else []
    proc.add(450, ['sglang::data_parallel_controller'], ppid=1, pgid=100 if relation == 'pgid' else 450)
    proc.add(451, ['sglang::scheduler_DP1_TP0'], ppid=1, pgid=100 if relation == 'pgid' else 450, fds=fds,
             cgroup=cg if relation == 'cgroup' else '0::/\n')
    found = run(proc)
    servers = by_main(found)
    expected_owner = {'gpu': 150, 'pgid': 100, 'cgroup': 100, 'none': None, 'ambiguous_gpu': None}[relation]
    if relation == 'none':   # no GPU, no port, no live former tree: a title proves nothing
        assert sorted(servers) == [100, 150]
        assert 'without evidence' in ignored_pids(found)[450] and 'without evidence' in ignored_pids(found)[451]
    elif expected_owner is None:
        assert sorted(servers) == [100, 150, 450]
        assert servers[450]['orphaned'] and servers[450]['pids'] == [450, 451]
    else:
        assert sorted(servers) == [100, 150]
        assert {450, 451} <= set(servers[expected_owner]['pids'])
        attached = dict((m['pid'], m['attached']) for m in servers[expected_owner]['members'])
        assert attached[451].startswith('orphan (')
        assert set(servers[expected_owner]['_roots']) == {expected_owner, 450, 451}


def test_discover_titled_child_of_live_client_is_left_alone(proc):
    # An in-process engine of a benchmark client: its scheduler shares the client's process group.
    proc.add(600, ['python3', '-m', 'sglang.bench_offline_throughput', '--model-path', '/m'], ppid=898, pgid=600)
    proc.add(601, ['sglang::scheduler'], ppid=600, pgid=600, fds=['/dev/nvidia0'])
    proc.add(602, ['sglang::detokenizer'], ppid=600, pgid=600)
    found = run(proc, include_gpu_holders=True)
    assert found.servers == []
    reasons = ignored_pids(found)
    assert 'client' in reasons[600]
    assert 'live process that is not a server (pid 600' in reasons[601]
    assert [h['pid'] for h in found.gpu_holders_unrelated] == [601]


def test_discover_orphan_under_subreaper(proc):
    # Re-parented to a subreaper (systemd --user, pid 700, its own process group): still an orphan.
    proc.add(700, ['/lib/systemd/systemd', '--user'], ppid=1, pgid=700)
    proc.add(702, ['sglang::scheduler_DP0'], ppid=700, pgid=400, fds=['/dev/nvidia0'])
    found = run(proc)
    assert [(s['main_pid'], s['orphaned']) for s in found.servers] == [(702, True)]


@pytest.mark.parametrize('cgroup, managed', [
    ('0::/system.slice/sglang.service\n', True),
    ('1:name=systemd:/system.slice/sglang.service\n0::/\n', True),
    ('0::/docker/abc/system.slice/sglang.service\n', True),
    ('0::/user.slice/user-0.slice/session-3.scope\n', False),
])
def test_discover_managed(proc, cgroup, managed):
    add_reference_server(proc, main=100, cgroup=cgroup)
    add_reference_server(proc, main=150, port=30001, gpus=(2, 3))
    found = run(proc)
    assert by_main(found)[100]['managed'] is managed
    assert [s['main_pid'] for s in found.strays] == ([150] if managed else [100, 150])
    assert [s['main_pid'] for s in found.managed] == ([100] if managed else [])


def test_discover_managed_orphans_never_join_stray_server(proc):
    add_reference_server(proc, main=150, port=30001, gpus=(2, 3))
    proc.add(451, ['sglang::scheduler_TP1'], ppid=1, pgid=450, fds=['/dev/nvidia3'],
             cgroup='0::/system.slice/sglang.service\n')
    found = run(proc)
    summary = [(s['main_pid'], s['managed'], s['orphaned']) for s in found.servers]
    assert summary == [(150, False, False), (451, True, True)]


def test_discover_gpu_holders(proc):
    cg = '0::/system.slice/docker-abc.scope\n'
    add_reference_server(proc, main=100, cgroup=cg)
    # C02, through the tree: a non-sglang child of a scheduler holding a GPU.
    proc.add(120, ['python3', '-c', 'import time; f = open("/dev/nvidia0"); time.sleep(1e9)'], ppid=102, pgid=100,
             cgroup=cg, fds=['/dev/nvidia0'])
    # Outside the tree, same specific cgroup: joins the stray server, with its own child.
    proc.add(130, ['python3', 'helper.py'], ppid=1, pgid=130, cgroup=cg, fds=['/dev/nvidia1'])
    proc.add(131, ['sleep', '100'], ppid=130, pgid=130, cgroup=cg)
    # Outside the tree, the process group of a dead launcher that orphans of a stray group share.
    proc.add(402, ['sglang::scheduler_DP0'], ppid=1, pgid=400, fds=['/dev/nvidia4'])
    proc.add(405, ['python3', 'worker.py'], ppid=1, pgid=400, fds=['/dev/nvidia4'])
    # Unrelated holders: same session cgroup as everyone, another user's job; the managed unit's holder.
    proc.add(140, ['python3', 'train.py', '--token', 'abc'], ppid=898, pgid=140, uid=1000,
             cgroup='0::/user.slice/user-1000.slice/session-9.scope\n', fds=['/dev/nvidia5'])
    proc.add(141, ['nvidia-persistenced'], ppid=1, cgroup='0::/system.slice/nvidia-persistenced.service\n',
             fds=['/dev/nvidiactl'])
    proc.add(142, ['python3', 'x.py'], ppid=1, cgroup='0::/system.slice/sglang.service\n', fds=['/dev/nvidia6'])
    # A process group led by a live non-member (a non-interactive script): no relation.
    proc.add(150, ['bash', 'start.sh'], ppid=1, pgid=150)
    proc.add(151, ['python3', 'other.py'], ppid=150, pgid=150, fds=['/dev/nvidia7'])
    found = run(proc)
    servers = by_main(found)
    assert sorted(servers) == [100, 402]
    members = dict((m['pid'], m) for m in servers[100]['members'])
    assert {120, 130, 131} <= set(members)
    assert members[120]['role'] == 'child' and members[120]['attached'] is None
    assert members[130]['role'] == 'gpu_holder' and members[130]['attached'] == 'GPU holder (same cgroup)'
    assert members[131]['attached'] == 'GPU holder (same cgroup)'
    assert 130 in servers[100]['_roots']
    assert servers[402]['pids'] == [402, 405]
    assert dict((m['pid'], m['attached']) for m in servers[402]['members'])[405] == 'GPU holder (same process group)'
    unrelated = dict((h['pid'], h) for h in found.gpu_holders_unrelated)
    assert sorted(unrelated) == [140, 141, 151]
    assert unrelated[140]['user'] == str(1000) or unrelated[140]['user']
    assert unrelated[140]['argv'] == ['python3', 'train.py', '--token', _secrets.MASK]
    assert unrelated[140]['gpu_devices'] == ['/dev/nvidia5']


def test_discover_without_gpu_holders(proc):
    cg = '0::/system.slice/docker-abc.scope\n'
    add_reference_server(proc, main=100, cgroup=cg)
    proc.add(130, ['python3', 'helper.py'], ppid=1, pgid=130, cgroup=cg, fds=['/dev/nvidia1'])
    found = run(proc, include_gpu_holders=False)
    assert by_main(found)[100]['pids'] == [100, 101, 102, 103, 104]
    assert found.gpu_holders_unrelated == []
    # The devices of members are still reported.
    assert '/dev/nvidia0' in by_main(found)[100]['gpu_devices']


def test_discover_exclude_pids(proc):
    add_reference_server(proc, main=100)
    add_reference_server(proc, main=150, port=30001, gpus=(2, 3))
    found = run(proc, exclude_pids=[150, 103, 99999])
    servers = by_main(found)
    assert sorted(servers) == [100]
    assert 103 not in servers[100]['pids']
    assert ignored_pids(found)[150] == 'excluded (exclude_pids)'


def test_discover_never_own_tree(proc):
    # The module runs (somehow) inside a server's tree: that server is left alone entirely.
    proc.add(800, [PY, '-m', 'sglang.launch_server', '--port', '30005'], ppid=1)
    proc.add(801, ['sglang::scheduler'], ppid=800, pgid=800)
    proc.add(802, ['bash'], ppid=800, pgid=800)
    proc.add(803, ['python3', 'AnsiballZ_server_process.py'], ppid=802, pgid=800)
    proc.add(804, ['sleep', '1'], ppid=803, pgid=800)
    found = run(proc, self_pid=803)
    assert found.servers == []
    assert ignored_pids(found)[800].startswith('runs this module')
    assert {800, 802, 803, 804, 1} <= found.protected


def test_discover_port_filter(proc):
    add_reference_server(proc, main=100, port=30000)
    add_reference_server(proc, main=150, port=30001, gpus=(2, 3))
    proc.add(402, ['sglang::scheduler_DP0'], ppid=1, pgid=400, fds=['/dev/nvidia5'])
    found = run(proc, port=30001)
    assert sorted(by_main(found)) == [150, 402]
    assert 'port 30000, not on port 30001' in ignored_pids(found)[100]


def test_discover_config_file_port(proc, tmp_path):
    config = tmp_path / 'server.yaml'
    config.write_text('port: 31500\ntp-size: 4\n')
    proc.add(100, [PY, '-m', 'sglang.launch_server', '--config', 'server.yaml', '--tp', '2'], ppid=1,
             cwd=str(tmp_path))
    found = run(proc, port=31500)
    server = found.servers[0]
    assert (server['port'], server['tp']) == (31500, 2)


def test_discover_secret_flags_redacted(proc):
    add_reference_server(proc, main=100, extra_args=['--api-key', 'sk-live-1', '--admin-api-key=zz-admin-zz'])
    server = run(proc).servers[0]
    assert server['argv'][-3:] == ['--api-key', _secrets.MASK, '--admin-api-key=' + _secrets.MASK]
    assert server['args'][-3:] == ['--api-key', _secrets.MASK, '--admin-api-key=' + _secrets.MASK]
    assert server['redacted_args'] == ['--api-key', '--admin-api-key']
    assert 'sk-live-1' not in repr(server) and 'zz-admin-zz' not in repr(server)


def test_discover_listeners(proc):
    add_reference_server(proc, main=100, port=30000)
    (proc.root / 'net' / 'tcp').write_text(NET_TCP + '\n')
    os.symlink('socket:[111]', str(proc.root / '100' / 'fd' / '50'))
    proc.add(160, ['nginx: worker'], ppid=1, fds=['socket:[222]'])
    found = run(proc, port=30000)
    assert found.listeners == [{'pid': 100, 'title': ' '.join(LAUNCH), 'argv': LAUNCH, 'server_main_pid': 100,
                                'managed': False}]
    found = run(proc, port=30001)
    assert [(entry['pid'], entry['server_main_pid']) for entry in found.listeners] == [(160, None)]
    assert run(proc).listeners == []


def test_discover_tolerates_zombies_kernel_threads_and_vanished(proc):
    add_reference_server(proc, main=100)
    proc.add(170, ['sglang::scheduler_TP0'], ppid=1, pgid=170, state='Z')     # zombie: gone
    proc.add(171, ['sglang::scheduler_TP0'], ppid=1, pgid=171)
    (proc.root / '171' / 'cmdline').unlink()                                      # vanished mid-scan
    (proc.root / '172').mkdir()                                                   # vanished: nothing left
    os.unlink(str(proc.root / '103' / 'environ'))
    os.unlink(str(proc.root / '100' / 'environ'))                               # main's details vanish
    found = run(proc)
    assert [s['main_pid'] for s in found.servers] == [100]
    assert found.servers[0]['env'] == {}
    assert 2 not in found.servers[0]['pids']


def test_discover_real_proc_smoke():
    # The real /proc: this test process is protected and nothing crashes.
    found = discovery.discover(include_gpu_holders=True, port=1)
    assert os.getpid() in found.protected
    assert all(os.getpid() not in s['pids'] for s in found.servers)


def test_discover_client_and_router_holders_never_attached(proc):
    cg = '0::/system.slice/docker-abc.scope\n'   # one container: the stray server, a benchmark, a router
    add_reference_server(proc, main=100, cgroup=cg)
    proc.add(600, ['python3', '-m', 'sglang.bench_offline_throughput'], ppid=1, pgid=600, cgroup=cg)
    proc.add(601, ['sglang::scheduler'], ppid=600, pgid=600, cgroup=cg, fds=['/dev/nvidia2'])
    proc.add(602, ['python3', 'kernel-helper.py'], ppid=601, pgid=600, cgroup=cg, fds=['/dev/nvidia2'])
    proc.add(700, ['sglang::router'], ppid=1, pgid=700, cgroup=cg, fds=['/dev/nvidiactl'])
    proc.add(800, ['python3', 'notebook.py'], ppid=1, pgid=800, cgroup=cg, fds=['/dev/nvidia3'])
    found = run(proc, exclude_pids=[800])
    assert by_main(found)[100]['pids'] == [100, 101, 102, 103, 104]
    assert [h['pid'] for h in found.gpu_holders_unrelated] == [601, 602, 700, 800]


def test_discover_races_with_short_lived_processes():
    # Processes appear and vanish while the scan runs: every reader must tolerate it.
    churn = subprocess.Popen(['bash', '-c', 'for i in $(seq 400); do /bin/true & done; wait'])
    try:
        for _scan in range(15):
            found = discovery.discover(include_gpu_holders=True, port=1)
            assert os.getpid() in found.protected
    finally:
        churn.wait()


# ------------------------------------------------------------------------------------------------
# C15: a server under the collection's supervisord is managed, with no option saying so
# ------------------------------------------------------------------------------------------------

def add_supervised_server(proc, supervisord=50, main=100, program='sglang', socket=fakes.SUPERVISOR_SOCKET):
    """The collection's supervisord program: the wrapper execs the server, so supervisord is its parent and
    its process group leader is the server (supervisord's setpgrp)."""
    return add_reference_server(proc, main=main, ppid=supervisord, env=fakes.supervised_env(program, socket))


def test_c15_supervisord_program_is_managed_with_defaults(proc):
    """C15: with the defaults (unit sglang.service, no exclude_pids), the collection's supervisord program and
    its schedulers are managed; the hand-started server beside it is the only stray."""
    fakes.add_supervisord(proc, 50)
    managed = add_supervised_server(proc, 50, main=100)
    add_reference_server(proc, main=150, port=30001, gpus=(2, 3))
    found = run(proc)
    servers = by_main(found)
    assert servers[100]['managed'] is True and servers[100]['pids'] == managed
    assert servers[100]['managed_by'] == {'manager': 'supervisord', 'supervisord_pid': 50, 'program': 'sglang',
                                          'unit': None}
    assert [s['main_pid'] for s in found.strays] == [150]
    assert servers[150]['managed_by'] is None
    assert 50 not in [p for s in found.servers for p in s['pids']]


def test_c15_systemd_unit_reports_its_manager(proc):
    """C15: managed_by names the systemd unit too."""
    add_reference_server(proc, main=100, cgroup='0::/system.slice/sglang.service\n')
    assert by_main(run(proc))[100]['managed_by'] == {'manager': 'systemd', 'unit': 'sglang.service',
                                                     'supervisord_pid': None, 'program': None}


@pytest.mark.parametrize('supervisord_argv, socket, parent', [
    # Another supervisord (the distribution's, its own socket): not the collection's.
    (['/usr/bin/python3', '/usr/bin/supervisord', '-c', '/etc/supervisor/supervisord.conf'],
     '/var/run/supervisor.sock', 50),
    # The collection's marker in the environment, but the parent is a shell, not supervisord.
    (['/bin/bash'], fakes.SUPERVISOR_SOCKET, 50),
    # A copied environment, started by hand (parent PID 1).
    (None, fakes.SUPERVISOR_SOCKET, 1),
])
def test_c15_other_supervisors_and_copied_markers_are_strays(proc, supervisord_argv, socket, parent):
    """C15: only the collection's supervisord makes a server managed; a copied environment proves nothing."""
    if supervisord_argv is not None:
        name = supervisord_argv[1] if len(supervisord_argv) > 1 else supervisord_argv[0]
        proc.add(50, supervisord_argv, comm=os.path.basename(name))
    add_supervised_server(proc, parent, main=100, socket=socket)
    found = run(proc)
    assert [s['main_pid'] for s in found.strays] == [100] and found.managed == []


def test_c15_orphans_of_the_supervised_program_are_managed(proc):
    """C15: a worker of the supervised program re-parented to PID 1 keeps the program's process group: managed
    and attached to it; orphans of a program instance that is gone (another process group) are strays."""
    fakes.add_supervisord(proc, 50)
    add_supervised_server(proc, 50, main=100, program='sglang')
    proc.add(110, ['sglang::scheduler_DP1_TP1'], ppid=1, pgid=100, fds=['/dev/nvidia5'],
             env=fakes.supervised_env())
    proc.add(410, ['sglang::scheduler_DP1_TP1'], ppid=1, pgid=400, fds=['/dev/nvidia6'],
             env=fakes.supervised_env())
    found = run(proc)
    servers = by_main(found)
    assert 110 in servers[100]['pids'] and servers[100]['managed'] is True
    assert [(s['main_pid'], s['orphaned']) for s in found.strays] == [(410, True)]


def test_c15_gpu_holder_under_supervisord_never_joins_a_stray(proc):
    """C15: a GPU holder started by the collection's supervisord never joins a stray server (and, like a holder in
    the unit, is not listed as unrelated either: it is managed)."""
    fakes.add_supervisord(proc, 50)
    add_reference_server(proc, main=150, port=30001, gpus=(2, 3), cgroup='0::/docker/abc\n')
    proc.add(160, ['python3', 'sidecar.py'], ppid=50, pgid=150, fds=['/dev/nvidia2'], cgroup='0::/docker/abc\n',
             env=fakes.supervised_env('sidecar'))
    found = run(proc)
    assert 160 not in by_main(found)[150]['pids']
    assert found.gpu_holders_unrelated == []


def test_discover_says_when_the_environment_cannot_be_read(proc):
    """C24: root without CAP_SYS_PTRACE cannot read another user's /proc/PID/environ; the entry must say so
    (env_readable false) instead of passing an empty environment off as the server's, which adoption would copy."""
    fakes.add_reference_server(proc, main=100)
    fakes.add_reference_server(proc, main=200, port=30001, gpus=(2,), env={'LANG': 'C'})
    os.remove(str(proc.root / '100' / 'environ'))   # what a read refused with EACCES looks like to the reader
    servers = dict((s['main_pid'], s) for s in run(proc).servers)
    assert servers[100]['env_readable'] is False and servers[100]['env'] == {}
    assert servers[200]['env_readable'] is True and servers[200]['env'] == {'LANG': 'C'}


@pytest.mark.parametrize('config_text, managed', [
    ('[unix_http_server]\nfile=/run/inferops-sglang-supervisor.sock\nchmod=0700\n', True),
    ('[unix_http_server]\nfile = /run/supervisor.sock ; the distribution\'s\n', False),
    (None, False),                               # no such file
])
def test_c15_c24_program_of_another_user_judged_by_its_supervisords_configuration(proc, tmp_path, config_text, managed):
    """C15 with C24: the program runs as another user and root without CAP_SYS_PTRACE cannot read its environment;
    the parent supervisord's -c file (root's, readable) names the collection's socket, or the server is a stray."""
    conf = tmp_path / 'supervisord.conf'
    if config_text is not None:
        conf.write_text(config_text)
    fakes.add_supervisord(proc, 50, argv=fakes.SUPERVISORD[:2] + ['-c', str(conf)])
    add_supervised_server(proc, 50, main=100)
    os.remove(str(proc.root / '100' / 'environ'))
    server = by_main(run(proc))[100]
    assert server['managed'] is managed and server['env_readable'] is False
    if managed:
        assert server['managed_by'] == {'manager': 'supervisord', 'supervisord_pid': 50, 'program': '', 'unit': None}


# ------------------------------------------------------------------------------------------------
# Proof of identity: /proc/PID/exe, evidence for orphans, other containers (field cases)
# ------------------------------------------------------------------------------------------------

DOCKER_ID = '4f1c0e7b9a2d4b6e8f0a1c3e5d7b9f1a2c4e6d8b0a1f3e5c7d9b1a3c5e7f9d1b'


def test_non_python_process_with_an_sglang_title_is_not_a_stray(proc):
    # exec -a sglang::scheduler_TP0 sleep 1000 - even holding a GPU device
    proc.add(300, ['sglang::scheduler_TP0', '1000'], comm='sleep', exe='/usr/bin/sleep', fds=['/dev/nvidia0'])
    found = run(proc)
    assert found.servers == [] and found.unproven == []
    assert ignored_pids(found)[300].startswith('not a Python process (its executable is /usr/bin/sleep)')


def test_shell_with_a_python_argv0_is_not_a_server(proc):
    # exec -a /usr/bin/python3 bash -m sglang.launch_server --port 31000 (bash runs a script of that name)
    proc.add(310, ['/usr/bin/python3', '-m', 'sglang.launch_server', '--port', '31000'], comm='bash',
             exe='/usr/bin/bash')
    proc.add(311, ['sleep', '1000'], ppid=310, pgid=310, exe='/usr/bin/sleep')
    found = run(proc, port=31000)
    assert found.servers == []
    assert 'not a Python process' in ignored_pids(found)[310]


def test_unreadable_executable_is_unproven_and_never_stopped(proc):
    add_reference_server(proc, main=100)
    proc.add(320, LAUNCH[:-1] + ['30001'], uid=1000, exe_denied=True)
    proc.add(322, ['sglang::scheduler_TP0'], ppid=1, pgid=400, exe_denied=True, fds=['/dev/nvidia4'])
    found = run(proc)
    assert [s['main_pid'] for s in found.servers] == [100]
    unproven = dict((u['pid'], u['reason']) for u in found.unproven)
    assert sorted(unproven) == [320, 322]
    assert 'EACCES' in unproven[320] and 'CAP_SYS_PTRACE' in unproven[320]
    assert 320 not in ignored_pids(found) and 320 not in found.identity


@pytest.mark.parametrize('how', ['pid_namespace', 'docker_cgroup', 'docker_unit_inside'])
def test_process_of_another_container_is_foreign(proc, how):
    # Another container runs python3 -m sglang.launch_server --port 31000 --tp 2 (maybe as sglang.service inside).
    cgroup = {'pid_namespace': '0::/\n',
              'docker_cgroup': '0::/system.slice/docker-%s.scope\n' % DOCKER_ID,
              'docker_unit_inside': '0::/docker/%s/system.slice/sglang.service\n' % DOCKER_ID}[how]
    pidns = 'pid:[4026532401]' if how == 'pid_namespace' else fakes.HOST_PIDNS
    argv = [PY, '-m', 'sglang.launch_server', '--port', '31000', '--tp', '2']
    proc.add(700, argv, cgroup=cgroup, pidns=pidns, ppid=650)
    proc.add(650, ['/usr/bin/containerd-shim-runc-v2', '-id', DOCKER_ID], exe='/usr/bin/containerd-shim-runc-v2')
    for rank in (0, 1):
        proc.add(701 + rank, ['sglang::scheduler_TP%d' % rank], ppid=700, pgid=700, cgroup=cgroup, pidns=pidns,
                 fds=['/dev/nvidiactl', '/dev/nvidia%d' % (2 + rank)])
    add_reference_server(proc, main=100)
    found = run(proc, include_gpu_holders=True)
    assert [s['main_pid'] for s in found.servers] == [100]
    assert found.managed == [] and [s['main_pid'] for s in found.strays] == [100]
    assert len(found.foreign) == 1
    foreign = found.foreign[0]
    assert (foreign['pid'], foreign['pids'], foreign['port']) == (700, [700, 701, 702], 31000)
    assert foreign['gpus'] == ['/dev/nvidia2', '/dev/nvidia3']
    if how == 'pid_namespace':
        assert foreign['reason'].startswith('another PID namespace') and foreign['container_id'] is None
    else:
        assert (foreign['runtime'], foreign['container_id']) == ('docker', DOCKER_ID)
    assert not set(foreign['pids']) & set(found.identity)
    assert not set(h['pid'] for h in found.gpu_holders_unrelated) & set(found.identity)
    targets = stop.plan_targets(found.strays, found.identity)
    assert not set(t.pid for t in targets) & {700, 701, 702}


def test_foreign_holds_port_only_in_this_network_namespace(proc):
    # A container with the host's network: its server's listening socket is in this /proc/net/tcp (port 30000).
    proc.add(700, [PY, '-m', 'sglang.launch_server', '--port', '30000'], pidns='pid:[4026532401]',
             fds=['socket:[111]'])
    proc.add(710, [PY, '-m', 'sglang.launch_server', '--port', '30001'], pidns='pid:[4026532402]',
             fds=['socket:[999]'])
    (proc.root / 'net' / 'tcp').write_text(NET_TCP)
    found = run(proc)
    holds = dict((f['pid'], f['holds_port']) for f in found.foreign)
    assert holds == {700: True, 710: False}


def test_server_in_our_own_container_is_not_foreign(proc):
    # The module runs in container X (with its own systemd); the server runs in X's sglang.service: managed.
    own = '0::/docker/%s/system.slice/ssh.service\n' % DOCKER_ID
    (proc.root / str(SELF) / 'cgroup').write_text(own)
    add_reference_server(proc, main=100, cgroup='0::/docker/%s/system.slice/sglang.service\n' % DOCKER_ID)
    found = run(proc)
    assert found.foreign == [] and [s['main_pid'] for s in found.managed] == [100]


def test_orphaned_scheduler_with_python_and_a_gpu_is_a_stray(proc):
    proc.add(402, ['sglang::scheduler_TP0'], ppid=1, pgid=400, fds=['/dev/nvidia0'])
    found = run(proc)
    assert [(s['main_pid'], s['orphaned']) for s in found.strays] == [(402, True)]


def test_orphaned_scheduler_with_python_and_no_evidence_is_left_alone(proc):
    proc.add(402, ['sglang::scheduler_TP0'], ppid=1, pgid=400)
    found = run(proc)
    assert found.servers == [] and found.identity == {}
    assert 'without evidence' in ignored_pids(found)[402]


def test_orphaned_scheduler_holding_the_port_is_a_stray(proc):
    (proc.root / 'net' / 'tcp').write_text(NET_TCP)
    proc.add(402, ['sglang::scheduler_TP0'], ppid=1, pgid=400, fds=['socket:[111]'])
    found = run(proc, port=30000, include_gpu_holders=False)
    assert [s['main_pid'] for s in found.strays] == [402]
