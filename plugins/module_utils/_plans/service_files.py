# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""The service plan's files: what the service manager runs (the systemd unit, or the supervisord program and its
wrapper), the supervisord fallback's boot job, and every path the service role renders, whose state the pre-flight
reads so that a converged host is neither verified nor written again (filter ``rendered_current``). Called by
:func:`service.service_plan`.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.inferops.sglang.plugins.module_utils._sandbox import security_exposure
from ansible_collections.inferops.sglang.plugins.module_utils._plans.values import as_dict, ran, seconds

# The modules the server's logging configuration imports, as the service role installs them into LOG_MODULE_DIR.
LOG_MODULES = ('inferops_sglang_log.py', 'inferops_sglang_secrets.py')


def boot(facts, supervisord_command):
    """(boot_file, boot_job) of the supervisord fallback from the facts' cron daemon."""
    cron = (facts.get('init') or {}).get('cron') or {}
    if cron.get('reads_cron_d'):
        boot_file = '/etc/cron.d/inferops-sglang'
    elif cron.get('crontabs_dir') is not None:
        boot_file = '%s/root' % cron['crontabs_dir']
    else:
        boot_file = ''
    prefix = ('rm -f %s; ' % cron.get('reboot_marker')) if cron.get('reboot_marker_persists') else ''
    return boot_file, prefix + supervisord_command


def manager_files(inp, plan):
    """The files the service manager reads: ``[{'src': path, 'mode', 'template'}]``, the one to verify last."""
    if plan['manager'] == 'systemd':
        return [{'src': '/etc/systemd/system/' + plan['unit'], 'mode': '0644', 'template': 'sglang.service.j2'}]
    return [{'src': plan['wrapper'], 'mode': '0755', 'template': 'sglang-run.sh.j2'},
            {'src': '%s/%s.conf' % (plan['supervisor_dir'], inp['name']), 'mode': '0644',
             'template': 'supervisor-program.conf.j2'}]


def rendered_paths(inp, plan):
    """Every path the service role renders, in the order it renders them: the cache directory (when set), the
    environment file's and the logging modules' directories, the environment file, the logging configuration and its
    modules, SGLang's secret ``--config`` file, and the service manager's files (``plan['files']``).

    A path left out here only costs a write call on a converged host (``rendered_current`` counts it as not current),
    never a missed change.
    """
    log_dir = plan['log_module_dir']
    return (([inp['cache_dir']] if inp['cache_dir'] else [])
            + [os.path.dirname(inp['env_file']), log_dir, inp['env_file'], plan['log_config_file']]
            + ['%s/%s' % (log_dir, name) for name in LOG_MODULES] + [inp['config_file']]
            + [entry['src'] for entry in plan['files']])


# The oldest unit status (seconds since the pre-flight's read) the service role hands to the cutover: a converged host
# publishes its output a second or two after its read; a host whose batch waited for another's install, or for a
# parser check that imports torch, reads the unit again in the cutover.
STATUS_MAX_AGE_S = 10.0


def service_steps(manager, env_files, config_file, manager_files, unit_read=None, installed=False, read_age=None):
    """What the service role's change steps saw, for its declared output ``inferops_sglang_service`` (filter
    ``service_steps``; the plan's ``output`` holds the rest).

    :param manager: ``systemd`` or ``supervisord``.
    :param env_files: the registered result of the environment/logging write (service_files; skipped on a converged
        host). :param config_file: the secret ``--config`` file's (ansible.builtin.template).
    :param manager_files: the unit's write (service_files with ``exposure: true``), or the supervisord program's.
    :param unit_read: the pre-flight read's ``unit`` (``exposure``: ``systemd-analyze security`` output; ``status``:
        the unit's ``ActiveState``, ``MainPID``, ... as ``systemctl show`` printed them), which stands for the unit's
        write where that was skipped (the unit was as rendered: the same measure it would have returned).
    :param installed: whether this run installed an SGLang version (``python_venv``; minutes may have passed since the
        read).
    :param read_age: seconds since the pre-flight's read returned (the controller's clock), None when unknown.
    :returns: dict - ``exposure``: ``{'before', 'after'}``, each ``security_exposure``'s ``{'score', 'level'}`` or
        None, under systemd ({} under supervisord); ``changed``: bool, whether a file the server reads changed (the
        environment or logging files, the secret ``--config`` file, the unit or program; not a directory);
        ``unit_status``: the read's ``status`` where it still stands - under systemd, when no file the server reads
        changed, the unit's write was skipped, nothing was installed and the read is at most ``STATUS_MAX_AGE_S``
        seconds old (a converged host: seconds of the controller's own work since the read, nothing handed to
        systemd), so the cutover need not read it again; else {} (the cutover reads the unit's status itself).
    """
    env_files, config_file, written = ran(env_files), ran(config_file), ran(manager_files)
    exposure, unit_status = {}, {}
    changed = bool(env_files.get('files_changed') or config_file.get('changed') or written.get('files_changed'))
    if manager == 'systemd':
        measured = written or {'exposure': {'before': as_dict(unit_read).get('exposure') or '', 'after': None}}
        exposure = {'before': security_exposure(measured, 'before'), 'after': security_exposure(measured, 'after')}
        age = seconds(read_age)
        if not (changed or written or installed) and age is not None and 0 <= age <= STATUS_MAX_AGE_S:
            unit_status = dict(as_dict(as_dict(unit_read).get('status')))
    return {'exposure': exposure, 'changed': changed, 'unit_status': unit_status}
