# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters about where a server is reached.

The logic lives in the private module_utils ``_http`` (the modules use the same functions); these are thin wrappers.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.inferops.sglang.plugins.module_utils import _http


def probe_url(host, port, scheme='http'):
    """``'0.0.0.0' | inferops.sglang.probe_url(30000)`` -> ``http://127.0.0.1:30000``.

    The base URL to probe a server that binds ``host`` on ``port``: a wildcard bind (``0.0.0.0``, empty) is
    probed on ``127.0.0.1``, ``::`` on ``::1``, IPv6 literals are bracketed.
    """
    try:
        return _http.base_url(host, port, scheme)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError('probe_url: %s' % exc)


class FilterModule(object):
    """Address filters."""

    def filters(self):
        return {
            'probe_url': probe_url,
        }
