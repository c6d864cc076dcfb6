# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Writing the files of fake host trees (toolkits, interpreters, /etc, /run) in unit tests."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os


def write(path, content='', mode=None):
    """Write ``content`` to ``path``, creating its directory; ``mode`` (an int) is applied when given."""
    d = os.path.dirname(str(path))
    if not os.path.isdir(d):
        os.makedirs(d)
    with open(str(path), 'w') as f:
        f.write(content)
    if mode is not None:
        os.chmod(str(path), mode)
