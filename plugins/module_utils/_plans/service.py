# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The service role's plan: every value its tasks and templates use, and every pre-flight problem, from the role's
inputs, the host facts and what the pre-flight read on the host. One pure function, :func:`service_plan`, exposed as
the filter ``service_plan``; the rules it applies have their own homes (secrets, server settings, sandbox, writers,
GPU blockers, other containers' servers, the SGLang requirement, the server's logging) and are called from here.

The role calls it where it has what it needs: before the host reads (``seen`` empty: the --config path, the server to
adopt, the user and paths to look at), after them (``seen`` with the reads: groups, home, GPU devices, every problem)
and after the command-line check (the SGLANG_* names that version does not read).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re

from ansible_collections.inferops.sglang.plugins.module_utils import _gpu_health, _nvidia_smi, _sandbox, _secrets, _server_log, _supervisors
from ansible_collections.inferops.sglang.plugins.module_utils._plans import (
    problems as plan_problems, service_files, service_host, service_model)
from ansible_collections.inferops.sglang.plugins.module_utils._server_args import (
    args_to_argv, argv_to_args, invalid_environment, no_proxy_env, topology_defaults)
from ansible_collections.inferops.sglang.plugins.module_utils._server_process import cmdline, identity
from ansible_collections.inferops.sglang.plugins.module_utils._sglang_venvs import sglang_requirement
from ansible_collections.inferops.sglang.plugins.module_utils._writers.problems import service_unwritable
from ansible_collections.inferops.sglang.plugins.module_utils._plans.values import ran

# The names of the checks (printed in brackets in front of their messages; one troubleshooting entry each).
CHECK_INIT = 'Check the init system'
CHECK_REPLICA = 'Check the multi-node replica'
CHECK_SECRET_FLAGS = 'Refuse secrets in the server arguments (they would be on the command line and in the unit)'
CHECK_SECRET_ARGS = 'Check the secret server arguments'
CHECK_ADOPT_SECRETS = 'Refuse to adopt a server whose command line holds secrets'
CHECK_ADOPT = 'Check what to adopt'
CHECK_ARGS = 'Check the server arguments'
CHECK_WRITABLE = "Check that every value can be written into the service's files (only names are ever printed)"
CHECK_ENV = 'Check environment variable names and values (only names are ever printed)'
CHECK_ADOPTED_ENV_READABLE = "Check that the hand-started server's environment can be read"
CHECK_ADOPTED_ENV = 'Check the environment adopted from the hand-started server (only names are ever printed)'
CHECK_GPUS = 'Check the GPUs the server needs (a host that needs a reboot or a GPU reset is refused before anything is touched)'
CHECK_PORT = 'Check that nothing but the SGLang server being replaced holds the port'
CHECK_FOREIGN = 'Check that no SGLang server of another container holds the port or the GPUs'
CHECK_PATHS = "Check the service user's paths"
CHECK_GPU_ACCESS = 'Check that the service user can open the GPUs'
CHECK_VERSION = 'Check the SGLang version to install'
CHECK_VENV = 'Check the SGLang venv of that version'
CHECK_VENV_PIP = 'Check that the SGLang venv can get a pip'
CHECK_SUPERVISOR_PIP = 'Check that the supervisor venv can get a pip'

MASK = '********'
LOG_MODULE_DIR = '/usr/local/lib/inferops-sglang/python'
SUPERVISOR_SOCKET = _supervisors.COLLECTION_SUPERVISOR_SOCKET
SGLANG_MARKER = '.inferops-sglang-installed'
CLEAN_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
REPLICA_FLAGS = ('nnodes', 'node-rank', 'node_rank', 'dist-init-addr', 'dist_init_addr')
NVIDIA_DEVICE_CLASSES = ['char-nvidia-frontend rw', 'char-nvidia-uvm rw', 'char-nvidia-caps rw']


def _inputs(raw):
    """The role's inputs without their ``service_`` prefix (the filter gets them as the role's variables)."""
    return dict((key[len('service_'):] if key.startswith('service_') else key, value)
                for key, value in (raw or {}).items())


def _seen_result(seen, key):
    """A registered result of ``seen`` as a dict: {} when absent, None or skipped."""
    return ran((seen or {}).get(key))


def _abs(path):
    return isinstance(path, str) and os.path.isabs(path)


def _text_or_empty(value):
    return '' if value is None else str(value)


def _listing(values, empty='none'):
    return ', '.join(str(value) for value in values) or empty


def _relative_to(path, directory):
    """``path`` as given when absolute, else under ``directory``; '' for no path."""
    path = _text_or_empty(path)
    if not path:
        return ''
    return path if os.path.isabs(path) else directory + '/' + path


def _content(result, key):
    """The ``content`` of ``result[key]`` (service_preflight_info's reads), or None."""
    return ((result.get(key) or {}).get('content')) if result else None


def _settings(args, config):
    """``cmdline.server_settings`` refusing a port, tp, dp or pp that is not an integer (as the filter does)."""
    settings = cmdline.server_settings(args, config)
    for name in ('port', 'tp', 'dp', 'pp'):
        if settings[name] is None:
            raise ValueError('the %s of these arguments is not an integer' % name)
    return settings


def _adoption(inp, facts, user_config):
    """(adoptable, adopted): the strays on the wanted port, else the only one; the one adopted when service_adopt."""
    strays = facts.get('strays') or []
    port_wanted = _settings(inp['server_args'], user_config)['port']
    adoptable = [stray for stray in strays if stray.get('port') == port_wanted] or (strays if len(strays) == 1 else [])
    adopted = adoptable[0] if inp['adopt'] and len(adoptable) == 1 else {}
    return port_wanted, adoptable, adopted


def _adopted_env(adopted, patterns):
    """The hand-started server's environment that matches ``patterns`` (regexes, from the start of the name), its
    masked values left out."""
    if not adopted or not patterns:
        return {}
    pattern = re.compile('|'.join(patterns))
    return dict((key, value) for key, value in (adopted.get('env') or {}).items()
                if pattern.match(key) and value != MASK)


def _argv(server_args):
    """``args_to_argv`` of the arguments; with a secret flag among them (a problem of its own), its value masked."""
    try:
        return args_to_argv(server_args)
    except ValueError:
        return _secrets.redact_argv(args_to_argv(server_args, allow_secrets=True))


def _sglang(inp):
    if inp['sglang_version']:
        return sglang_requirement(inp['sglang_version'], inp['venvs_dir'], inp['sglang_venv_name'])
    return {'problem': '', 'venv': None, 'python': None, 'requirement': '', 'version': None}


def _command(inp, plan, adopted):
    managed = plan['sglang_managed']
    if adopted:
        head = [plan['python'] if managed else adopted.get('executable')] + list(adopted.get('argv') or [])[1:]
    else:
        head = [plan['python']] + list(inp['entry_point']) + list(plan['argv_args'])
    return head + list(plan.get('nccl_port_argv') or []) + plan['config_argv']


def _identity(inp, plan, info):
    """user_exists, group, home, user_groups of the service user (its passwd entry and groups read by the pre-flight)."""
    user = plan['user']
    read = info.get('user') or {}
    exists = user == 'root' or bool(read.get('exists'))
    if inp['group']:
        group = inp['group']
    elif user == 'root':
        group = 'root'
    else:
        group = (read.get('groups') or [None])[0] or user
    if user == 'root':
        home = None
    else:
        home = inp['cache_dir'] if not exists else (read.get('home') or '')
    groups = [group] + (list(read.get('groups') or []) if exists else [])
    if not exists or plan['manager'] == 'systemd':
        groups += list(inp['user_groups'])
    return {'user_exists': exists, 'group': group, 'home': home, 'user_groups': _unique(groups)}


def _environment(inp, plan, facts, adopted_env, host, unread):
    """(cache_env, environment_all, environment): the caches, the probed PYTHONPATH, the adopted environment (not
    PATH), the user's (which wins), the no-proxy list; last, the variables this SGLang does not read left out and the
    server's logging set up."""
    home = plan['home'] if _abs(plan['home']) else None
    # A relative cache directory is a problem of its own (CHECK_PATHS): no cache variables until it is absolute.
    cache_env = _sandbox.cache_environment(inp['cache_dir'], home) if _abs(inp['cache_dir']) else {}
    wanted = dict(cache_env)
    pythonpath = (facts.get('python') or {}).get('pythonpath')
    if pythonpath:
        wanted['PYTHONPATH'] = pythonpath
    wanted.update((key, value) for key, value in adopted_env.items() if key != 'PATH')
    wanted.update(inp['environment'])
    everything = dict(wanted)
    everything.update(no_proxy_env(wanted, [host.get('name'), host.get('address') or '']))
    kept = dict((key, value) for key, value in everything.items() if key not in unread)
    environment = _server_log.server_environment(kept, plan['log_config_file'], LOG_MODULE_DIR,
                                                 cmdline.ignores_pythonpath(plan['command']))
    return cache_env, everything, _sorted(environment)


def _sorted(environment):
    """The environment in the order of its names: the environment file reads the same whatever the order its sources
    came in (a PYTHONPATH the facts saw on the running server, or the one the logging adds), so a converged run
    rewrites nothing."""
    return dict(sorted(environment.items()))


def _port_holders(facts, port):
    """The listeners on ``port`` that no server this run replaces owns; one without a pid is taken for the SGLang
    server on that port when there is one (root without CAP_SYS_PTRACE cannot name another user's sockets)."""
    servers = facts.get('servers') or []
    replaced = [pid for server in servers for pid in (server.get('pids') or [])]
    listeners = [entry for entry in facts.get('listeners') or []
                 if entry.get('port') == port and entry.get('pid') not in replaced]
    if any(server.get('port') == port for server in servers):
        return [entry for entry in listeners if entry.get('pid') is not None]
    return listeners


def _sandbox_of(inp, plan, facts):
    write_paths = (([inp['cache_dir']] if inp['cache_dir'] else []) + [plan['working_directory']]
                   + (['-/root/.cache'] if plan['user'] == 'root' else []) + list(inp['read_write_paths'])
                   + plan['cache_write_paths'])
    if plan['user'] == 'root':
        capabilities = None
    else:
        capabilities = ['CAP_NET_BIND_SERVICE'] if plan['port'] < 1024 else []
    device_allow = (NVIDIA_DEVICE_CLASSES + [path + ' rw' for path in plan['gpu_device_paths']]
                    + list(inp['device_allow']))
    sandbox, problem = [], ''
    if inp['sandbox']:
        try:
            sandbox = _sandbox.sandbox_directives(
                (facts.get('init') or {}).get('systemd_version'), [plan['command'][0]] + plan['model_paths'], write_paths,
                inp['device_policy'], device_allow, inp['journal_filter_patterns'], capabilities,
                inp['address_families'], bool(inp['user_create']) and plan['user'] != 'root')
        except ValueError as exc:
            problem = str(exc)
    return {'write_paths': write_paths, 'capabilities': capabilities, 'device_allow': device_allow,
            'sandbox': sandbox, 'sandbox_problem': problem}


def service_plan(inputs, facts, seen=None):
    """The service role's plan.

    :param inputs: the role's variables (``service_*``, the prefix optional) and ``host``: ``{'name':
        inventory_hostname, 'address': ansible_host or '', 'replica_group_exists': bool, 'replica_hosts': [names in
        rank order], 'replica_args': {'nnodes', 'node-rank', 'dist-init-addr'} or {}}`` (the replica's addresses are
        the worker-address rule's, computed by the role).
    :param facts: host_facts' ``inferops_sglang`` fact (init, strays, servers, listeners, python, gpus, ...).
    :param seen: what the pre-flight read, each a registered result (None, absent or skipped: not read yet):
        ``config`` and ``info`` (service_preflight_info), ``sglang_venv`` and ``supervisor_venv`` (python_venv in
        check mode), ``args_checked`` (server_args_check).
    :returns: dict of the values the tasks use (``command`` argv list, ``environment`` dict, ``user``, ``group``,
        ``args_memo`` (the memo's verdict of the command-line check, see ``service_host.args_memo``),
        ``home``, ``working_directory``, ``files``, ``sandbox`` [[directive, value]], ``manager``, ``port`` int,
        ``scheme``, ``write_paths``, ...) and ``problems``: ``[{'check': name, 'message': text}]``, every pre-flight
        failure at once (the host reads' own failures first), each saying what to do; empty when the pre-flight passes;
        ``warnings`` and ``model_notes`` (lists of str that do not stop the run: see ``service_model``);
        ``seed``: the same values for the only hand-started server as it runs (see :func:`_seed`), {} without one.
    :raises ValueError: when the wanted server's port, tp, dp or pp is not an integer.
    """
    inp = _inputs(inputs)
    facts = facts or {}
    plan = _plan_inputs(inp, facts, seen)
    # The check's memo, found by the host read, counts as the check (the role then skips server_args_check).
    memo = service_host.args_memo(plan, seen)
    if memo and plan['sglang_managed'] and memo.get('env_names_unread'):
        plan = _plan_inputs(inp, facts, dict(seen or {}, args_checked=memo))
    plan['args_memo'] = memo
    plan['seed'] = _seed(inp, facts, seen) if len(plan['adoptable']) == 1 else {}
    return plan


def _seed(inp, facts, seen):
    """The hand-started server as it runs, rendered as the service (the first known-good configuration): adopted,
    with its own interpreter and PATH (even when this run moves it to a managed SGLang version), and its own
    environment (PATH aside) with the masking log configuration; no problems."""
    seed = _plan_inputs(dict(inp, adopt=True, sglang_version='', nccl_port=0), facts, seen)
    environment = dict((key, value) for key, value in seed['adopted_env'].items() if key != 'PATH')
    seed['environment'] = _sorted(_server_log.server_environment(environment, seed['log_config_file'], LOG_MODULE_DIR,
                                                                 cmdline.ignores_pythonpath(seed['command'])))
    del seed['problems']
    return seed


def _plan_inputs(inp, facts, seen):
    """:func:`service_plan` of the inputs without their prefix."""
    host = inp.get('host') or {}
    info = _seen_result(seen, 'info')
    plan = {'unit': inp['name'] + '.service', 'replica_hosts': list(host.get('replica_hosts') or []),
            'sglang_marker': SGLANG_MARKER, 'log_module_dir': LOG_MODULE_DIR, 'supervisor_socket': SUPERVISOR_SOCKET}
    plan['user_config_path'] = _relative_to((inp['server_args'] or {}).get('config'), inp['working_directory'])
    user_config = _content(_seen_result(seen, 'config'), 'config')
    plan['user_config'] = user_config if user_config is not None else _content(info, 'config')
    server_args = dict(inp['server_args'])
    if inp['topology_defaults']:
        server_args = topology_defaults(server_args, facts.get('interconnect', 'none'), facts.get('gpu_count') or 0,
                                        plan['user_config'], facts)
    server_args.update(host.get('replica_args') or {})
    plan['server_args'] = server_args
    plan['port_wanted'], plan['adoptable'], adopted = _adoption(inp, facts, plan['user_config'])
    plan['adopted'] = adopted
    plan['argv_args'] = list(adopted.get('args') or []) if adopted else _argv(server_args)
    plan['config_argv'] = ['--config', inp['config_file']] if inp['secret_args'] else []
    plan['sglang_managed'] = bool(inp['sglang_version'])
    plan['sglang'] = _sglang(inp)
    plan['python'] = plan['sglang']['python'] if plan['sglang_managed'] and plan['sglang']['python'] else inp['python']
    plan['sglang_pip_args'] = (['--find-links=' + path for path in inp['sglang_pip_find_links']]
                               + (['--no-index'] if inp['sglang_pip_no_index'] else []))
    plan['command'] = _command(inp, plan, adopted)
    plan['args_map'] = argv_to_args(plan['argv_args'])
    plan['scheme'] = 'https' if _text_or_empty(plan['args_map'].get('ssl-certfile')) else 'http'
    adopted_env = _adopted_env(adopted, inp['adopt_env_patterns'])
    plan['adopted_env'] = adopted_env
    if adopted and 'PATH' in adopted_env and not plan['sglang_managed']:
        plan['path'] = adopted_env['PATH']
    else:
        plan['path'] = ':'.join([os.path.dirname(plan['python']), inp['cuda_home'] + '/bin'] + list(inp['path_extra']))
    plan['user'] = (adopted.get('user') if adopted else None) or inp['user']
    plan['working_directory'] = (adopted.get('cwd') if adopted else None) or inp['working_directory']
    plan['masked_names'] = [key for key, value in ((adopted or {}).get('env') or {}).items() if value == MASK]
    plan['adopted_config_path'] = (_relative_to(plan['args_map'].get('config'), adopted.get('cwd') or '/')
                                   if adopted else '')
    plan['config'] = _content(info, 'adopted_config') if adopted else plan['user_config']
    plan['gpus_needed'] = cmdline.gpus_needed(plan['args_map'], plan['config'])
    plan['settings'] = _settings(plan['args_map'], plan['config'])
    plan['port'] = plan['settings']['port']
    # SGLang's logging configuration (SGLANG_LOGGING_CONFIG_PATH), as the file's text.
    # A level SGLang would not start with is a problem (CHECK_ARGS); the file then gets SGLang's default.
    plan['log_level'] = cmdline.log_level(plan['args_map'], plan['config'])
    try:
        _server_log.level_name(plan['log_level'])
    except ValueError:
        plan['log_level_problem'] = plan['log_level']
        plan['log_level'] = 'info'
    plan['log_config'] = json.dumps(_server_log.logging_config(plan['log_level']), indent=4, sort_keys=True) + '\n'
    plan['port_holders'] = _port_holders(facts, plan['port'])
    plan.update(service_host.ports(inp, plan, facts, _port_holders))  # a pinned --nccl-port goes on the command line
    plan['command'], plan['args_map'] = _command(inp, plan, adopted), argv_to_args(plan['argv_args'] + plan['nccl_port_argv'])
    plan['model_paths'] = [path for path in (_text_or_empty(plan['args_map'].get('model-path')),
                                             _text_or_empty(plan['args_map'].get('speculative-draft-model-path')))
                           if path.startswith('/')]
    init = facts.get('init') or {}
    if inp['manager'] == 'auto':
        plan['manager'] = 'systemd' if init.get('system', 'other') == 'systemd' else 'supervisord'
    else:
        plan['manager'] = inp['manager']
    config_dir = os.path.dirname(inp['env_file'])
    plan['log_config_file'] = '%s/%s-logging.json' % (config_dir, inp['name'])
    plan['wrapper'] = '%s/%s-run.sh' % (config_dir, inp['name'])
    plan['supervisor_dir'] = os.path.dirname(inp['supervisor_config']) + '/supervisor.d'
    plan['supervisord_command'] = '/usr/bin/env -i PATH=%s LANG=C.UTF-8 %s/bin/supervisord -c %s' % (
        CLEAN_PATH, inp['supervisor_venv'], inp['supervisor_config'])
    plan['boot_file'], plan['boot_job'] = service_files.boot(facts, plan['supervisord_command'])
    plan['files'] = service_files.manager_files(inp, plan)
    plan['rendered_paths'] = service_files.rendered_paths(inp, plan)
    plan['gpu_device_paths'] = sorted(device.get('path') for device in info.get('gpu_devices') or [])
    plan.update(_identity(inp, plan, info))
    checked = _seen_result(seen, 'args_checked')
    plan['env_unread'] = list(checked.get('env_names_unread') or []) if plan['sglang_managed'] else []
    plan['cache_env'], everything, plan['environment'] = _environment(
        inp, plan, facts, adopted_env, host, plan['env_unread'])
    plan.update(service_host.adopted_caches(inp, plan))  # the hand-started server's Hugging Face and FlashInfer caches
    plan.update(service_model.model_reads(plan, facts), **service_host.network(inp, plan, facts))
    plan['sglang_env_names'] = ([key for key in everything if key.startswith('SGLANG_') and key not in plan['cache_env']]
                                if plan['sglang_managed'] else [])
    plan.update(_sandbox_of(inp, plan, facts), nvidia_units=_gpu_health.nvidia_units(facts))
    plan['creates_user'] = bool(inp['user_create']) and plan['user'] != 'root' and not plan['user_exists']
    plan['tp_unusable'] = _nvidia_smi.tp_unusable_reason(facts) or ''
    plan['stray_secrets'] = list(plan['adoptable'][0].get('redacted_args') or []) if len(plan['adoptable']) == 1 else []
    plan['sglang_installs'] = bool(_seen_result(seen, 'sglang_venv').get('changed')) and plan['sglang_managed']
    own_python = (facts.get('python') or {}).get('executable')
    plan['protected_executables'] = [
        entry.get('executable') for entry in (facts.get('servers') or []) + (facts.get('strays') or [])
        if isinstance(entry.get('executable'), str)] + ([own_python] if own_python else [])
    plan['output'] = output(inp, plan, facts)
    plan['problems'] = problems(inp, plan, facts, seen)
    plan['model_notes'], plan['warnings'] = service_model.notes_and_warnings(inp, plan, facts, seen)
    plan['run_notes'] = service_host.run_notes(inp, plan, facts)
    return plan


def _boot_text(plan, facts):
    """How the service starts at boot, in words."""
    if plan['manager'] == 'systemd':
        return 'enabled (systemd)'
    if not plan['boot_file']:
        return 'none: the container entrypoint must run ' + plan['supervisord_command']
    cron = (facts.get('init') or {}).get('cron') or {}
    text = 'cron @reboot (%s, %s)' % (plan['boot_file'], cron.get('daemon'))
    if cron.get('reboot_marker_persists'):
        text += ', removes the stale %s that survives a restart here' % cron.get('reboot_marker')
    return text


def output(inp, plan, facts):
    """The declared output ``inferops_sglang_service`` as far as the plan knows it (the role adds what its steps saw:
    ``exposure``, ``changed``)."""
    systemd = plan['manager'] == 'systemd'
    managed = plan['sglang_managed']
    args = plan['args_map']
    return {
        'manager': plan['manager'], 'user': plan['user'], 'group': plan['group'],
        'env_file_owner': 'root' if systemd else plan['user'], 'cache_dir': inp['cache_dir'],
        'sandbox': plan['sandbox'] if systemd else [], 'unit': plan['unit'] if systemd else inp['name'],
        'unit_path': plan['files'][-1]['src'], 'files': plan['files'], 'boot': _boot_text(plan, facts),
        'supervisor': {'config': inp['supervisor_config'], 'supervisorctl': inp['supervisor_venv'] + '/bin/supervisorctl',
                       'supervisord_command': plan['supervisord_command'],
                       'log_file': '%s/%s.log' % (inp['log_dir'], inp['name'])},
        'command': plan['command'], 'args': args, 'environment_names': list(plan['environment']),
        'sglang': {'managed': managed,
                   'version': plan['sglang']['version'] if managed else (facts.get('python') or {}).get('sglang_version'),
                   'requirement': plan['sglang']['requirement'],
                   'venv': plan['sglang']['venv'] if managed else os.path.dirname(os.path.dirname(_text_or_empty(plan['command'][0]))),
                   'python': plan['command'][0], 'environment_not_read': plan['env_unread']},
        'environment_left_out': plan['masked_names'], 'environment_files': [inp['cuda_env_file'], inp['env_file']],
        'path': plan['path'], 'host': plan['settings']['host'], 'port': plan['port'],
        'nnodes': int(args.get('nnodes', 1)), 'schedulers': plan['gpus_needed'], 'node_rank': int(args.get('node-rank', 0)),
        'replica_hosts': plan['replica_hosts'], 'adopted_pid': plan['adopted'].get('main_pid') if plan['adopted'] else None,
        'known_good_dir': inp['known_good_dir'], 'env_file': inp['env_file'], 'cuda_env_file': inp['cuda_env_file'],
        'config_file': inp['config_file'],
        'secret_files': ([{'src': inp['config_file'], 'mode': '0600', 'owner': plan['user'], 'group': plan['group']}]
                         if inp['secret_args'] else []),
        'scheme': plan['scheme'],
    }


# The checks: each gives its message, '' when it passes.

def _check_init(inp, plan, facts, seen):
    init = facts.get('init') or {}
    if plan['manager'] != 'systemd' or init.get('system') == 'systemd':
        return ''
    found = 'exists' if init.get('systemd_booted') else 'is missing'
    return ('service_manager is systemd but PID 1 on this host is %s, not systemd (/run/systemd/system %s). Set '
            'service_manager to auto or supervisord.' % (init.get('pid1'), found))


def _check_replica(inp, plan, facts, seen):
    group = inp['replica_group']
    if not group:
        return ''
    host = inp.get('host') or {}
    hosts = plan['replica_hosts']
    port = inp['dist_init_port']
    try:
        port_ok = 0 < int(port) < 65536
    except (TypeError, ValueError):
        port_ok = False
    if (host.get('replica_group_exists') and host.get('name') in hosts and len(hosts) >= 2 and not inp['adopt']
            and not set(inp['server_args']) & set(REPLICA_FLAGS) and port_ok):
        return ''
    return ("service_replica_group '%s' must be an inventory group of at least two hosts that includes %s (its nodes in "
            "rank order: %s); nnodes, node-rank and dist-init-addr are computed from it, so service_server_args must "
            "not set them, and a replica is described in service_server_args, not adopted (service_adopt false). "
            "service_dist_init_port: %s." % (group, host.get('name'), _listing(hosts), port))


def _check_secret_flags(inp, plan, facts, seen):
    found = _secrets.secret_flags(inp['server_args'])
    if not found:
        return ''
    return ("service_server_args sets %s, whose values are secrets: a secret flag, an abbreviation SGLang's parser "
            "expands to one (api for api-key), or a value holding a URL with a password (scheme://user:password@host). "
            "A secret must not be in argv or in a unit file, where every local user can read it (ps, systemctl show). "
            "Put the flag into service_secret_args instead, spelled in full (api-key), which is rendered into SGLang's "
            "--config file, readable by the service user only. No value is shown." % ', '.join(found))


def _check_secret_args(inp, plan, facts, seen):
    secret = inp['secret_args']
    flags = _secrets.secret_flags(secret)
    if (all(re.match(r'^[a-z0-9]+(-[a-z0-9]+)*$', key) for key in secret)
            and len(flags) == len(secret)
            and all(isinstance(value, str) and value for value in secret.values())
            and (not secret or 'config' not in inp['server_args'])
            and _abs(inp['config_file'])):
        return ''
    return ("service_secret_args takes only secret flags (%s of %d keys are), spelled as SGLang spells them without "
            "leading dashes (api-key, admin-api-key), each with a non-empty string value; other arguments go into "
            "service_server_args. SGLang reads one --config file, so service_server_args must not set config as well; "
            "service_config_file must be an absolute path." % (_listing(flags), len(secret)))


def _check_adopt_secrets(inp, plan, facts, seen):
    adoptable = plan['adoptable']
    if not (inp['adopt'] and len(adoptable) == 1 and adoptable[0].get('redacted_args')):
        return ''
    return ("The hand-started server passes %s on its command line; a secret must not be copied into argv or a unit. "
            "Describe the server in service_server_args and put the secret into service_secret_args (SGLang's --config "
            "file, readable by the service user only), then run again without service_adopt."
            % ', '.join(adoptable[0]['redacted_args']))


def _check_adopt(inp, plan, facts, seen):
    if not inp['adopt'] or len(plan['adoptable']) == 1:
        return ''
    return ("service_adopt is true but %d stray SGLang servers qualify (ports: %s). Set service_server_args.port to the "
            "one to adopt, or set service_adopt to false and describe the server in service_server_args."
            % (len(plan['adoptable']), _listing(stray.get('port') for stray in facts.get('strays') or [])))


def _check_args(inp, plan, facts, seen):
    args = inp['server_args']
    if plan.get('log_level_problem') is not None:
        return ("--log-level %r is no level of Python's logging: SGLang would not start with it (it looks the name up in "
                "the logging module). Use debug, info, warning, error or critical." % (plan['log_level_problem'],))
    if ((inp['adopt'] or 'model-path' in args or 'model_path' in args)
            and _abs(inp['python']) and _abs(inp['working_directory']) and _abs(inp['env_file'])):
        return ''
    return ("service_server_args needs at least model-path (keys as SGLang spells its flags, e.g. model-path, tp-size), "
            "and service_python, service_working_directory and service_env_file must be absolute paths.")


def _check_writable(inp, plan, facts, seen):
    found = service_unwritable(plan['manager'], {
        'working_directory': plan['working_directory'], 'env_file': inp['env_file'],
        'cuda_env_file': inp['cuda_env_file'], 'user': plan['user'], 'name': inp['name'], 'group': plan['group'],
        'user_groups': inp['user_groups'], 'command': plan['command'], 'path': plan['path'],
        'environment': plan['environment'], 'log_dir': inp['log_dir']}, plan['adopted'], plan['adopted_env'])
    if not found:
        return ''
    return ("Values that the %s files of the service cannot hold without changing their meaning (the collection's "
            "writers refuse them): %s. Change the variable; for a value adopted from the hand-started server, start it "
            "from a plain absolute directory with plain arguments, or set service_adopt to false and describe the "
            "server in the service_* variables. Nothing was changed." % (plan['manager'], '; '.join(found)))


def _check_env(inp, plan, facts, seen):
    found = invalid_environment(inp['environment'], reasons=True)
    if not found:
        return ''
    return 'Environment variable(s) of service_environment are not valid: %s.' % '; '.join(found)


def _check_adopted_env_readable(inp, plan, facts, seen):
    adopted = plan['adopted']
    if not adopted or not inp['adopt_env_patterns'] or adopted.get('env_readable', True):
        return ''
    return ("The environment of the hand-started server (pid %s, user %s) cannot be read: root without CAP_SYS_PTRACE "
            "(a docker container's default) cannot read another user's /proc/PID/environ, so adoption would drop its "
            "whole environment (CUDA_HOME, NCCL tuning, PATH) without a word. Give the container CAP_SYS_PTRACE (docker "
            "run --cap-add SYS_PTRACE), or describe the environment in service_environment and set "
            "service_adopt_env_patterns to [] to adopt only the command line, user and working directory. Nothing was "
            "changed." % (adopted.get('main_pid', '?'), adopted.get('user', '?')))


def _check_adopted_env(inp, plan, facts, seen):
    if not plan['adopted']:
        return ''
    merged = dict(plan['adopted_env'])
    merged.update(inp['environment'])
    found = invalid_environment(merged, reasons=True)
    if not found:
        return ''
    return ("The hand-started server (pid %s) runs with environment values that are not valid, and adoption would copy "
            "them into %s, where they override the validated CUDA/NCCL environment: %s. Set the right value in "
            "service_environment (it wins over the adopted one), or leave the variable out of "
            "service_adopt_env_patterns. Nothing was changed."
            % (plan['adopted'].get('main_pid', '?'), inp['env_file'], '; '.join(found)))


def _check_gpus(inp, plan, facts, seen):
    blockers = _nvidia_smi.gpu_blockers(facts, plan['gpus_needed'], inp['require_gpus'], 'service_require_gpus')
    return ' '.join(blocker['message'] for blocker in blockers)


def _check_port(inp, plan, facts, seen):
    holders = plan['port_holders']
    if not holders:
        return ''
    named = [holder for holder in holders if holder.get('pid') is not None]
    if named:
        text = ('Port %s is held by %s (pid %s), which is not an SGLang server this run replaces.'
                % (plan['port'], ', '.join(_text_or_empty(holder.get('process') or '?') for holder in named),
                   ', '.join(str(holder['pid']) for holder in named)))
    else:
        users = _unique(_text_or_empty(holder.get('user')) or '?' for holder in holders)
        uids = _unique(_text_or_empty(holder.get('uid')) or '?' for holder in holders)
        text = ('Port %s is held by a process of user %s (uid %s) whose pid this run cannot see: root without '
                'CAP_SYS_PTRACE (a docker container\'s default) cannot read another user\'s /proc/PID/fd, and no SGLang '
                'server was found on that port (a process\'s command line is readable by anyone, so a hand-started '
                'SGLang server would have been). Stop that process as its user, or give the container CAP_SYS_PTRACE '
                '(docker run --cap-add SYS_PTRACE) so that it can be named.'
                % (plan['port'], ', '.join(users), ', '.join(uids)))
    return text + ' Nothing was changed or stopped. Free the port or choose another with service_server_args.port.'


def _unique(values):
    found = []
    for value in values:
        if value not in found:
            found.append(value)
    return found


def _check_foreign(inp, plan, facts, seen):
    return identity.foreign_conflicts(facts, plan['port'], plan['gpus_needed'])


def _check_paths(inp, plan, facts, seen):
    cache_dir = inp['cache_dir']
    if ((not cache_dir or _abs(cache_dir)) and not re.match(r'^/(tmp|var/tmp)(/|$)', cache_dir)
            and all(_abs(re.sub('^-', '', path)) for path in inp['read_write_paths'])
            and (not inp['device_allow'] or inp['device_policy'])):
        if plan['sandbox_problem'] and _abs(plan['command'][0]) and _abs(plan['working_directory']):
            return 'The sandbox of the unit cannot be written: %s. Check service_device_policy, service_device_allow, ' \
                   'service_journal_filter_patterns and service_address_families.' % plan['sandbox_problem']
        return ''
    return ("service_cache_dir (%s) must be an absolute path outside /tmp and /var/tmp (the unit's PrivateTmp would "
            "throw the compiled kernels away at every restart); service_read_write_paths must be absolute paths (a "
            "leading - tolerates a missing one); service_device_allow needs a service_device_policy." % cache_dir)


def _check_gpu_access(inp, plan, facts, seen):
    if plan['user'] == 'root':
        return ''
    refused = _sandbox.gpu_device_access(_seen_result(seen, 'info').get('gpu_devices') or [], plan['user'],
                                         plan['user_groups'])
    if not refused:
        return ''
    groups = _unique(_text_or_empty(device.get('group')) for device in refused)
    return ("The service user %s (groups %s) cannot open %s (mode %s, group %s). Add %s to the group %s: "
            "service_user_groups: [%s]." % (
                plan['user'], _listing(plan['user_groups']), ', '.join(_text_or_empty(device.get('path')) for device in refused),
                ', '.join(_unique(_text_or_empty(device.get('mode')) for device in refused)), ', '.join(groups), plan['user'],
                ' and '.join(groups), ', '.join(groups)))


def _check_version(inp, plan, facts, seen):
    if not plan['sglang_managed']:
        return ''
    parts = [plan['sglang']['problem']] if plan['sglang']['problem'] else []
    if not _abs(inp['venv_python']):
        parts.append('service_venv_python (%s) must be an absolute path.' % inp['venv_python'])
    try:
        keep_ok = int(inp['venvs_keep']) >= 0
    except (TypeError, ValueError):
        keep_ok = False
    if not keep_ok:
        parts.append('service_venvs_keep must be 0 or more.')
    if not all(isinstance(item, str) for item in inp['sglang_requirements']):
        parts.append('service_sglang_requirements must be a list of pip requirements (strings).')
    return ' '.join(parts)


def _check_venv(inp, plan, facts, seen):
    if not plan['sglang_managed']:
        return ''
    return _text_or_empty(_seen_result(seen, 'sglang_venv').get('conflict'))


def _check_venv_pip(inp, plan, facts, seen):
    venv_plan = _seen_result(seen, 'sglang_venv')
    if not (plan['sglang_managed'] and venv_plan.get('changed') and venv_plan.get('route') is None):
        return ''
    return ("%s has neither ensurepip nor pip, so the venv %s of %s cannot get a pip. Install %s or python3-pip, or set "
            "service_venv_python to an interpreter that has pip." % (
                inp['venv_python'], plan['sglang']['venv'], plan['sglang']['requirement'],
                venv_plan.get('venv_package')))


def _check_supervisor_pip(inp, plan, facts, seen):
    venv_plan = _seen_result(seen, 'supervisor_venv')
    if not (plan['manager'] == 'supervisord' and venv_plan.get('changed') and venv_plan.get('route') is None
            and venv_plan.get('package_manager') is None):
        return ''
    return ("%s has neither ensurepip nor pip, and %s has no package manager to install %s with, so the supervisor venv "
            "%s cannot get a pip. Install %s or python3-pip, or set service_supervisor_python to an interpreter that "
            "has pip." % (inp['supervisor_python'], (inp.get('host') or {}).get('name'), venv_plan.get('venv_package'),
                          inp['supervisor_venv'], venv_plan.get('venv_package')))


CHECKS = (
    (CHECK_INIT, _check_init), (CHECK_REPLICA, _check_replica), (CHECK_SECRET_FLAGS, _check_secret_flags),
    (CHECK_SECRET_ARGS, _check_secret_args), (CHECK_ADOPT_SECRETS, _check_adopt_secrets), (CHECK_ADOPT, _check_adopt),
    (CHECK_ARGS, _check_args), (CHECK_WRITABLE, _check_writable), (CHECK_ENV, _check_env),
    (CHECK_ADOPTED_ENV_READABLE, _check_adopted_env_readable), (CHECK_ADOPTED_ENV, _check_adopted_env),
    (CHECK_GPUS, _check_gpus), (CHECK_PORT, _check_port), (CHECK_FOREIGN, _check_foreign), (CHECK_PATHS, _check_paths),
    (CHECK_GPU_ACCESS, _check_gpu_access), (CHECK_VERSION, _check_version), (CHECK_VENV, _check_venv),
    (CHECK_VENV_PIP, _check_venv_pip), (CHECK_SUPERVISOR_PIP, _check_supervisor_pip),
) + service_host.CHECKS + service_model.CHECKS  # the NCCL port and interface; the model's config.json


def problems(inp, plan, facts, seen):
    """Every failed check: the host reads' own failures (service_preflight_info's ``failures``: check, message)
    first, then the plan's, in the order of CHECKS."""
    found = [dict(failure) for failure in _seen_result(seen, 'info').get('failures') or []]
    for name, check in CHECKS:
        message = check(inp, plan, facts, seen)
        if message:
            found.append(plan_problems.problem(name, message))
    return found
