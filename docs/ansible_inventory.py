# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Write a small Sphinx inventory (objects.inv) of the Ansible documentation labels our pages link to.

The pages antsibull-docs generates refer to labels of the Ansible documentation (the common return values, the
configuration settings, ansible.builtin plugins). Sphinx resolves them with intersphinx, which would download the
inventory of docs.ansible.com; that host is not reachable where the docs are built, so this script writes the few
labels needed, with their real addresses, and docs/conf.py points intersphinx at the file.

Usage: python docs/ansible_inventory.py OUTPUT.inv
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys
import zlib

# Pages of the Ansible documentation: label -> (page#anchor, title).
LABELS = {
    'ansible_configuration_settings': ('reference_appendices/config.html#ansible-configuration-settings',
                                       'Ansible Configuration Settings'),
    'common_return_values': ('reference_appendices/common_return_values.html#common-return-values',
                             'Return Values'),
    'playbooks_intro': ('playbook_guide/playbooks_intro.html#playbooks-intro', 'Ansible playbooks'),
    'action_plugins': ('plugins/action.html#action-plugins', 'Action plugins'),
    'ansible_collections.ansible.builtin.index': ('collections/ansible/builtin/index.html#plugins-in-ansible-builtin',
                                                  'Ansible.Builtin'),
}
# ansible.builtin plugin types whose pages antsibull-docs links to as ansible_collections.ansible.builtin.NAME_TYPE.
PLUGIN_TYPES = ('module', 'filter', 'test', 'lookup', 'callback', 'connection', 'become', 'inventory', 'vars')


def builtin_plugins():
    """(name, type) of the plugins of the installed ansible-core."""
    import ansible  # pylint: disable=import-outside-toplevel

    root = os.path.dirname(ansible.__file__)
    found = set()
    for plugin_type in PLUGIN_TYPES:
        if plugin_type == 'module':
            directory = os.path.join(root, 'modules')
        else:
            directory = os.path.join(root, 'plugins', plugin_type)
        for entry in sorted(os.listdir(directory)):
            name, ext = os.path.splitext(entry)
            if ext in ('.py', '.yml', '.yaml') and not name.startswith('_'):
                found.add((name, plugin_type))
    return sorted(found)


def entries():
    lines = []
    for label, (uri, title) in sorted(LABELS.items()):
        lines.append('%s std:label -1 %s %s' % (label, uri, title))
    for name, plugin_type in builtin_plugins():
        label = 'ansible_collections.ansible.builtin.%s_%s' % (name, plugin_type)
        anchor = label.replace('.', '-').replace('_', '-')
        lines.append('%s std:label -1 collections/ansible/builtin/%s_%s.html#%s ansible.builtin.%s %s' % (
            label, name, plugin_type, anchor, name, plugin_type))
    return lines


def main(path):
    header = (
        '# Sphinx inventory version 2\n'
        '# Project: Ansible\n'
        '# Version: devel\n'
        '# The remainder of this file is compressed using zlib.\n'
    )
    body = ''.join(line + '\n' for line in entries())
    with open(path, 'wb') as handle:
        handle.write(header.encode('utf-8'))
        handle.write(zlib.compress(body.encode('utf-8')))


if __name__ == '__main__':
    main(sys.argv[1])
