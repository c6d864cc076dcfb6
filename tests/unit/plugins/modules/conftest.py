# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The modules under test run as they do on a managed host, whatever else the test session imported.

Importing controller code (a filter plugin's ``ansible.errors``, say, in tests/unit/plugins/filter) marks the
process as the controller, and from then on ``AnsibleModule.warn`` prints warnings through the controller's
display instead of returning them with the module result; on a managed host that never happens.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

try:
    from ansible.module_utils import _internal
except ImportError:  # ansible-core 2.17 and older
    _internal = None


@pytest.fixture(autouse=True)
def module_side(monkeypatch):
    # ansible-core 2.19 and later have the switch; before, a module's warnings always go with its result.
    if hasattr(_internal, 'is_controller'):
        monkeypatch.setattr(_internal, 'is_controller', False)
