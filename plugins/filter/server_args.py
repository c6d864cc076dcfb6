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


from ansible_collections.inferops.sglang.plugins.plugin_utils._filters import as_filter
from ansible_collections.inferops.sglang.plugins.module_utils._server_args import (
    args_to_argv,
    argv_to_args,
    diff_args,
    invalid_environment,
    nccl_profile,
    no_proxy_env,
    topology_defaults,
)


class FilterModule(object):
    """SGLang server-argument filters."""

    def filters(self):
        return {
            'server_argv': as_filter(args_to_argv),
            'argv_to_args': as_filter(argv_to_args),
            'args_diff': as_filter(diff_args),
            'topology_defaults': as_filter(topology_defaults),
            'nccl_profile': as_filter(nccl_profile),
            'no_proxy_env': as_filter(no_proxy_env),
            'invalid_env': as_filter(invalid_environment),
        }
