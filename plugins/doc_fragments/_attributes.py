# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this doc fragment is private to the inferops.sglang collection; it can change at any time.

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


class ModuleDocFragment(object):

    # The attribute descriptions; every module sets the support levels itself or through the
    # fragments below.
    DOCUMENTATION = r'''
options: {}
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
  platform:
    description: Target OS/families that can be operated against.
    support: N/A
'''

    # For modules that only read: use together with the standard fragment.
    INFO_MODULE = r'''
options: {}
attributes:
  check_mode:
    support: full
    details:
      - This action does not modify state.
  diff_mode:
    support: none
    details:
      - This action does not modify state.
'''

    # Linux hosts, read through /proc.
    PLATFORM_LINUX_PROC = r'''
options: {}
attributes:
  platform:
    platforms: posix
    details:
      - Linux only; processes are read from C(/proc) (no psutil needed).
'''
