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
