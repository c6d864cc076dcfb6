# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""The pre-flight problems of the plans: their shape and the one message that lists them (filter preflight_message)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


def problem(check, message):
    """One pre-flight problem: ``{'check': check, 'message': message}`` (the check's name - one troubleshooting entry
    each - and what is wrong and what to do)."""
    return {'check': check, 'message': message.strip()}


def preflight_message(problems, host):
    """The failure message of a pre-flight: how many checks failed on ``host``, then each as ``[check] message``.

    :param problems: list of dicts ``check`` and ``message`` (a plan's ``problems``).
    :param host: the inventory name (str).
    :returns: str (one line per problem after the first line, joined by spaces for Ansible's one-line output).
    """
    lines = ['%d pre-flight check(s) failed on %s; nothing was changed.' % (len(problems), host)]
    lines.extend('[%s] %s' % (item['check'], item['message']) for item in problems)
    return ' '.join(lines)
