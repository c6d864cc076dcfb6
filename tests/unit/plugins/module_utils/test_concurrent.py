# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_concurrent.Background: reads side by side, results and exceptions as if called in place."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import threading
import time

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import _concurrent


def test_result_is_what_the_function_returned():
    assert _concurrent.Background(lambda a, b=0: a + b, 2, b=3).result() == 5


def test_two_slow_reads_take_the_time_of_one():
    started = time.time()
    first = _concurrent.Background(time.sleep, 0.3)
    second = _concurrent.Background(time.sleep, 0.3)
    first.result()
    second.result()
    assert time.time() - started < 0.55


def test_runs_in_another_thread_and_starts_at_once():
    seen = threading.Event()
    job = _concurrent.Background(seen.set)
    assert seen.wait(5)
    assert job.result() is None


def test_exception_is_raised_by_result_with_its_own_traceback():
    def fail():
        raise ValueError("no nvidia-smi")

    job = _concurrent.Background(fail)
    with pytest.raises(ValueError, match="no nvidia-smi") as info:
        job.result()
    assert info.traceback[-1].name == "fail"
