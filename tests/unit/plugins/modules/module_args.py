# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``patch_module_args(args)``: a context in which ``AnsibleModule`` reads ARGS (a dict) as its module arguments.

ansible-core 2.19 and later have it as ``ansible.module_utils.testing.patch_module_args``; for older releases
(the collection supports 2.16 on) the same is done here the way those releases read their arguments.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

try:
    from ansible.module_utils.testing import patch_module_args
except ImportError:  # ansible-core before 2.19
    import contextlib
    import json

    from ansible.module_utils import basic
    from ansible.module_utils.common.text.converters import to_bytes
    from unittest import mock

    @contextlib.contextmanager
    def patch_module_args(args=None):
        """Expose ARGS (a dict or None) to the AnsibleModule instances created within this context."""
        if not isinstance(args, (dict, type(None))):
            raise TypeError("The `args` arg must be a dict or None.")
        with mock.patch.object(basic, '_ANSIBLE_ARGS', to_bytes(json.dumps({'ANSIBLE_MODULE_ARGS': args or {}}))):
            yield

__all__ = ['patch_module_args']
