# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The modules under test run as they do on a managed host, whatever else the test session imported.

Importing controller code (a filter plugin's ``ansible.errors``, say, in tests/unit/plugins/filter) marks the
process as the controller, and from then on ``AnsibleModule.warn`` prints warnings through the controller's
display instead of returning them with the module result; on a managed host that never happens.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible.module_utils import _internal


@pytest.fixture(autouse=True)
def module_side(monkeypatch):
    monkeypatch.setattr(_internal, 'is_controller', False)
