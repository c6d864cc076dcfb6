# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The filter ``service_plan``: the service role's values and pre-flight problems in one call. The rule is
``_plans.service.service_plan``; the contract is in ``plugins/filter/service_plan.yml``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.inferops.sglang.plugins.plugin_utils._filters import as_filter
from ansible_collections.inferops.sglang.plugins.module_utils._plans.service import service_plan
from ansible_collections.inferops.sglang.plugins.module_utils._plans.deployed import service_deployed


class FilterModule(object):
    """The service role's plan."""

    def filters(self):
        return {'service_plan': as_filter(service_plan), 'service_deployed': as_filter(service_deployed)}
