# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters that turn SGLang server arguments into command lines and back (the quoting of unit lines and
environment files is in the filter file writers.py).

The logic lives in the private module_utils ``_server_args``; these are thin wrappers.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.inferops.sglang.plugins.module_utils._server_args import (
    args_to_argv,
    argv_to_args,
    diff_args,
    invalid_environment,
    nccl_profile,
    no_proxy_env,
    topology_defaults,
)


def _wrap(func):
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except (ValueError, TypeError) as exc:
            raise AnsibleFilterError('%s: %s' % (func.__name__, exc))

    wrapper.__name__ = func.__name__
    wrapper.__doc__ = func.__doc__
    return wrapper


class FilterModule(object):
    """SGLang server-argument filters."""

    def filters(self):
        return {
            'server_argv': _wrap(args_to_argv),
            'argv_to_args': _wrap(argv_to_args),
            'args_diff': _wrap(diff_args),
            'topology_defaults': _wrap(topology_defaults),
            'nccl_profile': _wrap(nccl_profile),
            'no_proxy_env': _wrap(no_proxy_env),
            'invalid_env': _wrap(invalid_environment),
        }
