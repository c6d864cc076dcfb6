# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``patch_module_args(args)``: a context in which ``AnsibleModule`` reads ARGS (a dict) as its module arguments;
``module_result(monkeypatch, main, params)``: run a module's ``main()`` and return what it exits with.

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


class ModuleDone(Exception):
    """Raised by ``module_result`` in place of ``exit_json`` / ``fail_json``; ``args[0]`` is the result (dict)."""


def module_result(monkeypatch, main, params, check_mode=False):
    """Run MAIN (a module's ``main()``) with PARAMS (dict) as its arguments, in check mode if CHECK_MODE, and return
    the result it exits with (dict; ``failed`` false from ``exit_json``, true with ``msg`` from ``fail_json``)."""
    from ansible.module_utils import basic as module_basic
    import pytest

    def exit_json(self, **kwargs):
        raise ModuleDone(dict(kwargs, failed=False))

    def fail_json(self, msg, **kwargs):
        raise ModuleDone(dict(kwargs, msg=msg, failed=True))

    monkeypatch.setattr(module_basic.AnsibleModule, 'exit_json', exit_json)
    monkeypatch.setattr(module_basic.AnsibleModule, 'fail_json', fail_json)
    if check_mode:
        params = dict(params, _ansible_check_mode=True)
    with patch_module_args(params):
        with pytest.raises(ModuleDone) as info:
            main()
    return info.value.args[0]


__all__ = ['patch_module_args', 'module_result']
