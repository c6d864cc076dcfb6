# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters that hold the roles' decisions (plans): each registered under its function's name.

The logic lives in the private module_utils package ``_plans``; these are thin wrappers.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.inferops.sglang.plugins.plugin_utils._filters import as_filter
from ansible_collections.inferops.sglang.plugins.module_utils._plans.cutover import (
    cutover_check_failure,
    cutover_dark_window,
    cutover_decide,
    cutover_failure,
    cutover_gives_back_lock,
    cutover_inputs,
    cutover_known_status,
    cutover_outcome,
    cutover_record,
    cutover_replica,
    cutover_status_router,
)
from ansible_collections.inferops.sglang.plugins.module_utils._plans.cutover_host import cutover_preflight, cutover_strays_ruled_out
from ansible_collections.inferops.sglang.plugins.module_utils._plans.cuda_env import cuda_env_plan, cuda_env_secrets
from ansible_collections.inferops.sglang.plugins.module_utils._plans.facts import facts_summary
from ansible_collections.inferops.sglang.plugins.module_utils._plans.inventory import replica_args
from ansible_collections.inferops.sglang.plugins.module_utils._plans.known_good import cutover_known_good, known_good_manifest
from ansible_collections.inferops.sglang.plugins.module_utils._plans.problems import preflight_message
from ansible_collections.inferops.sglang.plugins.module_utils._plans.service_files import service_steps


class FilterModule(object):
    """Plan filters."""

    def filters(self):
        return {
            'cutover_decide': as_filter(cutover_decide),
            'cutover_replica': as_filter(cutover_replica),
            'cutover_check_failure': as_filter(cutover_check_failure),
            'cutover_dark_window': as_filter(cutover_dark_window),
            'cutover_outcome': as_filter(cutover_outcome),
            'cutover_preflight': as_filter(cutover_preflight),
            'cutover_record': as_filter(cutover_record),
            'cutover_inputs': as_filter(cutover_inputs),
            'cutover_known_status': as_filter(cutover_known_status),
            'cutover_known_good': as_filter(cutover_known_good),
            'cutover_failure': as_filter(cutover_failure),
            'cutover_gives_back_lock': as_filter(cutover_gives_back_lock),
            'cutover_status_router': as_filter(cutover_status_router),
            'cutover_strays_ruled_out': as_filter(cutover_strays_ruled_out),
            'replica_args': as_filter(replica_args),
            'known_good_manifest': as_filter(known_good_manifest),
            'cuda_env_plan': as_filter(cuda_env_plan),
            'cuda_env_secrets': as_filter(cuda_env_secrets),
            'preflight_message': as_filter(preflight_message),
            'facts_summary': as_filter(facts_summary),
            'service_steps': as_filter(service_steps),
        }
