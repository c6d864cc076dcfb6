# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The roles' Jinja stays within issue 26's acceptance figures: at most 150 ``| default(`` across roles/ (any file) and
at most 10 Jinja expressions of 3+ lines (a YAML string value holding ``{{`` or ``{%`` whose stripped text has 3 or
more lines). A decision or a value with defaults belongs in a plan (plugins/module_utils/_plans, exposed as a
filter, unit-tested); see CONTRIBUTING.md."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import collections
import os
import re

import yaml

ROLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'roles')
MAX_DEFAULTS = 150
MAX_MULTI_LINE = 10
DEFAULT = re.compile(r'\|\s*default\(')


def _files():
    for directory, _dirs, names in os.walk(ROLES):
        for name in sorted(names):
            path = os.path.join(directory, name)
            yield os.path.relpath(path, os.path.join(ROLES, '..')), path


def _multi_line(value):
    """The number of Jinja strings of 3+ lines in a loaded YAML document."""
    if isinstance(value, dict):
        return sum(_multi_line(item) for item in value.values())
    if isinstance(value, list):
        return sum(_multi_line(item) for item in value)
    if isinstance(value, str) and ('{{' in value or '{%' in value):
        return 1 if len(value.strip().splitlines()) >= 3 else 0
    return 0


def figures():
    """(defaults, multi_line): Counters of file -> count."""
    defaults, multi = collections.Counter(), collections.Counter()
    for relative, path in _files():
        with open(path, errors='replace') as handle:
            text = handle.read()
        defaults[relative] += len(DEFAULT.findall(text))
        if path.endswith(('.yml', '.yaml')):
            multi[relative] += _multi_line(yaml.safe_load(text))
    return defaults, multi


def _worst(counter):
    return '; '.join('%s: %d' % item for item in counter.most_common(8) if item[1])


def test_default_filters_within_budget():
    defaults, _multi = figures()
    assert sum(defaults.values()) <= MAX_DEFAULTS, (
        '%d "| default(" in roles/ (at most %d): give the values their defaults once, in a plan. Worst: %s'
        % (sum(defaults.values()), MAX_DEFAULTS, _worst(defaults)))


def test_multi_line_jinja_within_budget():
    _defaults, multi = figures()
    assert sum(multi.values()) <= MAX_MULTI_LINE, (
        '%d Jinja expressions of 3+ lines in roles/ (at most %d): make them a filter call of a plan function. Worst: %s'
        % (sum(multi.values()), MAX_MULTI_LINE, _worst(multi)))


def test_the_counter_counts():
    assert _multi_line({'a': '{{ x\n y\n z }}', 'b': ['{{ x }}', 'a\nb\nc'], 'c': '{% if x %}\n1\n{% endif %}'}) == 2
    assert len(DEFAULT.findall("{{ a | default(1) }} {{ b|default(2) }} {{ c | default_x(3) }}")) == 2
