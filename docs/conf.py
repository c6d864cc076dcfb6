# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Sphinx configuration of the collection's HTML documentation.

scripts/build-docs.sh generates the pages with antsibull-docs (module docs, role argument specs) into
build/docs/rst and builds them with this configuration into build/docs/html; see the README.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

project = 'inferops.sglang'
copyright = 'inferops.sglang developers, GPL-3.0-or-later'  # pylint: disable=redefined-builtin
title = 'inferops.sglang collection documentation'
html_short_title = 'inferops.sglang'

extensions = ['sphinx.ext.intersphinx', 'sphinx_antsibull_ext']

pygments_style = 'ansible'
highlight_language = 'YAML+Jinja'

html_theme = 'sphinx_ansible_theme'
html_show_sphinx = False
html_use_index = False
html_copy_source = False
html_theme_options = {
    'collapse_navigation': False,
}

# Every reference must resolve (the build runs with -W). References into the Ansible documentation resolve through
# a local inventory written by docs/ansible_inventory.py, so that nothing is downloaded while building.
nitpicky = True
default_role = 'any'
intersphinx_mapping = {
    'ansible_devel': (
        'https://docs.ansible.com/projects/ansible/devel/',
        os.environ.get('INFEROPS_DOCS_INVENTORY') or os.path.join(
            os.path.dirname(os.path.abspath(__file__)), '..', 'build', 'docs', 'ansible_devel.inv'),
    ),
}
intersphinx_timeout = 5
