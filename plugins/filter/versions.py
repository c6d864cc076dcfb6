# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters for the versions of a deployed configuration (known-good manifest, deployment record).

The logic lives in the private module_utils ``_versions``; these are thin wrappers.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.inferops.sglang.plugins.module_utils import _versions


def deployed_versions(command, facts, sglang=None):
    """``cutover_service.command | inferops.sglang.deployed_versions(facts, cutover_service.sglang | default({}))``;
    see ``_versions.deployed_versions``."""
    try:
        return _versions.deployed_versions(command, facts, sglang)
    except TypeError as exc:
        raise AnsibleFilterError('deployed_versions: %s' % exc)


def versions_change(previous, current):
    """``previous_versions | inferops.sglang.versions_change(versions)``; see ``_versions.versions_change``."""
    try:
        return _versions.versions_change(previous, current)
    except TypeError as exc:
        raise AnsibleFilterError('versions_change: %s' % exc)


class FilterModule(object):
    """Versions of a deployed configuration."""

    def filters(self):
        return {
            'deployed_versions': deployed_versions,
            'versions_change': versions_change,
        }
