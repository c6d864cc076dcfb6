# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this plugin_utils is private to the inferops.sglang collection; it can change at any time.
"""What every filter plugin file of the collection shares: a module_utils function exposed as a filter."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleFilterError


def as_filter(func, name=None):
    """The filter ``name`` (default: ``func.__name__``) calling ``func``; its ValueError and TypeError (the errors
    of the collection's pure functions, which include the writers' Unwritable) become AnsibleFilterError with the
    filter's name in front, so a play fails naming the filter instead of with a Python traceback."""
    name = name or func.__name__

    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except (ValueError, TypeError) as exc:
            raise AnsibleFilterError('%s: %s' % (name, exc))

    wrapper.__name__ = name
    wrapper.__doc__ = func.__doc__
    return wrapper
