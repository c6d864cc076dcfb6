# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""The cuda_env role's decisions, as pure functions (filter cuda_env_secrets)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.inferops.sglang.plugins.module_utils._secrets import redact_env


def cuda_env_secrets(settings):
    """The variables of the CUDA/NCCL environment that look like secrets (by the name, or a password in a URL of the
    value; the rule of ``_secrets.redact_env``): they would be written to files every local user can read.

    :param settings: dict of role variable name (``cuda_env_variables``, ``cuda_env_nccl``, ``cuda_env_extra``) to
        its dict of environment variables, in the order to report them.
    :returns: list of ``setting.NAME`` strings (empty: none); never a value.
    :raises TypeError: when a setting is not a mapping.
    """
    found = []
    for setting, env in settings.items():
        if not hasattr(env, 'items'):
            raise TypeError('%s: expected a mapping of environment variables, got %s' % (setting, type(env).__name__))
        found.extend('%s.%s' % (setting, name) for name in redact_env(env)[1])
    return found
