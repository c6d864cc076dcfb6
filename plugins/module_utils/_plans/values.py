# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""How the plans read values handed in from Ansible: a mapping that may be missing, a truth value that may be text."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.module_utils.parsing.convert_bool import boolean


def as_dict(value):
    """A mapping as a dict (a copy); anything else (None, undefined, a string where a mapping belongs) as {}."""
    return dict(value) if hasattr(value, 'items') else {}


def seconds(value):
    """A number of seconds as float, or None (missing, empty, not a number)."""
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return None


def jinja_int(value, default=0):
    """A value as Jinja's ``int`` filter reads it: an integer, a float's whole part, numeric text; ``default`` for
    anything else (None, other text, an infinite or overflowing number)."""
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        try:
            return int(float(value))
        except (TypeError, ValueError, OverflowError):
            return default


def ran(result):
    """A registered task result that ran, as it is; {} for one that was skipped (Ansible's truth rule), or for None or
    anything that is no mapping (a task not reached, passed as none)."""
    return result if hasattr(result, 'get') and not truth(result.get('skipped')) else {}


def truth(value):
    """Ansible's truth rule (the ``bool`` filter): True, 1, 'yes', 'on', 'true', 't', 'y', '1' (any case, text
    stripped) are true; anything else - None, 'false', '', 2 - is false, and so is a list or mapping. Values templated as text on ansible-core
    before 2.19 ('False') read as they were meant."""
    if isinstance(value, (list, dict, set)):
        # ansible-core before 2.19 raises on unhashable values; a list or mapping is no truth value.
        return False
    return boolean(value.strip() if isinstance(value, str) else value, strict=False)
