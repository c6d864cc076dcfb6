# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The filter ``undeclared_role_vars``: role variables set for a host that no role of the collection declares (a
misspelt ``service_secret_arg`` is otherwise ignored silently). The rule is ``_role_vars.undeclared_role_vars``; this
file reads the declared names on the controller from the collection's own ``roles/*/meta/argument_specs.yml``, found
beside this file, so it holds wherever the collection is installed (a tarball ships its roles). The contract is in
``plugins/filter/undeclared_role_vars.yml``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os

from ansible.module_utils.common.yaml import yaml_load

from ansible_collections.inferops.sglang.plugins.plugin_utils._filters import as_filter
from ansible_collections.inferops.sglang.plugins.module_utils import _role_vars

ROLES_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', 'roles'))


def collection_role_vars(roles_dir=ROLES_DIR):
    """``{'<role>_': declared names}`` of every role under ``roles_dir`` (``_role_vars.declared_role_vars`` of each
    role's meta/argument_specs.yml). Raises ValueError when there is no role (a broken installation)."""
    specs = {}
    for path in sorted(glob.glob(os.path.join(roles_dir, '*', 'meta', 'argument_specs.yml'))):
        with open(path) as handle:
            specs[os.path.basename(os.path.dirname(os.path.dirname(path)))] = yaml_load(handle) or {}
    if not specs:
        raise ValueError('no meta/argument_specs.yml under %s: the collection is incomplete' % roles_dir)
    return _role_vars.declared_role_vars(specs)


def _undeclared_role_vars(names, declared=None):
    """``_role_vars.undeclared_role_vars`` of ``names`` against ``declared`` (``{'<role>_': names}``), by default
    the collection's own roles."""
    return _role_vars.undeclared_role_vars(names, collection_role_vars() if declared is None else declared)


class FilterModule(object):
    """Role variables as declared."""

    def filters(self):
        return {
            'undeclared_role_vars': as_filter(_undeclared_role_vars, 'undeclared_role_vars'),
        }
