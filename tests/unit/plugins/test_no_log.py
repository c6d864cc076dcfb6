# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The no_log audit of every module: an option that can hold file content or a secret is ``no_log``, so that
neither the target's journal (a module logs its invocation there, leaving out no_log options) nor Ansible's
output shows it.

Each module's ``main()`` runs against a stand-in ``AnsibleModule`` that records its keyword arguments and stops;
the controller_files action plugin's spec is read from the plugin.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import importlib
import os
import re

import pytest

from ansible_collections.inferops.sglang.plugins.action import controller_files as controller_files_action

MODULES_DIR = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'plugins', 'modules')
MODULES = sorted(name[:-3] for name in os.listdir(MODULES_DIR) if name.endswith('.py') and name != '__init__.py'
                 and name != 'controller_files.py')  # a documentation stub of an action plugin

# What the ansible-test sanity check no-log-needed looks for in option names, and file texts.
SECRET_NAME_RE = re.compile(r'key|token|secret|pass|credential|auth', re.IGNORECASE)
CONTENT_NAMES = frozenset(('content', 'contents', 'block'))

# (module, option path): options that must be no_log.
MUST_BE_NO_LOG = [
    ('service_files', 'files.content'),
    ('known_good_save', 'contents.content'),
    ('cuda_env_state', 'env_file.content'),
    ('cuda_env_state', 'sitecustomize.block'),
    ('python_venv', 'index_url'),
    ('router_worker', 'api_key'),
    ('router_worker', 'drain_api_key'),
    ('router_worker', 'worker_api_key'),
    ('server_health', 'api_key'),
    ('server_perf', 'api_key'),
]
# Modules that log no invocation at all: an option holds secrets only known once read (argv with --api-key values,
# pip arguments or URLs with passwords).
NO_INVOCATION_LOG = ['server_args_check', 'python_venv', 'router_worker']


class _Built(Exception):
    pass


def module_kwargs(name, monkeypatch):
    """The keyword arguments module NAME gives AnsibleModule (dict)."""
    module = importlib.import_module('ansible_collections.inferops.sglang.plugins.modules.' + name)
    seen = {}

    def fake(*args, **kwargs):
        seen.update(kwargs)
        raise _Built()

    monkeypatch.setattr(module, 'AnsibleModule', fake)
    with pytest.raises(_Built):
        module.main()
    return seen


def options(spec, prefix=''):
    """(path, option dict) of every option of an argument spec, suboptions included."""
    for key, option in spec.items():
        path = prefix + key
        yield path, option
        if option.get('options'):
            yield from options(option['options'], path + '.')


@pytest.fixture(scope='module')
def specs():
    monkeypatch = pytest.MonkeyPatch()
    try:
        return dict((name, module_kwargs(name, monkeypatch)) for name in MODULES)
    finally:
        monkeypatch.undo()


def test_every_module_was_read(specs):
    assert set(specs) >= set(module for module, _path in MUST_BE_NO_LOG)
    assert all('argument_spec' in kwargs for kwargs in specs.values())


@pytest.mark.parametrize('module, path', MUST_BE_NO_LOG)
def test_content_and_secret_options_are_no_log(specs, module, path):
    found = dict(options(specs[module]['argument_spec']))
    assert found[path].get('no_log') is True


@pytest.mark.parametrize('module', NO_INVOCATION_LOG)
def test_modules_with_secrets_known_late_log_no_invocation(specs, module):
    assert specs[module].get('no_log') is True


def test_options_named_like_secrets_or_content_say_no_log(specs):
    # Named like a secret (sanity's no-log-needed) or holding a file's text: no_log must be set, to true unless the
    # name only looks like a secret (server_health's smoke_max_tokens is a number).
    undecided = []
    leaked_content = []
    for module, kwargs in sorted(specs.items()):
        for path, option in options(kwargs['argument_spec']):
            name = path.rsplit('.', 1)[-1]
            if name in CONTENT_NAMES and option.get('type') != 'list' and option.get('no_log') is not True:
                leaked_content.append('%s %s' % (module, path))
            elif (SECRET_NAME_RE.search(name) and 'no_log' not in option
                  and option.get('type') not in ('bool', 'int', 'float', 'path')):
                undecided.append('%s %s' % (module, path))
    assert leaked_content == []
    assert undecided == []


def test_controller_files_content_is_no_log():
    assert controller_files_action.ARGUMENT_SPEC['files']['options']['content']['no_log'] is True
