# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The service plan's part on the host's ports and network (issue 28, item 4): the pinned ``--nccl-port`` and, for a
node of a multi-node replica, the interface Gloo and NCCL use. Called by :func:`service.service_plan`; its checks
join the plan's ``problems``.

- SGLang binds the NCCL rendezvous (torch's TCPStore, rank 0) on ``--nccl-port``; without one it picks a free port
  when the server starts: any free port up to SGLang 0.5.18 (``get_free_port``, often an ephemeral one that a client
  connection still holds right after a stop: EADDRINUSE), 22000-29999 from 0.5.23 on
  (``sglang/srt/utils/network.py``, ``get_free_port_below_ephemeral``). The collection pins one (``service_nccl_port``).
- A multi-node replica (``--dist-init-addr``) rendezvouses there instead; its Gloo and NCCL bind the address the
  hostname resolves to unless ``GLOO_SOCKET_IFNAME`` / ``NCCL_SOCKET_IFNAME`` name an interface, and a stock Debian
  or Ubuntu ``/etc/hosts`` maps the hostname to 127.0.1.1, so rank 1 never connects.

And what the role shows about the host's hand-started servers before it writes (:func:`run_notes`).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.inferops.sglang.plugins.module_utils import _args_check_cache, _model_config, _network, _server_args
from ansible_collections.inferops.sglang.plugins.module_utils._server_process import cmdline
from ansible_collections.inferops.sglang.plugins.module_utils._plans.values import ran

CHECK_NCCL_PORT = "Check that nothing but the SGLang server being replaced holds the NCCL port"
CHECK_SOCKET_IFNAME = "Check the interface the replica's Gloo and NCCL use"
CHECK_OFFLINE_MODEL = "Check that an offline server finds its model in the Hugging Face cache"
HUB_VARIABLES = ('HF_HUB_CACHE', 'HUGGINGFACE_HUB_CACHE', 'HF_HOME')
OFFLINE_VARIABLES = ('HF_HUB_OFFLINE', 'TRANSFORMERS_OFFLINE')


def _given(args_map, config, names):
    """The value of the first of ``names`` (flags without dashes) on the command line, else in the --config file."""
    try:
        values = cmdline.config_values(config)
    except TypeError:
        values = {}
    for source, keys in ((args_map or {}, names), (values, ['--' + name.replace('_', '-') for name in names])):
        for name in keys:
            if source.get(name) not in (None, ''):
                return source[name]
    return None


def nccl_port(setting, args_map, config, port):
    """The NCCL port of a server and whether the collection adds it.

    :param setting: ``service_nccl_port``: ``'auto'`` (the default: :func:`_network.default_nccl_port` of ``port``),
        an int (that port) or ``0`` (none added: SGLang picks one as it starts).
    :param args_map: the server's arguments (``argv_to_args`` of its command line); ``config``: its ``--config`` YAML
        (its text, or a mapping) or None. A ``--nccl-port`` there is kept as it is; a server with ``--dist-init-addr`` (a multi-node
        replica, whose ranks rendezvous there) gets none.
    :returns: {'nccl_port': int or None (the port the server binds, when known), 'nccl_port_argv': the arguments to
        add (``['--nccl-port', 'N']`` or [])}.
    :raises ValueError: a setting that is neither 'auto' nor an int from 0 to 65535.
    """
    given = _given(args_map, config, ('nccl-port', 'nccl_port'))
    if given is not None:
        try:
            return {'nccl_port': int(given), 'nccl_port_argv': []}
        except (TypeError, ValueError):
            return {'nccl_port': None, 'nccl_port_argv': []}
    if _given(args_map, config, ('dist-init-addr', 'dist_init_addr')) is not None:
        return {'nccl_port': None, 'nccl_port_argv': []}
    if setting == 'auto':
        pinned = _network.default_nccl_port(port)
    elif isinstance(setting, bool) or not isinstance(setting, int) or not 0 <= setting <= 65535:
        raise ValueError("service_nccl_port must be 'auto' or a port number (0: none), not %r" % (setting,))
    else:
        pinned = setting
    if not pinned:
        return {'nccl_port': None, 'nccl_port_argv': []}
    return {'nccl_port': pinned, 'nccl_port_argv': ['--nccl-port', str(pinned)]}


def socket_ifname(replica_address, environment, network):
    """The interface a replica node's Gloo and NCCL use.

    :param replica_address: ``service_replica_address`` (an IP address or a name).
    :param environment: the server's environment as the plan has it (the user's ``GLOO_SOCKET_IFNAME`` /
        ``NCCL_SOCKET_IFNAME`` win).
    :param network: host_facts' ``network`` ({'hostname', 'hostname_addresses', 'interfaces'}) or None (not read).
    :returns: {'socket_ifname': interface name or '', 'socket_env': {variable: name} to add, 'loopback': the
        loopback address the hostname resolves to first when nothing names an interface, else ''}.
    """
    set_by_user = dict((name, environment[name]) for name in _network.SOCKET_IFNAME_VARIABLES
                       if (environment or {}).get(name))
    if len(set_by_user) == len(_network.SOCKET_IFNAME_VARIABLES):
        return {'socket_ifname': set_by_user['GLOO_SOCKET_IFNAME'], 'socket_env': {}, 'loopback': ''}
    network = network or {}
    interfaces = network.get('interfaces') or {}
    resolved = list(network.get('hostname_addresses') or [])
    candidates = [str(replica_address)] + [address for address in resolved if not _network.is_loopback(address)]
    name = ''
    for address in candidates:
        found = _network.interface_of(address, interfaces)
        if found and not all(_network.is_loopback(held) for held in interfaces.get(found) or []):
            name = found
            break
    wanted = dict((variable, name) for variable in _network.SOCKET_IFNAME_VARIABLES
                  if variable not in set_by_user) if name else {}
    loopback = resolved[0] if resolved and _network.is_loopback(resolved[0]) and not name and not set_by_user else ''
    return {'socket_ifname': name or next(iter(set_by_user.values()), ''), 'socket_env': wanted, 'loopback': loopback}


def ports(inp, plan, facts, port_holders):
    """:func:`nccl_port` of the plan's server (``nccl_port``, ``nccl_port_argv``) and the listeners on that port that
    no replaced server owns (``nccl_port_holders``; ``port_holders(facts, port)`` is the plan's rule for its own
    port). The seed of a hand-started server (``nccl_port`` 0) keeps its command line as it runs."""
    try:
        found = nccl_port(inp.get('nccl_port', 0), plan['args_map'], plan['config'], plan['port'])
    except ValueError as exc:
        found = {'nccl_port': None, 'nccl_port_argv': [], 'nccl_port_problem': str(exc)}
    holders = port_holders(facts, found['nccl_port']) if found['nccl_port'] else []
    found['nccl_port_holders'] = [holder for holder in holders if not _declared_by_replaced(facts, holder)]
    return found


def _declared_by_replaced(facts, holder):
    """Whether a listener whose pid this run cannot see (another user's socket; root without CAP_SYS_PTRACE cannot
    read that user's /proc/PID/fd) is the NCCL port of a server this run replaces: one whose command line names that
    port with ``--nccl-port`` and that runs as the listener's user."""
    if holder.get('pid') is not None:
        return False
    for server in facts.get('servers') or []:
        declared = _server_args.argv_to_args(server.get('args') or []).get('nccl-port')
        same_user = holder.get('uid') is None or server.get('uid') is None or holder['uid'] == server['uid']
        if same_user and str(declared) == str(holder.get('port')):
            return True
    return False


def network(inp, plan, facts):
    """For a node of a multi-node replica (``host.replica_args`` set), :func:`socket_ifname` with its variables added
    to ``environment``: {'environment', 'socket_ifname', 'socket_loopback'}; {} for a single-node server."""
    if not (inp.get('host') or {}).get('replica_args'):
        return {'socket_ifname': '', 'socket_loopback': ''}
    found = socket_ifname(inp.get('replica_address') or '', plan['environment'], facts.get('network'))
    environment = dict(plan['environment'], **found['socket_env'])
    return {'environment': dict(sorted(environment.items())), 'socket_ifname': found['socket_ifname'],
            'socket_loopback': found['loopback']}


def hub_environment(plan):
    """The server's environment with the Hugging Face hub cache of the hand-started server it adopts (issue 28, item
    5): the unit runs with the service user's HOME (its passwd entry, systemd's and supervisord's), so a server started
    by hand with another HOME (or XDG_CACHE_HOME) would find its downloaded models gone and download them again, or
    fail offline. When the caches differ and the environment names none, HF_HOME (or the hub variable the hand-started
    server had) points at the old cache. Unchanged without an adopted server.

    :returns: the environment (dict, names in order).
    """
    adopted = plan.get('adopted') or {}
    environment = plan['environment']
    if not adopted or any(environment.get(name) for name in HUB_VARIABLES):
        return environment
    old_env = dict((key, value) for key, value in (adopted.get('env') or {}).items() if value != '********')
    old_home = old_env.get('HOME') or ('/root' if adopted.get('user') == 'root' else '')
    old_hub = _model_config.hub_cache_dir(old_env, old_home if old_home.startswith('/') else None)
    new_home = environment.get('HOME') or ('/root' if plan['user'] == 'root' else plan.get('home') or '')
    if not old_hub or old_hub == _model_config.hub_cache_dir(environment, new_home if new_home.startswith('/') else None):
        return environment
    carried = dict((name, old_env[name]) for name in HUB_VARIABLES if old_env.get(name))
    if not carried:
        carried = {'HF_HOME': old_hub[:-len('/hub')]}
    return dict(sorted(dict(environment, **carried).items()))


def adopted_caches(inp, plan):
    """The caches of the hand-started server the plan adopts, kept where it found them (issue 28, item 5):
    :func:`hub_environment`, then FlashInfer's, and the directories the unit's sandbox must let it write.

    FlashInfer keeps the kernels it downloads (``cubins``) and those it compiles (``<arch>/cached_ops``) under
    ``FLASHINFER_WORKSPACE_BASE/.cache/flashinfer``, the base defaulting to ``HOME`` (``flashinfer/jit/env.py``,
    FlashInfer 0.2-0.5: ``FLASHINFER_CACHE_DIR``; ``FLASHINFER_CUBIN_DIR`` or the ``flashinfer-cubin`` package name
    another place for the cubins). The collection's cache directory (``cache_environment``) would move the base, so a
    server started by hand would download its cubins again (or fail offline) and compile its kernels again at its
    first start under the unit. An adopted server keeps its base (the user is the hand-started server's own, so the
    cache is its), unless ``service_environment`` or the adopted environment names ``FLASHINFER_WORKSPACE_BASE``.

    :param inp: the role's inputs (``environment``: the user's ``service_environment``).
    :param plan: the plan so far (``adopted``, ``adopted_env``, ``environment``, ``cache_env``, ``user``, ``home``).
    :returns: ``{'environment': the environment (names in order), 'cache_write_paths': ['-DIR', ...]}``: the carried
        caches that the sandbox's ``ReadWritePaths=`` must name (``-``: a missing one is no error); [] when none moved.
    """
    environment = hub_environment(plan)
    adopted = plan.get('adopted') or {}
    writes = []
    if adopted and environment is not plan['environment']:
        writes.append('-' + _model_config.hub_cache_dir(environment, None))
    name = 'FLASHINFER_WORKSPACE_BASE'
    chosen = name in (inp.get('environment') or {}) or name in (plan.get('adopted_env') or {})
    if adopted and not chosen and environment.get(name) and environment.get(name) == plan['cache_env'].get(name):
        old_env = adopted.get('env') or {}
        old_home = old_env.get('HOME') if old_env.get('HOME') != '********' else ''
        old_home = old_home or ('/root' if adopted.get('user') == 'root' else '')
        if old_home.startswith('/') and '\n' not in old_home:
            environment = dict(sorted(dict(environment, **{name: old_home.rstrip('/') or '/'}).items()))
            writes.append('-%s/.cache/flashinfer' % old_home.rstrip('/'))
    covered = ('-/root/.cache/',) if plan.get('user') == 'root' else ()  # root's unit writes /root/.cache already
    return {'environment': environment,
            'cache_write_paths': [path for path in writes if len(path) > 2 and not path.startswith(covered)]}


def _check_offline_model(inp, plan, facts, seen):
    offline = [name for name in OFFLINE_VARIABLES
               if str(plan['environment'].get(name, '')).strip().lower() in ('1', 'true', 'yes', 'on')]
    info = ((seen or {}).get('info') or {})
    missing = [entry['ref'] for entry in info.get('model_configs') or []
               if isinstance(entry, dict) and entry.get('path') is None and 'Hugging Face cache' in (entry.get('note') or '')]
    if not offline or not missing:
        return ''
    return ('%s is set in the server\'s environment and %s is not in the Hugging Face cache %s that the server will use: '
            'it would fail to load after the old server stopped (an offline host is never sent to download). Point '
            'HF_HOME or HF_HUB_CACHE (service_environment) at the cache that holds it, download it there first, or '
            'give a local model-path. Nothing was changed or stopped.'
            % ('='.join((offline[0], plan['environment'][offline[0]])), ', '.join(missing), plan.get('hub_cache')))


def _check_nccl_port(inp, plan, facts, seen):
    if plan.get('nccl_port_problem'):
        return plan['nccl_port_problem'] + '.'
    holders = plan.get('nccl_port_holders') or []
    if not holders:
        return ''
    return ('NCCL port %s (--nccl-port, service_nccl_port) is held by %s: the new server would fail its NCCL '
            'rendezvous with EADDRINUSE after the old one stopped. Nothing was changed or stopped. Set service_nccl_port '
            'to a free port below the ephemeral range (net.ipv4.ip_local_port_range), or 0 to let SGLang pick one.'
            % (plan['nccl_port'], ', '.join(_holder_text(holder) for holder in holders)))


def _holder_text(holder):
    if holder.get('pid') is not None:
        return '%s (pid %s)' % (holder.get('process') or '?', holder['pid'])
    return ('a process of uid %s whose pid this run cannot see (root without CAP_SYS_PTRACE cannot read another '
            "user's /proc/PID/fd)" % holder.get('uid', '?'))


def _check_socket_ifname(inp, plan, facts, seen):
    if not plan.get('socket_loopback'):
        return ''
    network = facts.get('network') or {}
    return ("%s resolves to %s (loopback; a stock Debian or Ubuntu /etc/hosts line), and no interface holds this "
            "replica node's address %s: Gloo and NCCL would bind loopback and the other nodes never connect. Set "
            "service_replica_address to this host's address on the replica's network (the collection then sets "
            "GLOO_SOCKET_IFNAME and NCCL_SOCKET_IFNAME to its interface), or set both in service_environment. Nothing "
            "was changed or stopped." % (network.get('hostname') or 'The hostname', plan['socket_loopback'],
                                         inp.get('replica_address')))


CHECKS = ((CHECK_NCCL_PORT, _check_nccl_port), (CHECK_SOCKET_IFNAME, _check_socket_ifname),
          (CHECK_OFFLINE_MODEL, _check_offline_model))


def args_memo(plan, seen):
    """The command-line check's verdict the pre-flight's host read found in the check's memo (service_preflight_info,
    option args_check; issue 26), for exactly the check the plan asks - its interpreter (``command[0]``), ``argv_args``
    and ``sglang_env_names`` - when no check ran in this run yet (``seen['args_checked']``): the dict
    server_args_check returns (``cached`` true), or {} (no lookup, no settled verdict, another check, a check ran, or
    this run installs the wanted SGLang version: its own parser checks after the install).
    The role skips server_args_check where this is not empty."""
    seen = seen or {}
    if ran(seen.get('args_checked')):
        return {}
    found = ran(ran(seen.get('info')).get('args_check'))
    result = found.get('result')
    # A version this run installs is checked by its own parser after the install (the venv read may be an older one).
    if not hasattr(result, 'get') or result.get('cached') is not True or not plan.get('command') or plan.get('sglang_installs'):
        return {}
    asked = _args_check_cache.request_digest(plan['command'][0], plan['argv_args'], plan['sglang_env_names'])
    return dict(result) if found.get('request') == asked else {}


def run_notes(inp, plan, facts):
    """What the service role shows before it writes (one task, nothing when the list is empty): how each stray server
    the facts saw differs from the unit (a dict: ``server``, ``argv``, ``unit``, ``difference`` - the ``args_diff`` of
    its arguments and the unit's - and ``same_interpreter``), the adopted variables masked as secrets that were not
    copied, and the ``SGLANG_*`` names the installed SGLang does not read (left out of the environment file).

    :returns: list of dicts and str.
    """
    notes = []
    command = [str(token) for token in plan['command'] or []]
    for stray in facts.get('strays') or []:
        stray = stray if isinstance(stray, dict) else {}
        notes.append({
            'server': 'pid %s on port %s' % (stray.get('main_pid'), stray.get('port')),
            'argv': ' '.join(str(token) for token in stray.get('argv') or []),
            'unit': ' '.join(command),
            'difference': _server_args.diff_args(_server_args.argv_to_args(stray.get('args') or []), plan['args_map']),
            'same_interpreter': bool(command) and stray.get('executable') == command[0],
        })
    if plan['masked_names']:
        notes.append("The hand-started server's environment holds %s, which look like secrets; they are not copied. Set "
                     'them in service_environment (kept in the 0600 environment file).' % ', '.join(plan['masked_names']))
    unread = plan['env_unread']
    if unread:
        one = len(unread) == 1
        notes.append('%s %s left out of %s: SGLang %s does not read %s (no source of its sglang package in %s mentions %s).'
                     % (', '.join(unread), 'is' if one else 'are', inp['env_file'], plan['sglang']['version'],
                        'it' if one else 'them', plan['sglang']['venv'], 'it' if one else 'them'))
    return notes
