# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters of the writers: one per file format the collection writes (systemd units, environment files, supervisord
ini files, POSIX shell, YAML, Python, Markdown). Each quotes a value for its format or fails, naming what was refused,
never the value. Templates write every value they do not control through one of these.

The logic lives in the private module_utils package ``_writers``; these are thin wrappers.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


from ansible_collections.inferops.sglang.plugins.plugin_utils._filters import as_filter
from ansible_collections.inferops.sglang.plugins.module_utils._writers.common import one_line
from ansible_collections.inferops.sglang.plugins.module_utils._writers.data import config_yaml, py_str, yaml_scalar
from ansible_collections.inferops.sglang.plugins.module_utils._writers.envfile import environment_file_line
from ansible_collections.inferops.sglang.plugins.module_utils._writers.markdown import md_cell, md_code, md_fence, md_inline
from ansible_collections.inferops.sglang.plugins.module_utils._writers.problems import service_unwritable, unwritable_values
from ansible_collections.inferops.sglang.plugins.module_utils._writers.shell import shell_word
from ansible_collections.inferops.sglang.plugins.module_utils._writers.supervisor import (
    supervisor_name,
    supervisor_value,
    supervisor_word,
)
from ansible_collections.inferops.sglang.plugins.module_utils._writers.systemd import (
    exec_lines,
    systemd_quote,
    unit_environment,
    unit_path,
    unit_paths,
    unit_text,
    unit_word,
    unit_words,
)


class FilterModule(object):
    """Writers of the collection's file formats."""

    def filters(self):
        writers = {
            'systemd_quote': systemd_quote,
            'exec_lines': exec_lines,
            'unit_value': unit_text,
            'unit_word': unit_word,
            'unit_words': unit_words,
            'unit_path': unit_path,
            'unit_paths': unit_paths,
            'unit_environment': unit_environment,
            'env_line': environment_file_line,
            'supervisor_value': supervisor_value,
            'supervisor_word': supervisor_word,
            'supervisor_name': supervisor_name,
            'shell_word': shell_word,
            'yaml_scalar': yaml_scalar,
            'to_config_yaml': config_yaml,
            'py_str': py_str,
            'md_code': md_code,
            'md_cell': md_cell,
            'md_inline': md_inline,
            'md_fence': md_fence,
            'one_line': one_line,
            'unwritable_values': unwritable_values,
            'service_unwritable': service_unwritable,
        }
        return dict((name, as_filter(func, name)) for name, func in writers.items())
