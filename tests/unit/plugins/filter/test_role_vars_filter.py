# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The filter undeclared_role_vars (plugins/filter/role_vars.py): the declared names it checks against are exactly
the options of the collection's roles' argument specs, and every variable the repository's inventories set passes."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import glob
import os

import pytest
import yaml

from ansible.errors import AnsibleFilterError
from ansible_collections.inferops.sglang.plugins.filter.role_vars import FilterModule, collection_role_vars

FILTERS = FilterModule().filters()
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))


def test_every_filter_has_its_documentation():
    for name in FILTERS:
        with open(os.path.join(ROOT, 'plugins', 'filter', name + '.yml')) as handle:
            doc = yaml.safe_load(handle)
        assert doc['DOCUMENTATION']['name'] == name
        assert doc['RETURN']['_value']['description'] and doc['EXAMPLES'].strip()


def argument_spec_options():
    """Every option of every entry point of every role, read the way tests/unit/roles/test_argument_specs.py does."""
    found = {}
    for path in glob.glob(os.path.join(ROOT, 'roles', '*', 'meta', 'argument_specs.yml')):
        role = path.split(os.sep)[-3]
        with open(path) as handle:
            specs = yaml.safe_load(handle)['argument_specs']
        found[role + '_'] = set()
        for spec in specs.values():
            found[role + '_'].update((spec.get('options') or {}).keys())
    return found


def test_the_declared_names_are_the_argument_specs_options():
    declared = collection_role_vars()
    assert sorted(declared) == ['cuda_env_', 'cutover_', 'facts_', 'fleet_', 'known_good_', 'router_', 'service_']
    assert dict((prefix, set(names)) for prefix, names in declared.items()) == argument_spec_options()


def test_a_typo_of_a_collection_variable_is_named():
    assert FILTERS['undeclared_role_vars'](['service_secret_arg', 'service_secret_args', 'ansible_host']) == [
        'unknown variable service_secret_arg (did you mean service_secret_args?)']


def test_an_explicit_declaration_replaces_the_collections():
    assert FILTERS['undeclared_role_vars'](['service_secret_args'], {'service_': ['service_other']}) == [
        'unknown variable service_secret_args (the service role declares no such variable)']


def test_a_wrong_input_is_a_filter_error():
    with pytest.raises(AnsibleFilterError, match='undeclared_role_vars'):
        FILTERS['undeclared_role_vars']('service_secret_arg')


def test_no_roles_is_an_error():
    with pytest.raises(ValueError, match='incomplete'):
        collection_role_vars(os.path.join(ROOT, 'no-such-dir'))


def inventory_variable_names():
    """The variable names that the inventories in this repository (demo, fleet, molecule scenarios) set."""
    names = set()
    patterns = ['inventory/**/*.yml', 'extensions/molecule/**/group_vars/**/*.yml',
                'extensions/molecule/**/host_vars/**/*.yml']
    for pattern in patterns:
        for path in glob.glob(os.path.join(ROOT, pattern), recursive=True):
            with open(path) as handle:
                text = handle.read()
            if text.startswith('$ANSIBLE_VAULT'):
                continue
            data = yaml.safe_load(text) or {}
            if os.path.basename(path) == 'hosts.yml':
                stack = [data]
                while stack:
                    node = stack.pop()
                    if isinstance(node, dict):
                        names.update(node.get('vars') or {})
                        stack.extend((node.get('hosts') or {}).values())
                        stack.extend((node.get('children') or {}).values())
                        stack.extend(value for key, value in node.items() if key not in ('vars', 'hosts', 'children'))
            elif isinstance(data, dict):
                names.update(data)
    return names


def test_the_repositorys_inventories_set_only_declared_role_variables():
    names = inventory_variable_names()
    assert len(names) > 10, names
    assert FILTERS['undeclared_role_vars'](sorted(names)) == []
