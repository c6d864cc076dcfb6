# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters that expose the collection's rules to roles, so that no rule is written twice.

Each rule has one home in the private module_utils, where the modules use it too: secrets in
``_secrets`` (``secret_flags``, ``redact_args``, ``redact_env``), server settings and GPU counts in
``_server_process.cmdline`` (``server_settings``, ``gpus_needed``), service states in ``_supervisors``
(``service_active``), the confinement of a service in ``_sandbox`` (``sandbox_directives``,
``cache_environment``, ``gpu_device_access``, ``security_exposure``) and the systemd version in ``_host_init``
(``systemd_version``). These are thin wrappers; the contracts are in each filter's documentation
(``plugins/filter/<name>.yml``) and in the docstrings of the functions.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.inferops.sglang.plugins.module_utils import _host_init, _sandbox, _secrets, _supervisors
from ansible_collections.inferops.sglang.plugins.module_utils._server_process import cmdline


def _wrap(func, name):
    """The filter ``name`` calling ``func``: its ValueError and TypeError become AnsibleFilterError."""
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except (ValueError, TypeError) as exc:
            raise AnsibleFilterError('%s: %s' % (name, exc))

    wrapper.__name__ = name
    wrapper.__doc__ = func.__doc__
    return wrapper


def _complete_settings(args):
    """``cmdline.server_settings`` of a mapping or an argv list, refusing values that are not integers."""
    if not hasattr(args, 'items') and not isinstance(args, (list, tuple)):
        raise TypeError('expected a mapping of arguments or an argv list, got %s' % type(args).__name__)
    settings = cmdline.server_settings(args)
    for name in ('port', 'tp', 'dp', 'pp'):
        if settings[name] is None:
            raise ValueError('the %s of these arguments is not an integer' % name)
    return settings


def _environment_without_secrets(env):
    """``_secrets.redact_env`` without the list of names hidden: the environment, secret values masked."""
    if not hasattr(env, 'items'):
        raise TypeError('expected a mapping of environment variables, got %s' % type(env).__name__)
    return _secrets.redact_env(env)[0]


class FilterModule(object):
    """The collection's rules, for roles."""

    def filters(self):
        return {
            'secret_flags': _wrap(_secrets.secret_flags, 'secret_flags'),
            'redact_args': _wrap(_secrets.redact_args, 'redact_args'),
            'redact_env': _wrap(_environment_without_secrets, 'redact_env'),
            'gpus_needed': _wrap(cmdline.gpus_needed, 'gpus_needed'),
            'server_settings': _wrap(_complete_settings, 'server_settings'),
            'service_active': _wrap(_supervisors.service_active, 'service_active'),
            'sandbox_directives': _wrap(_sandbox.sandbox_directives, 'sandbox_directives'),
            'cache_environment': _wrap(_sandbox.cache_environment, 'cache_environment'),
            'gpu_device_access': _wrap(_sandbox.gpu_device_access, 'gpu_device_access'),
            'security_exposure': _wrap(_sandbox.security_exposure, 'security_exposure'),
            'systemd_version': _wrap(_host_init.parse_systemctl_version, 'systemd_version'),
        }
