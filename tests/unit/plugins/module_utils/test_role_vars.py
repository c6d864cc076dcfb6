# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Role variables as declared (plugins/module_utils/_role_vars.py)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils._role_vars import (
    declared_role_vars, undeclared_role_vars)

DECLARED = {
    'service_': frozenset(['service_secret_args', 'service_server_args', 'service_name', 'service_secret_file']),
    'known_good_': frozenset(['known_good_dir']),
    'cutover_': frozenset(['cutover_gate_timeout']),
}


def test_a_misspelt_variable_is_named_with_the_declared_one_meant():
    assert undeclared_role_vars(['service_secret_arg'], DECLARED) == [
        'unknown variable service_secret_arg (did you mean service_secret_args?)']


@pytest.mark.parametrize('name', ['Service_secret_args', 'SERVICE_SECRET_ARGS', 'Service_Secret_Arg'])
def test_a_variable_spelt_in_other_case_is_named_with_the_declared_one_meant(name):
    # Ansible's variable names are case-sensitive: the role would ignore it and run on its default.
    assert undeclared_role_vars([name], DECLARED) == [
        'unknown variable %s (did you mean service_secret_args?)' % name]


def test_every_unknown_variable_is_named_at_once_sorted():
    problems = undeclared_role_vars(['service_server_arg', 'cutover_gate_timout', 'service_name'], DECLARED)
    assert problems == ['unknown variable cutover_gate_timout (did you mean cutover_gate_timeout?)',
                        'unknown variable service_server_arg (did you mean service_server_args?)']


def test_a_name_close_to_nothing_says_the_role_has_no_such_variable():
    assert undeclared_role_vars(['service_colour'], DECLARED) == [
        'unknown variable service_colour (the service role declares no such variable)']


def test_only_the_closest_name_is_suggested():
    # service_server_args is close to service_secret_arg too, but service_secret_args is closer.
    assert undeclared_role_vars(['service_secret_arg'], DECLARED)[0].endswith('(did you mean service_secret_args?)')


def test_equally_close_names_are_all_suggested():
    declared = {'service_': frozenset(['service_args_a', 'service_args_b'])}
    assert undeclared_role_vars(['service_args_c'], declared) == [
        'unknown variable service_args_c (did you mean service_args_a or service_args_b?)']


def test_declared_and_internal_names_pass():
    assert undeclared_role_vars(['service_secret_args', '_service_secret_arg', '__fleet_preflight_passed'],
                                DECLARED) == []


def test_names_without_a_role_prefix_are_not_ours():
    names = ['ansible_host', 'inferops_sglang_become', 'inferops_sglang_service', 'servicename', 'group_names',
             'known_goodness', 'my_service_secret_arg']
    assert undeclared_role_vars(names, DECLARED) == []


def test_the_longest_prefix_decides_the_role():
    declared = {'known_': frozenset(['known_x']), 'known_good_': frozenset(['known_good_dir'])}
    assert undeclared_role_vars(['known_good_dri', 'known_good_dir'], declared) == [
        'unknown variable known_good_dri (did you mean known_good_dir?)']


def test_a_name_is_reported_once():
    assert len(undeclared_role_vars(['service_secret_arg', 'service_secret_arg'], DECLARED)) == 1


@pytest.mark.parametrize('names', ['service_secret_arg', None, 3])
def test_names_must_be_a_list(names):
    with pytest.raises(TypeError):
        undeclared_role_vars(names, DECLARED)


def test_declared_must_be_a_mapping():
    with pytest.raises(TypeError):
        undeclared_role_vars([], ['service_'])


def test_declared_names_of_every_entry_point_count():
    specs = {'service': {'argument_specs': {
        'main': {'options': {'service_a': {'type': 'str'}}},
        'preflight': {'options': {'service_b': {'type': 'str'}}},
        'deployed': {'short_description': 'no options'},
    }}}
    assert declared_role_vars(specs) == {'service_': frozenset(['service_a', 'service_b'])}


@pytest.mark.parametrize('specs', [{'service': {}}, {'service': {'argument_specs': {'main': {'options': []}}}},
                                   ['service']])
def test_specs_of_the_wrong_shape_are_refused(specs):
    with pytest.raises(TypeError):
        declared_role_vars(specs)
