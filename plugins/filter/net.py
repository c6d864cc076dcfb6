# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters about where a server or a router is reached: the one URL rule of the collection.

The logic lives in the private module_utils ``_http`` (the probe address and the ``host:port`` join, which the modules
use too) and ``_plans/urls`` (port and scheme of a server, its worker URL, a router's URL); these are thin wrappers.
The filter ``worker_urls`` (plugins/filter/fleet.py) lists the worker URLs of a group with the same rule.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.inferops.sglang.plugins.module_utils import _http
from ansible_collections.inferops.sglang.plugins.module_utils._plans import urls
from ansible_collections.inferops.sglang.plugins.plugin_utils._filters import as_filter


class FilterModule(object):
    """Address filters."""

    def filters(self):
        return {
            'probe_url': as_filter(_http.base_url, 'probe_url'),
            'host_port': as_filter(_http.host_port, 'host_port'),
            'server_endpoint': as_filter(urls.server_endpoint, 'server_endpoint'),
            'worker_url': as_filter(urls.worker_url, 'worker_url'),
            'router_scheme': as_filter(urls.router_scheme, 'router_scheme'),
            'router_url': as_filter(urls.router_url, 'router_url'),
        }
