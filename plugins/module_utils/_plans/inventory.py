# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""Reading other hosts' variables (Ansible's ``hostvars``) for the plans that span hosts (fleet, router, URLs)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


def host_var(hostvars, host, name, default=None):
    """``hostvars[host][name]``; ``default`` when the host or the variable is missing, or the value is None.

    :param hostvars: a mapping of host names to mappings of variables (Ansible's ``hostvars``), or anything else
        (then ``default``).
    """
    try:
        value = hostvars[host].get(name, default)
    except (KeyError, AttributeError, TypeError):
        return default
    return default if value is None else value
