# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""Role variables as declared: a variable set for a host (inventory, group vars, extra vars) whose name carries a
role's prefix but that the role does not declare is a typo, and Ansible would ignore it silently (the role would run
on its default). Pure functions; the standard library only.

The declared names come from each role's ``meta/argument_specs.yml`` (every entry point), parsed by the caller: the
filter ``inferops.sglang.undeclared_role_vars`` reads the collection's own files on the controller.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import difflib

# How close a declared name must be to count as the one meant (difflib's ratio, 0..1): 0.8 catches one letter
# missing, doubled, swapped or changed in names of this length (service_secret_arg -> service_secret_args).
CLOSE_MATCH_CUTOFF = 0.8
MAX_SUGGESTIONS = 3


def declared_role_vars(argument_specs_by_role):
    """The declared variables of each role, by the role's prefix.

    ``argument_specs_by_role``: ``{role name: the parsed meta/argument_specs.yml of that role}``, that is a mapping
    with the key ``argument_specs``, itself ``{entry point: {'options': {name: spec}}}``. The names of every entry
    point count (a variable declared for ``preflight`` only is as declared as one of ``main``).

    Returns ``{'<role>_': frozenset(names)}``. Raises TypeError when a spec does not have that shape.
    """
    if not hasattr(argument_specs_by_role, 'items'):
        raise TypeError('expected a mapping of role names to argument specs, got %s'
                        % type(argument_specs_by_role).__name__)
    declared = {}
    for role, document in argument_specs_by_role.items():
        entry_points = (document or {}).get('argument_specs') if hasattr(document or {}, 'get') else None
        if not hasattr(entry_points, 'items'):
            raise TypeError('the argument specs of the role %s have no mapping argument_specs' % role)
        names = set()
        for entry_point, spec in entry_points.items():
            options = spec.get('options', {}) if hasattr(spec, 'get') else None
            options = {} if options is None else options
            if not hasattr(options, 'keys'):
                raise TypeError('the entry point %s of the role %s has no mapping of options' % (entry_point, role))
            names.update(options.keys())
        declared['%s_' % role] = frozenset(names)
    return declared


def _prefix_of(name, prefixes):
    """The longest prefix ``name`` starts with, or None."""
    matching = [prefix for prefix in prefixes if name.startswith(prefix)]
    return max(matching, key=len) if matching else None


def _closest(name, candidates):
    """The candidates closest to ``name`` (difflib's ratio at least CLOSE_MATCH_CUTOFF; the best ones only, several
    when they are equally close, at most MAX_SUGGESTIONS), sorted."""
    close = difflib.get_close_matches(name, candidates, MAX_SUGGESTIONS, CLOSE_MATCH_CUTOFF)
    if not close:
        return []
    best = difflib.SequenceMatcher(None, name, close[0]).ratio()
    return sorted(match for match in close if difflib.SequenceMatcher(None, name, match).ratio() == best)


def undeclared_role_vars(names, prefixes_to_declared):
    """The problems with the variable names set for a host: one text per name that carries a role's prefix but is not
    declared by that role.

    ``names``: the names of the host's variables (for example ``hostvars[inventory_hostname].keys()``: inventory
    and group variables, extra vars, facts set so far; role defaults are not among them). ``prefixes_to_declared``:
    ``{'<role>_': names declared by the role}`` (``declared_role_vars``).

    A name with a role's prefix in another case (``Service_secret_args``) is as unknown as a misspelt one.
    Ignored: names starting with ``_`` (internal to the collection's tasks), names with no role's prefix (Ansible's
    own, the collection's outputs ``inferops_sglang_*``, anything else the inventory holds).

    Returns a sorted list of texts, ``unknown variable NAME (did you mean SUGGESTION?)`` with the declared name of the
    same role closest to NAME (difflib; several joined with ``or`` when equally close), or ``unknown variable NAME (the ROLE role declares no such
    variable)``; empty when every name is declared. Raises TypeError for a string or a non-iterable ``names``.
    """
    if isinstance(names, (str, bytes)) or not hasattr(names, '__iter__'):
        raise TypeError('expected a list of variable names, got %s' % type(names).__name__)
    if not hasattr(prefixes_to_declared, 'items'):
        raise TypeError('expected a mapping of role prefixes to declared names, got %s'
                        % type(prefixes_to_declared).__name__)
    problems = []
    for name in sorted(set(str(name) for name in names)):
        if name.startswith('_'):
            continue
        # A role's prefix in any case counts (Ansible's variable names are case-sensitive, so Service_secret_args
        # would be ignored as silently as a misspelt one); the suggestion is looked for in lower case.
        prefix = _prefix_of(name.lower(), prefixes_to_declared)
        if prefix is None:
            continue
        declared = sorted(prefixes_to_declared[prefix])
        if name in declared:
            continue
        close = _closest(name.lower(), declared)
        if close:
            problems.append('unknown variable %s (did you mean %s?)' % (name, ' or '.join(close)))
        else:
            problems.append('unknown variable %s (the %s role declares no such variable)' % (name, prefix[:-1]))
    return problems
