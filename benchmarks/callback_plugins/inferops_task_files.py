# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A callback of the benchmark (not of the collection): writes, at the end of a run, one line per task that ran (ok,
changed or failed; skipped ones are left out) to the file named by INFEROPS_TASK_FILES_OUT: the task file's path, a
tab, the task's name. benchmarks/run.py reads it for the row "task files on the adoption path"."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'aggregate'
    CALLBACK_NAME = 'inferops_task_files'
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super(CallbackModule, self).__init__()
        self.ran = []

    def _ran(self, result):
        task = result._task  # pylint: disable=protected-access
        self.ran.append(((task.get_path() or '').rsplit(':', 1)[0], task.get_name()))

    def v2_runner_on_ok(self, result):
        self._ran(result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._ran(result)

    def v2_playbook_on_stats(self, stats):
        out = os.environ.get('INFEROPS_TASK_FILES_OUT')
        if out:
            with open(out, 'w') as handle:
                handle.writelines('%s\t%s\n' % (path, name.replace('\t', ' ')) for path, name in self.ran)
