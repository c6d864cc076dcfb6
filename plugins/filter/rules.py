# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters that expose the collection's rules to roles, so that no rule is written twice.

Each rule has one home in the private module_utils, where the modules use it too: secrets in
``_secrets`` (``secret_flags``, ``redact_args``, ``redact_env``), server settings and GPU counts in
``_server_process.cmdline`` (``server_settings``, ``gpus_needed``), which GPU state blocks a (re)start or a tp
from the GPU count in ``_nvidia_smi`` (``gpu_blockers``, ``tp_unusable_reason``), service states in ``_supervisors``
(``service_active``), the confinement of a service in ``_sandbox`` (``sandbox_directives``,
``cache_environment``, ``gpu_device_access``, ``security_exposure``), the systemd version in ``_host_init``
(``systemd_version``) and the proof that a spawned child of the server's interpreter sees the CUDA/NCCL variables in
``_python_probe`` (``spawn_probe_argv``, ``spawn_env_missing``), when a running server is degraded in ``_health``
(``scheduler_shortfall``), the versions of a deployed configuration in ``_versions`` (``deployed_versions``,
``versions_change``), the wanted SGLang version and its venv in ``_sglang_venvs`` (``sglang_requirement``), and the
server's own logging in ``_server_log`` (``server_log_config``, ``server_log_environment``), and what a model's
config.json allows in ``_model_config`` (``model_tp_problems``), and whether rendered files are already as they
should be in ``_managed_files`` (``rendered_current``).
These are thin wrappers; the contracts are in each filter's documentation
(``plugins/filter/<name>.yml``) and in the docstrings of the functions.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


from ansible_collections.inferops.sglang.plugins.plugin_utils._filters import as_filter
from ansible_collections.inferops.sglang.plugins.module_utils import (
    _health, _host_init, _managed_files, _model_config, _nvidia_smi, _python_probe, _sandbox, _secrets, _server_log, _sglang_venvs, _supervisors,
    _versions)
from ansible_collections.inferops.sglang.plugins.module_utils._server_process import cmdline, identity


def _complete_settings(args, config=None):
    """``cmdline.server_settings`` of a mapping or an argv list (and its --config file), refusing values that are
    not integers."""
    if not hasattr(args, 'items') and not isinstance(args, (list, tuple)):
        raise TypeError('expected a mapping of arguments or an argv list, got %s' % type(args).__name__)
    settings = cmdline.server_settings(args, config)
    for name in ('port', 'tp', 'dp', 'pp'):
        if settings[name] is None:
            raise ValueError('the %s of these arguments is not an integer' % name)
    return settings


def _tp_unusable_reason(facts):
    """``_nvidia_smi.tp_unusable_reason`` as text: why the GPU count must not become a tp, '' when it may."""
    if facts is not None and not hasattr(facts, 'get'):
        raise TypeError('expected the host facts (a mapping), got %s' % type(facts).__name__)
    return _nvidia_smi.tp_unusable_reason(facts) or ''


def _environment_without_secrets(env):
    """``_secrets.redact_env`` without the list of names hidden: the environment, secret values masked."""
    if not hasattr(env, 'items'):
        raise TypeError('expected a mapping of environment variables, got %s' % type(env).__name__)
    return _secrets.redact_env(env)[0]


def _argv_without_secrets(argv):
    """``_secrets.redact_argv`` for a list of argv words: secret values and URL passwords masked."""
    if not isinstance(argv, (list, tuple)):
        raise TypeError('expected a command line as a list of words, got %s' % type(argv).__name__)
    return _secrets.redact_argv(argv)


def _secret_env_names(env):
    """``_secrets.redact_env``'s list of names hidden: the variables named like secrets or holding a URL password."""
    if not hasattr(env, 'items'):
        raise TypeError('expected a mapping of environment variables, got %s' % type(env).__name__)
    return _secrets.redact_env(env)[1]


def _server_log_config(args, config=None):
    """``_server_log.logging_config`` for a server's arguments (and its --config file): its ``--log-level``."""
    if not hasattr(args, 'items') and not isinstance(args, (list, tuple)):
        raise TypeError('expected a mapping of arguments or an argv list, got %s' % type(args).__name__)
    return _server_log.logging_config(cmdline.log_level(args, config))


def _server_log_environment(environment, config_path, module_dir, command=None):
    """``_server_log.server_environment``, nothing added when the command's interpreter ignores PYTHONPATH."""
    return _server_log.server_environment(environment, config_path, module_dir, cmdline.ignores_pythonpath(command))


class FilterModule(object):
    """The collection's rules, for roles."""

    def filters(self):
        return {
            'secret_flags': as_filter(_secrets.secret_flags, 'secret_flags'),
            'redact_args': as_filter(_secrets.redact_args, 'redact_args'),
            'redact_env': as_filter(_environment_without_secrets, 'redact_env'),
            'secret_env_names': as_filter(_secret_env_names, 'secret_env_names'),
            'redact_argv': as_filter(_argv_without_secrets, 'redact_argv'),
            'gpus_needed': as_filter(cmdline.gpus_needed, 'gpus_needed'),
            'server_settings': as_filter(_complete_settings, 'server_settings'),
            'service_active': as_filter(_supervisors.service_active, 'service_active'),
            'systemd_reading': as_filter(_supervisors.systemd_reading, 'systemd_reading'),
            'sandbox_directives': as_filter(_sandbox.sandbox_directives, 'sandbox_directives'),
            'cache_environment': as_filter(_sandbox.cache_environment, 'cache_environment'),
            'gpu_device_access': as_filter(_sandbox.gpu_device_access, 'gpu_device_access'),
            'security_exposure': as_filter(_sandbox.security_exposure, 'security_exposure'),
            'systemd_version': as_filter(_host_init.parse_systemctl_version, 'systemd_version'),
            'spawn_probe_argv': as_filter(_python_probe.spawn_probe_argv, 'spawn_probe_argv'),
            'spawn_env_missing': as_filter(_python_probe.spawn_env_missing, 'spawn_env_missing'),
            'scheduler_shortfall': as_filter(_health.scheduler_shortfall, 'scheduler_shortfall'),
            'gpu_blockers': as_filter(_nvidia_smi.gpu_blockers, 'gpu_blockers'),
            'foreign_conflicts': as_filter(identity.foreign_conflicts, 'foreign_conflicts'),
            'tp_unusable_reason': as_filter(_tp_unusable_reason, 'tp_unusable_reason'),
            'deployed_versions': as_filter(_versions.deployed_versions, 'deployed_versions'),
            'versions_change': as_filter(_versions.versions_change, 'versions_change'),
            'sglang_requirement': as_filter(_sglang_venvs.sglang_requirement, 'sglang_requirement'),
            'server_log_config': as_filter(_server_log_config, 'server_log_config'),
            'server_log_environment': as_filter(_server_log_environment, 'server_log_environment'),
            'model_tp_problems': as_filter(_model_config.tp_problems, 'model_tp_problems'),
            'rendered_current': as_filter(_managed_files.rendered_current, 'rendered_current'),
        }
