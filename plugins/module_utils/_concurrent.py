# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""Run independent reads side by side in one module call (threads; the standard library only).

A module that asks a host several independent questions (``nvidia-smi`` calls, an interpreter probe, an HTTP
probe) waits for the slowest instead of their sum: on an 8-GPU host each ``nvidia-smi`` call takes a few hundred
milliseconds.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import sys
import threading


class Background(object):
    """``func(*args, **kwargs)`` started in a daemon thread at once; ``result()`` waits for it.

    ``result()`` returns what ``func`` returned, or raises the exception it raised (with its traceback), so that
    a caller reads it exactly as if it had called ``func`` itself at that point.
    """

    def __init__(self, func, *args, **kwargs):
        self._value = None
        self._error = None
        self._thread = threading.Thread(target=self._run, args=(func, args, kwargs))
        self._thread.daemon = True
        self._thread.start()

    def _run(self, func, args, kwargs):
        try:
            self._value = func(*args, **kwargs)
        except BaseException:  # pylint: disable=broad-except
            self._error = sys.exc_info()

    def result(self):
        """What ``func`` returned; re-raises what it raised."""
        self._thread.join()
        if self._error is not None:
            raise self._error[1].with_traceback(self._error[2])
        return self._value
