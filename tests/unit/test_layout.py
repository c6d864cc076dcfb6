# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Guards on the shape of plugins/: small module_utils files with one concern each, one HTTP client, and one
function per name.

The name rule: no two top-level functions (``def`` at module level) anywhere under plugins/ share a name, so
that a name means one contract in the whole collection. Exempt are

* ``main`` and ``argument_spec``: the entry points every module file defines for itself (Ansible runs a
  module's ``main``; the tests and validate-modules read each module's ``argument_spec``).

(The filter plugin files share one adapter, ``plugin_utils/_filters.as_filter``.)

Methods, nested functions and code inside strings (the programs a module runs in another interpreter) are
not top-level functions and are not counted.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import ast
import os

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
PLUGINS = os.path.join(ROOT, 'plugins')
MODULE_UTILS = os.path.join(PLUGINS, 'module_utils')
MAX_MODULE_UTILS_LINES = 700
SAME_NAME_ALLOWED = frozenset(('main', 'argument_spec'))


def files_under(top, suffix=''):
    found = []
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = [d for d in dirnames if d != '__pycache__']
        found.extend(os.path.join(dirpath, name) for name in filenames if name.endswith(suffix))
    assert found, top
    return sorted(found)


def relative(path):
    return os.path.relpath(path, ROOT)


def test_module_utils_files_are_small():
    too_long = {}
    for path in files_under(MODULE_UTILS, '.py'):
        with open(path, encoding='utf-8') as handle:
            lines = sum(1 for dummy in handle)
        if lines > MAX_MODULE_UTILS_LINES:
            too_long[relative(path)] = lines
    assert too_long == {}, 'module_utils files over %d lines (split them by concern): %s' % (
        MAX_MODULE_UTILS_LINES, too_long)


def test_one_http_client():
    # Every HTTP request goes through module_utils/_http.py (ansible-core's urls: TLS, certificates, proxies);
    # no plugin builds its own urllib opener.
    users = []
    for path in files_under(PLUGINS, '.py'):
        with open(path, encoding='utf-8') as handle:
            if 'build_opener' in handle.read():
                users.append(relative(path))
    assert users == [], 'build_opener used in %s; use module_utils/_http.py' % users


def test_one_function_per_name():
    where = {}
    for path in files_under(PLUGINS, '.py'):
        with open(path, encoding='utf-8') as handle:
            tree = ast.parse(handle.read(), filename=path)
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name not in SAME_NAME_ALLOWED:
                where.setdefault(node.name, []).append(relative(path))
    twice = dict((name, paths) for name, paths in where.items() if len(paths) > 1)
    assert twice == {}, 'top-level functions defined more than once (one name, one contract): %s' % twice
