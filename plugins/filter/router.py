# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The router role's plan as a filter (``router_plan``); the rule is ``module_utils/_plans/router.router_plan``, the
contract in ``plugins/filter/router_plan.yml``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.inferops.sglang.plugins.module_utils._plans import router
from ansible_collections.inferops.sglang.plugins.plugin_utils._filters import as_filter


class FilterModule(object):
    """The router role's plan."""

    def filters(self):
        return {
            'router_plan': as_filter(router.router_plan, 'router_plan'),
        }
