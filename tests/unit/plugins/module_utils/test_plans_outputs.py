# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The declared outputs (plugins/module_utils/_plans/outputs.py, issue 26 item 3) against the collection.

Both directions: every ``inferops_sglang_*`` fact a role or playbook publishes is declared, with its producer and its
keys; every declared output is published by its producer; every ``inferops_sglang_*`` name the roles, plugins and
playbooks read is a declared output or input, and every key they read of an output is declared; the argument specs of
the options that take an output whole list exactly the declared keys and types.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import ast
import glob
import os
import re

import pytest
import yaml

from ansible_collections.inferops.sglang.plugins.module_utils import _operations
from ansible_collections.inferops.sglang.plugins.module_utils._plans import cutover as cutover_plan
from ansible_collections.inferops.sglang.plugins.module_utils._plans import outputs
from ansible_collections.inferops.sglang.plugins.module_utils._plans import service_files

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
NAME = re.compile(r'\binferops_sglang_[a-z0-9_]+')
# Names with the prefix that are no variables: the modules the service installs beside the server, and the markers of
# the Python probes' replies.
NOT_VARIABLES = {'inferops_sglang_log', 'inferops_sglang_secrets', 'inferops_sglang_probe', 'inferops_sglang_spawn'}
SET_FACT = ('ansible.builtin.set_fact', 'set_fact')
SET_STATS = ('ansible.builtin.set_stats', 'set_stats')


def _files(*patterns):
    found = []
    for pattern in patterns:
        found.extend(glob.glob(os.path.join(ROOT, pattern), recursive=True))
    return sorted(set(found))


def _producer(path):
    rel = os.path.relpath(path, ROOT).split(os.sep)
    return rel[1] if rel[0] == 'roles' else 'playbooks'


def _walk(node):
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for item in node:
            yield from _walk(item)


def _published():
    """[(name, producer, value as written, how)] for every inferops_sglang_* fact set in roles/*/tasks and playbooks."""
    found = []
    for path in _files('roles/*/tasks/*.yml', 'playbooks/*.yml'):
        with open(path) as handle:
            doc = yaml.safe_load(handle)
        for node in _walk(doc):
            for action in SET_FACT + SET_STATS:
                args = node.get(action)
                if isinstance(args, dict):
                    if action in SET_STATS:
                        args = args.get('data') or {}
                    how = 'set_stats' if action in SET_STATS else 'set_fact'
                    found.extend((name, _producer(path), value, how) for name, value in args.items()
                                 if name.startswith('inferops_sglang_'))
            register = node.get('register')
            if isinstance(register, str) and register.startswith('inferops_sglang_'):
                found.append((register, _producer(path), None, 'register'))
    return found


PUBLISHED = _published()


def _read_texts():
    texts = {}
    for path in _files('roles/**/*.yml', 'roles/**/*.j2', 'playbooks/*.yml', 'plugins/**/*.py', 'plugins/**/*.yml'):
        if path.endswith(os.path.join('_plans', 'outputs.py')):
            continue
        with open(path) as handle:
            texts[path] = handle.read()
    return texts


TEXTS = _read_texts()


def test_every_published_fact_is_declared_with_its_producer():
    undeclared = sorted(set((name, producer) for name, producer, _v, _h in PUBLISHED if name not in outputs.OUTPUTS))
    assert undeclared == [], 'declare these in plugins/module_utils/_plans/outputs.py: %s' % undeclared
    wrong = sorted(set((name, producer) for name, producer, _v, _h in PUBLISHED
                       if producer != outputs.OUTPUTS[name]['producer'] and producer not in outputs.OUTPUTS[name].get('also', ())))
    assert wrong == [], 'published by another producer than declared: %s' % wrong


@pytest.mark.parametrize('name', sorted(outputs.OUTPUTS))
def test_every_declared_output_is_published_by_its_producer(name):
    declared = outputs.OUTPUTS[name]
    hows = set(how for found, producer, _v, how in PUBLISHED if found == name and producer == declared['producer'])
    assert hows, '%s is declared but %s never publishes it' % (name, declared['producer'])
    assert hows == {declared['via'].split()[0]}
    assert declared['type'] == 'dict' and declared['meaning']


def _service_plan_keys():
    """The keys of the dict _plans/service.output() returns (read from its source)."""
    with open(os.path.join(ROOT, 'plugins', 'module_utils', '_plans', 'service.py')) as handle:
        tree = ast.parse(handle.read())
    function = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == 'output'][0]
    returned = [node.value for node in ast.walk(function) if isinstance(node, ast.Return)][0]
    return set(key.value for key in returned.keys)


def _service_steps_keys():
    """The keys the filter service_steps adds to the plan's output (the publish task combines the two)."""
    with open(os.path.join(ROOT, 'roles', 'service', 'tasks', 'apply.yml')) as handle:
        tasks = yaml.safe_load(handle)
    task = [t for t in tasks if 'inferops_sglang_service' in (t.get('ansible.builtin.set_fact') or {})][0]
    assert 'inferops.sglang.service_steps(' in task['vars']['__service_steps']
    return set(service_files.service_steps('systemd', {}, {}, {}, {}))


def _computed_keys():
    """The keys of the outputs that a plan or a filter builds (no literal dict in the task)."""
    cutover = set(cutover_plan._output({}, 'unchanged', False, False)) | set(cutover_plan._output({}, 'failed', True, False))
    entry = _operations.known_good_entry({'exists': True, 'dir': '/k', 'history_dir': '/k/h'}, '', [])
    return {
        'inferops_sglang_service': _service_plan_keys() | _service_steps_keys(),
        'inferops_sglang_cutover': cutover,
        'inferops_sglang_known_good_entry': set(entry) | {'manifest'},
    }


@pytest.mark.parametrize('name', sorted(n for n in outputs.OUTPUTS if outputs.OUTPUTS[n]['keys'] is not None))
def test_the_keys_published_are_the_keys_declared(name):
    declared = set(outputs.OUTPUTS[name]['keys'])
    written = [value for found, _p, value, _h in PUBLISHED if found == name and isinstance(value, dict)]
    for value in written:
        assert set(value) <= declared, '%s publishes undeclared keys %s' % (name, sorted(set(value) - declared))
    published = set().union(*(set(v) for v in written)) | _computed_keys().get(name, set())
    assert published == declared, 'declared but never published: %s' % sorted(declared - published)


def test_every_prefixed_name_read_is_declared():
    names = {}
    for path, text in TEXTS.items():
        for name in NAME.findall(text):
            names.setdefault(name, os.path.relpath(path, ROOT))
    unknown = sorted((n, p) for n, p in names.items() if n not in outputs.OUTPUTS and n not in outputs.INPUTS
                     and n not in NOT_VARIABLES)
    assert unknown == [], 'declare these as outputs or inputs: %s' % unknown
    unused = sorted(n for n in outputs.INPUTS if n not in names)
    assert unused == [], 'declared inputs nobody reads: %s' % unused


def _keys_read(prefix):
    """Every key read of ``prefix`` (``x.key``, ``x['key']``, ``x.manifest`` ...) across the collection."""
    pattern = re.compile(r"%s(?:\.([a-z_][a-z0-9_]*)|\[['\"]([a-z_][a-z0-9_]*)['\"]\])" % re.escape(prefix))
    keys = set()
    for text in TEXTS.values():
        for dotted, subscript in pattern.findall(text):
            keys.add(dotted or subscript)
    return keys


@pytest.mark.parametrize('name', sorted(n for n in outputs.OUTPUTS if outputs.OUTPUTS[n]['keys'] is not None))
def test_every_key_read_of_an_output_is_declared(name):
    readers = [name, "hostvars['localhost']['%s']" % name]
    readers += [option for (_role, option), output in outputs.CONSUMER_OPTIONS.items() if output == name]
    read = set()
    for reader in readers:
        read |= _keys_read(reader)
    # Python's dict methods, as the filters call them on an output.
    read -= {'get', 'items', 'keys', 'values'}
    assert read <= set(outputs.OUTPUTS[name]['keys']), 'undeclared keys read: %s' % sorted(read - set(outputs.OUTPUTS[name]['keys']))


def _specs(role):
    with open(os.path.join(ROOT, 'roles', role, 'meta', 'argument_specs.yml')) as handle:
        return yaml.safe_load(handle)['argument_specs']


@pytest.mark.parametrize('role, option', sorted(outputs.CONSUMER_OPTIONS))
def test_argument_specs_list_the_declared_keys(role, option):
    expected = outputs.argument_spec_options(outputs.CONSUMER_OPTIONS[(role, option)])
    entries = [(entry, spec['options'][option]) for entry, spec in _specs(role).items() if option in spec.get('options', {})]
    assert entries
    for entry, spec in entries:
        assert spec['type'] == 'dict', entry
        got = dict((key, {'type': value['type'], 'description': value['description']}) for key, value in spec['options'].items())
        assert got == expected, entry
        assert not any(value.get('required') or 'default' in value for value in spec['options'].values())


def test_every_option_taking_an_output_is_declared():
    """An option whose default is an output whole (``x: "{{ inferops_sglang_y | default({}) }}"``) is in
    CONSUMER_OPTIONS, so that its argument spec lists the keys."""
    whole = re.compile(r'^(\w+): "\{\{ (inferops_sglang_\w+) \| default\(\{\}\) \}\}"$', re.M)
    found = set()
    for path in _files('roles/*/defaults/main.yml'):
        with open(path) as handle:
            for option, name in whole.findall(handle.read()):
                if name in outputs.OUTPUTS:
                    found.add(((_producer(path), option), name))
    assert found <= set(outputs.CONSUMER_OPTIONS.items())


def test_argument_spec_options_of_an_output_without_keys():
    with pytest.raises(KeyError):
        outputs.argument_spec_options('inferops_sglang_fleet_summary')
