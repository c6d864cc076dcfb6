# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Integration tests of inferops.sglang.server_process and server_process_info.

Real process trees of the SGLang test double (tests/double, ``python -m sglang.launch_server``) are
found and stopped by the real modules, run through ``ansible localhost -c local`` with the json
callback.

Every scenario runs in a private PID namespace (``unshare --pid --fork --mount-proc --kill-child``),
like a container: /proc shows only the scenario's processes, an orphan is re-parented to the
namespace's PID 1 (the scenario runner: this file run as a script), and everything left dies with the
namespace. The modules therefore never see, let alone signal, any other process of the machine.
The runner starts the processes, runs the modules, records which pids are alive after each step and
prints one JSON report; the tests below assert on it (the exact pids stopped and left alive).

"Managed" needs a process in a systemd unit's cgroup. Without systemd, the runner creates the cgroup
``/system.slice/inferops-it-<random>.service`` in the cgroup v1 ``name=systemd`` hierarchy (or the
unified one) and moves the server there, so /proc/<pid>/cgroup reads exactly as under systemd; the
test is skipped where no writable hierarchy exists (molecule proves real units).

Run: ``pytest tests/integration/test_server_process.py`` (root, Linux; about a minute). Set
ANSIBLE_PYTHON_INTERPRETER to run the modules under another Python (3.8 or later).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid

from ansible_run import free_port

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DOUBLE = os.path.join(REPO, 'tests', 'double')
ANSIBLE = os.path.join(os.path.dirname(sys.executable), 'ansible')
CGROUP_ROOTS = ('/sys/fs/cgroup/systemd', '/sys/fs/cgroup/unified', '/sys/fs/cgroup')


def collections_path():
    if os.environ.get('ANSIBLE_COLLECTIONS_PATH'):
        return os.environ['ANSIBLE_COLLECTIONS_PATH']
    import ansible_collections.inferops.sglang.plugins.modules.server_process as module
    return os.path.abspath(os.path.join(os.path.dirname(module.__file__), '..', '..', '..', '..', '..'))


# ================================================================================================
# The scenario runner (PID 1 of a private PID namespace)
# ================================================================================================

class Host(object):
    """The processes of one scenario, and the modules run against them."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.children = []
        self.model = os.path.join(workdir, 'model')
        os.makedirs(self.model)
        with open(os.path.join(self.model, 'config.json'), 'w') as f:
            json.dump({'architectures': ['LlamaForCausalLM'], 'model_type': 'llama'}, f)
        self.state_dir = os.path.join(workdir, 'state')
        self.env = dict(os.environ)
        self.env.update({
            'PYTHONPATH': DOUBLE,
            'SGLANG_DOUBLE_REQUIRE_TOOLS': '0',
            'SGLANG_DOUBLE_LOAD_SECONDS': '0.5',
            'SGLANG_DOUBLE_WARMUP_SECONDS': '0.2',
            'SGLANG_DOUBLE_DRAIN_SECONDS': '1',
            'SGLANG_DOUBLE_STATE_DIR': self.state_dir,
            'HF_TOKEN': 'hf_integration_secret',
        })
        self.env.pop('SGLANG_DOUBLE_FAIL', None)

    # ---- processes
    def gpu_dir(self, name):
        path = os.path.join(self.workdir, 'gpu-' + name)
        if not os.path.isdir(path):
            os.makedirs(path)
        return path

    def spawn(self, argv, env=None, new_session=True, stdin=None, preexec_fn=None, cwd=None):
        p = subprocess.Popen(argv, env=env or self.env, start_new_session=new_session, stdin=stdin,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=preexec_fn,
                             cwd=cwd or self.workdir)
        self.children.append(p)
        return p

    def server_argv(self, port, tp=1, dp=1, extra=()):
        argv = [sys.executable, '-m', 'sglang.launch_server', '--model-path', self.model, '--tp', str(tp),
                '--port', str(port)]
        if dp > 1:
            argv += ['--dp-size', str(dp)]
        return argv + list(extra)

    def server_env(self, gpu, extra_env=None):
        env = dict(self.env, SGLANG_DOUBLE_GPU_DIR=self.gpu_dir(gpu))
        env.update(extra_env or {})
        return env

    def server(self, port, gpu, tp=1, dp=1, extra=(), extra_env=None, argv=None, preexec_fn=None):
        p = self.spawn(argv or self.server_argv(port, tp, dp, extra), env=self.server_env(gpu, extra_env),
                       preexec_fn=preexec_fn)
        self.wait_ready(port, p.pid)
        return p.pid

    def wait_ready(self, port, pid=None, timeout=30):
        path = os.path.join(self.state_dir, str(port), 'main.json')
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                with open(path) as f:
                    state = json.load(f)
                if state.get('phase') == 'ready':
                    return state
            except (OSError, ValueError):
                pass
            if pid is not None and not self.alive(pid):
                raise RuntimeError('server on port %d died while starting' % port)
            time.sleep(0.05)
        raise RuntimeError('server on port %d not ready after %ss' % (port, timeout))

    # ---- /proc
    @staticmethod
    def stat(pid):
        try:
            with open('/proc/%d/stat' % pid, 'rb') as f:
                data = f.read().decode('utf-8', 'replace')
        except OSError:
            return None
        rest = data[data.rfind(')') + 2:].split()
        return {'state': rest[0], 'ppid': int(rest[1]), 'pgid': int(rest[2])}

    def alive(self, pid):
        st = self.stat(pid)
        return st is not None and st['state'] not in ('Z', 'X')

    def pids(self):
        return sorted(int(n) for n in os.listdir('/proc') if n.isdigit())

    def title(self, pid):
        try:
            with open('/proc/%d/cmdline' % pid, 'rb') as f:
                return f.read().replace(b'\0', b' ').decode('utf-8', 'replace').strip()
        except OSError:
            return ''

    def tree(self, pid):
        """pid and its live descendants."""
        parents = dict((p, (self.stat(p) or {}).get('ppid')) for p in self.pids())
        found = set([pid])
        changed = True
        while changed:
            changed = False
            for child, parent in parents.items():
                if parent in found and child not in found:
                    found.add(child)
                    changed = True
        return sorted(p for p in found if self.alive(p))

    def by_title(self, prefix):
        return sorted(p for p in self.pids() if self.title(p).startswith(prefix) and self.alive(p))

    def alive_of(self, pids):
        return sorted(p for p in pids if self.alive(p))

    def reap(self):
        while True:
            try:
                pid, _status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return

    # ---- the modules
    def ansible(self, module, args, check=False, diff=False):
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_LOAD_CALLBACK_PLUGINS='1',
                   ANSIBLE_STDOUT_CALLBACK='json', ANSIBLE_LOCALHOST_WARNING='0', ANSIBLE_NOCOLOR='1',
                   ANSIBLE_INVENTORY_UNPARSED_WARNING='0',
                   ANSIBLE_PYTHON_INTERPRETER=os.environ.get('ANSIBLE_PYTHON_INTERPRETER', sys.executable))
        for name in list(env):
            if name.startswith('SGLANG_DOUBLE'):
                del env[name]
        cmd = [ANSIBLE, 'localhost', '-c', 'local', '-m', 'inferops.sglang.' + module]
        if args:  # no -a at all for the defaults ('{}' would be taken for raw parameters)
            cmd += ['-a', json.dumps(args)]
        if check:
            cmd.append('--check')
        if diff:
            cmd.append('--diff')
        started = time.time()
        proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False,
                              universal_newlines=True, timeout=240, cwd=self.workdir)
        try:
            result = json.loads(proc.stdout)['plays'][0]['tasks'][0]['hosts']['localhost']
        except (ValueError, KeyError, IndexError):
            raise RuntimeError('ansible output not understood (rc %d):\n%s\n%s'
                               % (proc.returncode, proc.stdout, proc.stderr))
        result['_seconds'] = round(time.time() - started, 2)
        self.reap()
        return result


def python_script(path, body):
    with open(path, 'w') as f:
        f.write('#!%s\n%s\n' % (sys.executable, textwrap.dedent(body)))
    os.chmod(path, 0o755)
    return path


SLEEP_FOREVER = 'import time\nwhile True:\n    time.sleep(3600)\n'


def make_decoy_package(root, server_argv, server_env_file):
    """A fake 'sglang' package with client modules (what ``python -m sglang.bench_*`` runs)."""
    pkg = os.path.join(root, 'sglang')
    os.makedirs(pkg)
    open(os.path.join(pkg, '__init__.py'), 'w').close()
    with open(os.path.join(pkg, 'bench_serving.py'), 'w') as f:
        f.write(SLEEP_FOREVER)
    with open(os.path.join(pkg, 'bench_one_batch_server.py'), 'w') as f:
        f.write(textwrap.dedent('''
            import json, subprocess, time
            # Like SGLang's bench_one_batch_server: launch a server as a child process, then benchmark it.
            with open(%r) as f:
                env = json.load(f)
            subprocess.Popen(%r, env=env)
            while True:
                time.sleep(3600)
            ''' % (server_env_file, server_argv)))
    return root


def scenario_reference(host):
    """The reference-like server (tp=2) plus two more servers, among every decoy; info, check mode
    with diff, the real stop, a second run."""
    report = {}
    p1, p2, p3, p_decoy = free_port(), free_port(), free_port(), free_port()
    main = host.server(p1, 'a', tp=2, extra=['--api-key', 'sk-integration-key'])
    report['server'] = {'main': main, 'tree': host.tree(main), 'port': p1}

    # The console script form: argv is [python, .../bin/sglang, serve, ...].
    bin_dir = os.path.join(host.workdir, 'venv', 'bin')
    os.makedirs(bin_dir)
    sglang_script = python_script(os.path.join(bin_dir, 'sglang'),
                                  "import sys\nfrom sglang.cli import main\nif __name__ == '__main__':\n"
                                  "    sys.exit(main())")
    serve_main = host.server(p3, 'c', argv=[sys.executable, sglang_script, 'serve', '--model-path', host.model,
                                            '--port', str(p3)])
    report['serve'] = {'main': serve_main, 'tree': host.tree(serve_main), 'port': p3}

    # A benchmark client that launches its own server child (bench_one_batch_server).
    env_file = os.path.join(host.workdir, 'child-env.json')
    with open(env_file, 'w') as f:
        json.dump(host.server_env('b'), f)
    decoy_pkg = make_decoy_package(os.path.join(host.workdir, 'decoys'), host.server_argv(p2), env_file)
    decoy_env = dict(host.env, PYTHONPATH=decoy_pkg)
    client = host.spawn([sys.executable, '-m', 'sglang.bench_one_batch_server', '--model-path', host.model],
                        env=decoy_env)
    host.wait_ready(p2)
    child_server = [p for p in host.tree(client.pid) if p != client.pid and
                    'sglang.launch_server' in host.title(p)]
    report['bench_child'] = {'main': child_server[0], 'tree': host.tree(child_server[0]), 'port': p2}

    log = os.path.join(host.workdir, 'sglang.log')
    open(log, 'w').close()
    fake_src = os.path.join(host.workdir, 'src', 'sglang')
    os.makedirs(fake_src)
    python_script(os.path.join(fake_src, 'launch_server.py'), SLEEP_FOREVER)
    pip = python_script(os.path.join(bin_dir, 'pip'), SLEEP_FOREVER)
    vim = python_script(os.path.join(bin_dir, 'vim'), SLEEP_FOREVER)
    listener_code = ('import socket, time\ns = socket.socket()\ns.setsockopt(socket.SOL_SOCKET, '
                     'socket.SO_REUSEADDR, 1)\ns.bind(("127.0.0.1", %d))\ns.listen(1)\ntime.sleep(3600)' % p_decoy)
    decoys = {
        'grep': host.spawn(['grep', 'sglang.launch_server'], stdin=subprocess.PIPE),
        'tail': host.spawn(['tail', '-f', log]),
        'vim': host.spawn([vim, os.path.join(fake_src, 'launch_server.py')]),
        'python_c_launch_server_py': host.spawn([sys.executable, '-c', 'import time; time.sleep(3600)',
                                                 'launch_server.py']),
        'bench_serving': host.spawn([sys.executable, '-m', 'sglang.bench_serving', '--port', str(p1)], env=decoy_env),
        'bench_one_batch_server': client,
        'router': host.spawn(['bash', '-c', 'exec -a sglang::router sleep 3600']),
        'pip_install': host.spawn([pip, 'install', 'sglang']),
        'shell_wrapper': host.spawn(['bash', '-c', 'sleep 3600; python3 -m sglang.launch_server --port 1']),
        'port_holder': host.spawn([sys.executable, '-c', listener_code]),
        'churn': host.spawn(['bash', '-c', 'while :; do sleep 0.01; done']),
    }
    time.sleep(0.3)
    report['decoys'] = dict((name, p.pid) for name, p in decoys.items())
    all_stray = sorted(report['server']['tree'] + report['serve']['tree'] + report['bench_child']['tree'])
    report['all_stray'] = all_stray

    report['info'] = host.ansible('server_process_info', {'gpu_device_glob': host.workdir + '/gpu-*/*'})
    report['info_port'] = host.ansible('server_process_info', {'port': p_decoy, 'include_gpu_holders': False})
    report['check'] = host.ansible('server_process', {'gpu_device_glob': host.workdir + '/gpu-*/*'},
                                   check=True, diff=True)
    report['alive_after_check'] = host.alive_of(all_stray)
    report['stop'] = host.ansible('server_process', {'gpu_device_glob': host.workdir + '/gpu-*/*',
                                                     'grace_period': 15, 'release_timeout': 15}, diff=True)
    report['alive_after_stop'] = host.alive_of(all_stray)
    report['decoys_alive'] = dict((name, host.alive(pid)) for name, pid in report['decoys'].items())
    report['again'] = host.ansible('server_process', {'gpu_device_glob': host.workdir + '/gpu-*/*'})
    return report


def scenario_sigterm_ignorer(host):
    """A server whose first scheduler ignores SIGTERM (SGLANG_DOUBLE_FAIL=child_ignores_sigterm)."""
    port = free_port()
    main = host.server(port, 'a', tp=2, extra_env={'SGLANG_DOUBLE_FAIL': 'child_ignores_sigterm'})
    report = {'main': main, 'tree': host.tree(main), 'ignorer': host.by_title('sglang::scheduler_TP0'),
              'tp1': host.by_title('sglang::scheduler_TP1')}
    report['stop'] = host.ansible('server_process', {'port': port, 'gpu_device_glob': host.workdir + '/gpu-*/*',
                                                     'grace_period': 1, 'kill_timeout': 10})
    report['alive_after_stop'] = host.alive_of(report['tree'])
    return report


def scenario_c01_orphans(host):
    """C01: dp=2 with dp attention; the launcher and the controller are killed -9, the schedulers
    (sglang::scheduler_DP0_TP0_EP0, sglang::scheduler_DP1_TP1_EP1) are left to PID 1 holding the GPUs."""
    port = free_port()
    extra = ['--dp-size', '2', '--enable-dp-attention', '--ep-size', '2']
    main = host.server(port, 'a', tp=2, extra=extra)
    tree = host.tree(main)
    controller = host.by_title('sglang::data_parallel_controller')
    schedulers = host.by_title('sglang::scheduler')
    report = {'main': main, 'tree': tree, 'controller': controller, 'schedulers': schedulers,
              'titles': dict((p, host.title(p)) for p in schedulers)}
    os.kill(main, signal.SIGKILL)
    for pid in controller:
        os.kill(pid, signal.SIGKILL)
    deadline = time.time() + 10
    while time.time() < deadline and (host.alive(main) or host.alive_of(controller)):
        host.reap()
        time.sleep(0.05)
    time.sleep(0.5)
    host.reap()
    orphans = sorted(p for p in host.pids() if host.alive(p) and p != 1 and
                     host.title(p).startswith('sglang::'))
    report['orphans'] = orphans
    report['orphan_ppids'] = dict((p, host.stat(p)['ppid']) for p in orphans)
    glob_ = host.workdir + '/gpu-*/*'
    report['info'] = host.ansible('server_process_info', {'port': port, 'gpu_device_glob': glob_})
    report['stop'] = host.ansible('server_process', {'port': port, 'gpu_device_glob': glob_, 'grace_period': 5})
    report['alive_after_stop'] = host.alive_of(orphans)
    # The new service can start only now that the GPUs are free: same GPU files, flock succeeds.
    new_port = free_port()
    new_main = host.server(new_port, 'a', tp=2, extra=extra)
    report['new_server_ready'] = host.alive(new_main)
    return report


def scenario_c02_gpu_holder(host):
    """C02: a stray server's child, not titled sglang, holds a GPU device file; a fake nvidia-smi
    reports the memory held until about a second after the holder is gone."""
    port = free_port()
    gpu = host.gpu_dir('a')
    holder_code = ('import time; f = open(%r, "w"); time.sleep(3600)' % os.path.join(gpu, 'nvidia5'))
    # The launcher starts a helper, then execs the server: the helper is the server's child.
    wrapper = ['bash', '-c', '%s -c %s & exec %s' % (
        sys.executable, shell_quote(holder_code), ' '.join(shell_quote(a) for a in host.server_argv(port)))]
    main = host.server(port, 'a', argv=wrapper)
    tree = host.tree(main)
    holder = [p for p in tree if 'import time; f = open(' in host.title(p)]
    # Someone else's job on another GPU, in another session: reported, never stopped.
    other_gpu = host.gpu_dir('other')
    other = host.spawn([sys.executable, '-c', 'import time; f = open(%r, "w"); time.sleep(3600)'
                        % os.path.join(other_gpu, 'nvidia6')])
    time.sleep(0.3)

    smi_state = os.path.join(host.workdir, 'smi-state.json')
    with open(smi_state, 'w') as f:
        json.dump({'pids': holder, 'released_at': None}, f)
    fake_smi = python_script(os.path.join(host.workdir, 'nvidia-smi'), '''
        import json, os, sys, time
        state_file = %r
        with open(state_file) as f:
            state = json.load(f)
        def alive(pid):
            try:
                with open('/proc/%%d/stat' %% pid) as f:
                    return f.read().rsplit(')', 1)[1].split()[0] not in ('Z', 'X')
            except OSError:
                return False
        held = [p for p in state['pids'] if alive(p)]
        if not held and state['released_at'] is None:
            state['released_at'] = time.time()
            with open(state_file, 'w') as f:
                json.dump(state, f)
        busy = bool(held) or time.time() - (state['released_at'] or 0) < 1.0
        if sys.argv[1].startswith('--query-compute-apps'):
            for p in held:
                print('%%d, 4334, GPU-0' %% p)
        elif sys.argv[1].startswith('--query-gpu'):
            print('0, %%d, GPU-0' %% (4343 if busy else 3))
            print('1, 0, GPU-1')
        else:
            sys.exit(2)
        ''' % smi_state)
    report = {'main': main, 'tree': tree, 'holder': holder, 'other': other.pid}
    glob_ = host.workdir + '/gpu-*/*'
    report['stop'] = host.ansible('server_process', {'gpu_device_glob': glob_, 'grace_period': 5,
                                                     'nvidia_smi': fake_smi, 'release_timeout': 20})
    report['alive_after_stop'] = host.alive_of(tree)
    report['other_alive'] = host.alive(other.pid)
    return report


def shell_quote(text):
    return "'" + text.replace("'", "'\"'\"'") + "'"


def kill_all_and_remove_cgroup(host, cgroup):
    """End every process of the scenario's PID namespace but its init, then remove the cgroup they were in."""
    for pid in host.pids():
        if pid != 1:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    deadline = time.time() + 10
    while time.time() < deadline:
        host.reap()
        try:
            os.rmdir(cgroup)
            break
        except OSError:
            time.sleep(0.05)


def make_unit_cgroup(unit):
    """Create <hierarchy>/system.slice/<unit> in a writable systemd-ish hierarchy; return its path."""
    for root in CGROUP_ROOTS:
        procs = os.path.join(root, 'cgroup.procs')
        if not os.path.exists(procs):
            continue
        path = os.path.join(root, 'system.slice', unit)
        try:
            os.makedirs(path)
            return path
        except OSError:
            continue
    return None


def scenario_managed(host):
    """A server in the unit's cgroup is managed and left alone; an excluded stray is left alone; the
    other stray is stopped."""
    unit = 'inferops-it-%s.service' % uuid.uuid4().hex[:8]
    cgroup = make_unit_cgroup(unit)
    report = {'unit': unit, 'cgroup': cgroup}
    if cgroup is None:
        report['skipped'] = 'no writable cgroup hierarchy'
        return report
    procs_file = os.path.join(cgroup, 'cgroup.procs')

    def enter_unit():
        with open(procs_file, 'w') as f:
            f.write(str(os.getpid()))

    try:
        managed_port, stray_port, kept_port = free_port(), free_port(), free_port()
        managed = host.server(managed_port, 'm', preexec_fn=enter_unit)
        stray = host.server(stray_port, 's')
        kept = host.server(kept_port, 'k')
        report.update(managed=host.tree(managed), stray=host.tree(stray), kept=host.tree(kept))
        with open('/proc/%d/cgroup' % managed) as f:
            report['managed_cgroup'] = f.read()
        report['stop'] = host.ansible('server_process', {
            'unit': unit, 'exclude_pids': [kept], 'gpu_device_glob': host.workdir + '/gpu-*/*', 'grace_period': 5})
        report['alive_after_stop'] = host.alive_of(report['managed'] + report['stray'] + report['kept'])
    finally:
        kill_all_and_remove_cgroup(host, cgroup)
    return report


SUPERVISOR_SOCKET = '/run/inferops-sglang-supervisor.sock'   # the collection's (roles/service/vars/main.yml)


def supervisord_conf(host, program, wrapper):
    """The essentials of roles/service/templates/supervisord.conf.j2 and supervisor-program.conf.j2."""
    return textwrap.dedent("""\
        [unix_http_server]
        file=%(socket)s
        chmod=0700

        [supervisord]
        logfile=%(dir)s/supervisord.log
        pidfile=%(dir)s/supervisord.pid
        childlogdir=%(dir)s

        [rpcinterface:supervisor]
        supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface

        [supervisorctl]
        serverurl=unix://%(socket)s

        [program:%(program)s]
        command=%(wrapper)s
        directory=%(dir)s
        autostart=true
        autorestart=unexpected
        startsecs=0
        stopsignal=TERM
        stopasgroup=false
        killasgroup=true
        """) % {'socket': SUPERVISOR_SOCKET, 'dir': host.workdir, 'program': program, 'wrapper': wrapper}


def start_supervised_server(host, program, port, tp=1):
    """The collection's supervisord (its socket path on a private /run) running the double as ``program``;
    returns (supervisord pid, config path) once the server is ready."""
    # The collection's socket path is fixed: a private /run (this namespace has its own mounts) holds it.
    run_dir = os.path.join(host.workdir, 'run')
    os.makedirs(run_dir)
    subprocess.check_call(['mount', '--bind', run_dir, '/run'])
    env = host.server_env('m')
    wrapper = os.path.join(host.workdir, '%s-run.sh' % program)
    with open(wrapper, 'w') as f:
        f.write('#!/bin/sh\n' + ''.join('export %s=%s\n' % (name, shell_quote(value)) for name, value in sorted(env.items())
                                        if name.isidentifier())
                + 'exec ' + ' '.join(shell_quote(a) for a in host.server_argv(port, tp=tp)) + '\n')
    os.chmod(wrapper, 0o755)
    conf = os.path.join(host.workdir, 'supervisord.conf')
    with open(conf, 'w') as f:
        f.write(supervisord_conf(host, program, wrapper))
    supervisord = os.path.join(os.path.dirname(sys.executable), 'supervisord')
    subprocess.check_call([sys.executable, supervisord, '-c', conf], cwd=host.workdir)   # daemonises
    host.wait_ready(port)
    with open(os.path.join(host.workdir, 'supervisord.pid')) as f:
        return int(f.read().strip()), conf


def scenario_c15_supervisord(host):
    """C15: the collection's supervisord runs the double as its program, a stray double runs beside it; the
    modules, with their defaults, see the program as managed and stop only the stray."""
    managed_port, stray_port = free_port(), free_port()
    supervisord_pid, dummy = start_supervised_server(host, 'sglang-it', managed_port)
    report = {'supervisord': supervisord_pid, 'managed': [p for p in host.tree(supervisord_pid) if p != supervisord_pid]}
    stray = host.server(stray_port, 's')
    report['stray'] = host.tree(stray)
    report['info'] = host.ansible('server_process_info', {})
    report['facts'] = host.ansible('host_facts', {})
    report['stop'] = host.ansible('server_process', {})
    report['alive_after_stop'] = host.alive_of(report['managed'] + report['stray'] + [supervisord_pid])
    return report


def scenario_c25_degraded(host):
    """C25: a tp 2 server under the collection's supervisord loses sglang::scheduler_TP1 (kill -9); the gate that
    checks the unchanged server counts the schedulers and fails at once, not after its budget."""
    port = free_port()
    supervisord_pid, conf = start_supervised_server(host, 'sglang-it', port, tp=2)
    gate = {'port': port, 'manager': 'supervisord', 'service': 'sglang-it', 'supervisor_config': conf,
            'supervisorctl': os.path.join(os.path.dirname(sys.executable), 'supervisorctl'),
            'schedulers': 2, 'smoke_requests': 1, 'budget': 600, 'round_seconds': 60}
    report = {'healthy': host.ansible('server_health', gate)}
    schedulers = host.by_title('sglang::scheduler_TP1')
    os.kill(schedulers[0], signal.SIGKILL)
    host.reap()
    time.sleep(0.5)
    report['degraded'] = host.ansible('server_health', gate)
    report['main_alive'] = bool(host.by_title('sglang::scheduler_TP0'))
    return report


def scenario_stuck(host):
    """A scheduler that SIGKILL cannot end: frozen in a cgroup v1 freezer (state D, in the refrigerator), it
    keeps its GPU device file open, as a process stuck in the GPU driver does."""
    freezer_root = '/sys/fs/cgroup/freezer'
    if not os.path.exists(os.path.join(freezer_root, 'cgroup.procs')):
        return {'skipped': 'no cgroup v1 freezer hierarchy'}
    cgroup = os.path.join(freezer_root, 'inferops-it-%s' % uuid.uuid4().hex[:8])
    os.makedirs(cgroup)
    report = {}
    try:
        main = host.server(free_port(), 'x')
        report['tree'] = host.tree(main)
        report['stuck'] = [p for p in report['tree'] if host.title(p).startswith('sglang::scheduler')]
        with open(os.path.join(cgroup, 'cgroup.procs'), 'w') as f:
            f.write(str(report['stuck'][0]))
        with open(os.path.join(cgroup, 'freezer.state'), 'w') as f:
            f.write('FROZEN')
        report['device'] = os.path.join(host.gpu_dir('x'), 'nvidia0')
        report['stop'] = host.ansible('server_process', {'gpu_device_glob': host.workdir + '/gpu-*/*',
                                                         'grace_period': 1, 'kill_timeout': 1})
        report['alive_after_stop'] = host.alive_of(report['tree'])
    finally:
        with open(os.path.join(cgroup, 'freezer.state'), 'w') as f:
            f.write('THAWED')
        kill_all_and_remove_cgroup(host, cgroup)
    return report


def scenario_impostors(host):
    """Processes that only look like SGLang (field case): a sleep retitled sglang::scheduler_TP0 holding a "GPU"
    file, and a bash whose argv reads python3 -m sglang.launch_server (bash -m runs a script of that name)."""
    port = free_port()
    gpu_file = os.path.join(host.gpu_dir('a'), 'nvidia0')
    retitled = host.spawn(['bash', '-c', 'exec 3>%s; exec -a sglang::scheduler_TP0 sleep 1000' % shell_quote(gpu_file)])
    script_dir = os.path.join(host.workdir, 'impostor')
    os.makedirs(script_dir)
    with open(os.path.join(script_dir, 'sglang.launch_server'), 'w') as f:
        f.write('sleep 1000\n')
    fake_server = host.spawn(['bash', '-c', 'exec -a /usr/bin/python3 bash -m sglang.launch_server --port %d' % port],
                             cwd=script_dir)
    deadline = time.time() + 10
    while time.time() < deadline and not (host.title(retitled.pid).startswith('sglang::scheduler_TP0')
                                          and host.title(fake_server.pid).startswith('/usr/bin/python3 -m')):
        time.sleep(0.05)
    report = {'retitled': retitled.pid, 'fake_server': fake_server.pid,
              'titles': {'retitled': host.title(retitled.pid), 'fake_server': host.title(fake_server.pid)}}
    glob_ = host.workdir + '/gpu-*/*'
    report['info'] = host.ansible('server_process_info', {'gpu_device_glob': glob_})
    report['stop'] = host.ansible('server_process', {'gpu_device_glob': glob_, 'grace_period': 2, 'kill_timeout': 2})
    report['alive_after_stop'] = host.alive_of([retitled.pid, fake_server.pid])
    return report


SCENARIOS = {
    'impostors': scenario_impostors,
    'reference': scenario_reference,
    'sigterm_ignorer': scenario_sigterm_ignorer,
    'c01_orphans': scenario_c01_orphans,
    'c02_gpu_holder': scenario_c02_gpu_holder,
    'managed': scenario_managed,
    'c15_supervisord': scenario_c15_supervisord,
    'c25_degraded': scenario_c25_degraded,
    'stuck': scenario_stuck,
}


def runner_main(name):
    """Entry point inside the namespace: run one scenario, print its report as the last line."""
    workdir = tempfile.mkdtemp(prefix='inferops-it-')
    host = Host(workdir)
    try:
        report = SCENARIOS[name](host)
        report['ok'] = True
    except Exception as exc:  # reported to the test, which fails with it
        import traceback
        report = {'ok': False, 'error': '%s: %s' % (type(exc).__name__, exc), 'traceback': traceback.format_exc()}
    report['pid'] = os.getpid()
    sys.stdout.write('\n' + json.dumps(report) + '\n')
    sys.stdout.flush()
    subprocess.call(['rm', '-rf', workdir])


if __name__ == '__main__':
    runner_main(sys.argv[1])
    sys.exit(0)


# ================================================================================================
# The tests (outside the namespace)
# ================================================================================================

import pytest  # noqa: E402 - the runner above must not need pytest


def _requirements():
    if not sys.platform.startswith('linux'):
        return 'Linux only'
    if os.geteuid() != 0:
        return 'needs root (unshare --pid --mount-proc)'
    if not os.path.exists(os.path.join(DOUBLE, 'sglang', 'launch_server.py')):
        return 'the SGLang test double (tests/double) is missing'
    if not os.path.exists(ANSIBLE):
        return 'no ansible next to %s' % sys.executable
    probe = subprocess.run(['unshare', '--pid', '--fork', '--mount-proc', 'true'], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    if probe.returncode != 0:
        return 'unshare --pid does not work here: %s' % probe.stdout.strip()
    return None


pytestmark = pytest.mark.skipif(_requirements() is not None, reason=str(_requirements()))


def run_scenario(name, timeout=150):
    cmd = ['unshare', '--pid', '--fork', '--mount-proc', '--kill-child', sys.executable, os.path.abspath(__file__),
           name]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          timeout=timeout, check=False)
    lines = [line for line in proc.stdout.splitlines() if line.startswith('{')]
    assert lines, 'scenario %s printed no report (rc %d):\n%s\n%s' % (name, proc.returncode, proc.stdout, proc.stderr)
    report = json.loads(lines[-1])
    assert report['ok'], '%s\n%s\n%s' % (report.get('error'), report.get('traceback'), proc.stderr[-3000:])
    assert report['pid'] == 1   # really PID 1 of its own namespace
    return report


def stopped_by(result):
    return dict((s['pid'], s['signal']) for s in result['stopped'])


def assert_ok(result):
    assert not result.get('failed'), result.get('msg')


@pytest.fixture(scope='module')
def reference():
    return run_scenario('reference')


def test_info_finds_every_server_and_no_decoy(reference):
    info = reference['info']
    assert_ok(info)
    mains = sorted(s['main_pid'] for s in info['servers'])
    assert mains == sorted([reference['server']['main'], reference['serve']['main'], reference['bench_child']['main']])
    assert [s['main_pid'] for s in info['strays']] == mains and info['managed'] == []
    servers = dict((s['main_pid'], s) for s in info['servers'])
    ref = servers[reference['server']['main']]
    assert ref['pids'] == reference['server']['tree']
    assert (ref['module'], ref['port'], ref['tp'], ref['host']) == ('sglang.launch_server', reference['server']['port'],
                                                                    2, '127.0.0.1')
    roles = sorted(m['role'] for m in ref['members'])
    assert roles == ['detokenizer', 'resource_tracker', 'scheduler', 'scheduler', 'server']
    assert ref['executable'] == sys.executable
    assert len([d for d in ref['gpu_devices'] if d.endswith(('/nvidia0', '/nvidia1'))]) == 2
    # Secrets: the API key on the command line and HF_TOKEN in the environment never reach the output.
    assert 'sk-integration-key' not in json.dumps(info) and 'hf_integration_secret' not in json.dumps(info)
    assert ref['redacted_args'] == ['--api-key'] and 'HF_TOKEN' in ref['redacted_env']
    serve = servers[reference['serve']['main']]
    assert serve['module'] == 'sglang serve' and serve['port'] == reference['serve']['port']
    assert serve['args'][:1] == ['--model-path']
    member_pids = set(p for s in info['servers'] for p in s['pids'])
    assert not member_pids & set(reference['decoys'].values())
    ignored = dict((i['pid'], i['reason']) for i in info['ignored'])
    for name in ('grep', 'tail', 'vim', 'bench_serving', 'bench_one_batch_server', 'router', 'pip_install',
                 'shell_wrapper'):
        assert reference['decoys'][name] in ignored, name
    assert 'client' in ignored[reference['decoys']['bench_one_batch_server']]
    assert 'router' in ignored[reference['decoys']['router']]


def test_info_port_listeners_c07(reference):
    # Field case C07: the port is held by a process that is not SGLang.
    info = reference['info_port']
    assert_ok(info)
    assert info['servers'] == []
    assert [(entry['pid'], entry['server_main_pid']) for entry in info['listeners']] == [
        (reference['decoys']['port_holder'], None)]


def test_check_mode_stops_nothing_and_shows_diff(reference):
    check = reference['check']
    assert_ok(check)
    assert check['changed'] is True
    assert check['target_pids'] == reference['all_stray']
    assert check['stopped'] == []
    assert reference['alive_after_check'] == reference['all_stray']
    before = check['diff']['before'].splitlines()
    assert sorted(int(line.split()[0]) for line in before) == reference['all_stray']
    assert check['diff']['after'] == ''


def test_stop_ends_every_stray_with_sigterm(reference):
    stop = reference['stop']
    assert_ok(stop)
    assert stop['changed'] is True
    assert stop['target_pids'] == reference['all_stray']
    how = stopped_by(stop)
    assert sorted(how) == reference['all_stray']
    assert set(how.values()) == {'SIGTERM'}, how
    assert reference['alive_after_stop'] == []
    assert stop['diff']['after'] == '' and stop['diff']['before']
    assert stop['gpu_release']['waited'] and stop['gpu_release']['method'] == 'device-files'
    assert stop['port_release']['waited']
    assert sorted(e['port'] for e in stop['port_release']['endpoints']) == sorted(
        [reference['server']['port'], reference['serve']['port'], reference['bench_child']['port']])


def test_decoys_survive(reference):
    assert reference['decoys_alive'] == dict((name, True) for name in reference['decoys'])


def test_second_run_is_not_changed(reference):
    again = reference['again']
    assert_ok(again)
    assert again['changed'] is False
    assert again['target_pids'] == [] and again['stopped'] == []


def test_child_ignoring_sigterm_ends_by_sigkill():
    report = run_scenario('sigterm_ignorer')
    stop = report['stop']
    assert_ok(stop)
    how = stopped_by(stop)
    assert sorted(how) == report['tree']
    assert how[report['ignorer'][0]] == 'SIGKILL'
    assert how[report['tp1'][0]] == 'SIGTERM'
    assert how[report['main']] in ('SIGTERM', 'SIGKILL')   # the double waits 2 s before its own SIGKILL
    seconds = dict((s['pid'], s['seconds']) for s in stop['stopped'])
    assert seconds[report['ignorer'][0]] >= 1
    assert report['alive_after_stop'] == []


def test_processes_that_only_look_like_sglang_are_left_alone():
    report = run_scenario('impostors')
    assert report['titles']['retitled'].startswith('sglang::scheduler_TP0')
    assert report['titles']['fake_server'].startswith('/usr/bin/python3 -m sglang.launch_server')
    info = report['info']
    assert_ok(info)
    assert info['servers'] == [] and info['unproven'] == [] and info['foreign'] == []
    reasons = dict((i['pid'], i['reason']) for i in info['ignored'])
    assert reasons[report['retitled']].startswith('not a Python process')
    assert reasons[report['fake_server']].startswith('not a Python process')
    stop = report['stop']
    assert_ok(stop)
    assert stop['changed'] is False and stop['target_pids'] == [] and stop['stopped'] == []
    assert report['alive_after_stop'] == sorted([report['retitled'], report['fake_server']])


def test_c01_orphaned_dp_schedulers_found_and_stopped():
    report = run_scenario('c01_orphans')
    orphans = report['orphans']
    assert sorted(report['titles'].values()) == ['sglang::scheduler_DP0_TP0_EP0', 'sglang::scheduler_DP1_TP1_EP1']
    assert orphans == report['schedulers']
    assert set(report['orphan_ppids'].values()) == {1}
    info = report['info']
    assert_ok(info)
    assert len(info['servers']) == 1
    entry = info['servers'][0]
    assert entry['orphaned'] is True and entry['main_pid'] == min(orphans) and entry['pids'] == orphans
    assert entry['port'] is None and entry['module'] is None
    assert len([d for d in entry['gpu_devices'] if d.endswith(('/nvidia0', '/nvidia1'))]) == 2
    stop = report['stop']
    assert_ok(stop)
    assert stop['target_pids'] == orphans
    assert set(stopped_by(stop).values()) == {'SIGTERM'}
    assert report['alive_after_stop'] == []
    assert stop['gpu_release']['waited'] and stop['gpu_release']['holders'] == []
    assert report['new_server_ready'] is True


def test_c02_gpu_holder_child_found_stopped_and_release_waited():
    report = run_scenario('c02_gpu_holder')
    assert len(report['holder']) == 1
    stop = report['stop']
    assert_ok(stop)
    assert stop['target_pids'] == report['tree']
    server = stop['strays'][0]
    member = [m for m in server['members'] if m['pid'] == report['holder'][0]][0]
    assert member['role'] == 'child' and 'sglang' not in member['title']
    assert any(d.endswith('/nvidia5') for d in server['gpu_devices'])
    assert sorted(stopped_by(stop)) == report['tree']
    assert report['alive_after_stop'] == []
    assert [h['pid'] for h in stop['gpu_holders_unrelated']] == [report['other']]
    assert report['other_alive'] is True
    release = stop['gpu_release']
    assert release['method'] == 'nvidia-smi' and release['waited']
    assert release['seconds'] >= 0.5          # the fake driver keeps the memory about a second
    assert release['compute_apps'] == [] and release['gpus'][0] == {'index': 0, 'memory_used_mib': 3, 'uuid': 'GPU-0'}


def test_managed_and_excluded_servers_are_left_alone():
    report = run_scenario('managed')
    if report.get('skipped'):
        pytest.skip(report['skipped'])
    assert '/system.slice/%s' % report['unit'] in report['managed_cgroup']
    stop = report['stop']
    assert_ok(stop)
    assert [s['main_pid'] for s in stop['managed']] == [report['managed'][0]]
    assert stop['managed'][0]['managed'] is True and stop['managed'][0]['cgroup'].endswith(report['unit'])
    assert stop['target_pids'] == report['stray']
    assert sorted(stopped_by(stop)) == report['stray']
    assert report['alive_after_stop'] == sorted(report['managed'] + report['kept'])
    assert any(i['pid'] == report['kept'][0] and 'exclude_pids' in i['reason'] for i in stop['ignored'])


def _has_supervisor():
    probe = subprocess.run([sys.executable, '-c', 'import supervisor'], check=False, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    return probe.returncode == 0 and os.path.exists(os.path.join(os.path.dirname(sys.executable), 'supervisord'))


@pytest.mark.skipif(not _has_supervisor(), reason='supervisor is not installed beside %s' % sys.executable)
def test_c15_supervisord_program_is_managed_with_the_defaults():
    """C15: with its defaults, server_process leaves the program of the collection's supervisord (and its
    schedulers) alone and stops only the stray beside it; server_process_info and host_facts agree."""
    report = run_scenario('c15_supervisord')
    info = report['info']
    assert_ok(info)
    assert [s['main_pid'] for s in info['managed']] == [min(report['managed'])]
    assert info['managed'][0]['pids'] == report['managed']
    assert info['managed'][0]['managed_by'] == {'manager': 'supervisord', 'supervisord_pid': report['supervisord'],
                                                'program': 'sglang-it', 'unit': None}
    assert [s['main_pid'] for s in info['strays']] == [report['stray'][0]]
    facts = report['facts']
    assert_ok(facts)
    found = facts['ansible_facts']['inferops_sglang']
    assert [s['main_pid'] for s in found['strays']] == [report['stray'][0]]
    assert sorted(s['main_pid'] for s in found['servers']) == sorted([min(report['managed']), report['stray'][0]])
    stop = report['stop']
    assert_ok(stop)
    assert stop['target_pids'] == report['stray']
    assert sorted(stopped_by(stop)) == report['stray']
    assert report['alive_after_stop'] == sorted(report['managed'] + [report['supervisord']])


def test_stuck_process_is_reported_and_needs_a_reboot():
    """A process SIGKILL cannot end (state D) while it holds a GPU: the stop fails, names it in `stuck` and says
    that a reboot is needed."""
    report = run_scenario('stuck')
    if report.get('skipped'):
        pytest.skip(report['skipped'])
    stop = report['stop']
    assert stop.get('failed') is True
    assert 'a process stuck in the driver holds the GPUs: reboot needed' in stop['msg']
    assert stop['reboot_required'] is True
    assert [(s['pid'], s['state'], s['devices']) for s in stop['stuck']] == [
        (report['stuck'][0], 'D', [report['device']])]
    assert report['alive_after_stop'] == report['stuck']


def teardown_module(module):
    # Cgroups a killed runner could not remove (empty once the namespace is gone).
    for path in glob.glob('/sys/fs/cgroup/freezer/inferops-it-*'):
        try:
            with open(os.path.join(path, 'freezer.state'), 'w') as f:
                f.write('THAWED')
            os.rmdir(path)
        except OSError:
            pass
    for root in CGROUP_ROOTS:
        for path in glob.glob(os.path.join(root, 'system.slice', 'inferops-it-*.service')):
            try:
                os.rmdir(path)
            except OSError:
                pass


def test_gate_fails_at_once_on_a_degraded_server_c25():
    """C25: one scheduler of a tp 2 server under supervisord is killed; the gate (schedulers=2) fails in seconds,
    saying the server is degraded, where /health alone would answer 503 after SGLang's 20 s, round after round."""
    report = run_scenario('c25_degraded')
    healthy = report['healthy']
    assert healthy['state'] == 'ready' and healthy['schedulers'] == 2 and healthy['degraded'] is False, healthy
    degraded = report['degraded']
    assert degraded.get('failed') is True, degraded
    assert degraded['degraded'] is True and degraded['schedulers'] == 1
    assert 'degraded: 1 of 2 scheduler processes are running (sglang::scheduler_TP0)' in degraded['msg']
    assert degraded['_seconds'] < 15, degraded['_seconds']
    assert report['main_alive']
