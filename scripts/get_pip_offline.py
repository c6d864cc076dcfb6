# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Stand-in for the pip bootstrap script that ansible-test downloads (get-pip.py).

ansible-test --venv creates an empty virtual environment and runs the bootstrap script from its cache,
~/.ansible/test/cache/get_pip_<version>.py, with pip's install arguments (for example
``--disable-pip-version-check pip==24.2 --no-setuptools --no-wheel``). The host that serves the real script
is not reachable here, PyPI is: so this script bootstraps pip with the standard library's ensurepip and
then lets that pip install what it was asked for from PyPI. scripts/ansible-test.sh puts it in the cache.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import subprocess
import sys

# Options of get-pip.py itself; pip install does not know them.
GET_PIP_ONLY = ('--no-setuptools', '--no-wheel')


def main(argv):
    """Bootstrap pip into the running interpreter, then pip install ARGV."""
    subprocess.check_call([sys.executable, '-m', 'ensurepip', '--upgrade'])
    install = [arg for arg in argv if arg not in GET_PIP_ONLY]
    if install:
        subprocess.check_call([sys.executable, '-m', 'pip', 'install'] + install)
    if '--no-setuptools' in argv:
        # ensurepip brings setuptools along; the real get-pip.py would not have installed it.
        subprocess.check_call([sys.executable, '-m', 'pip', 'uninstall', '--yes', '--quiet', 'setuptools'])


if __name__ == '__main__':
    main(sys.argv[1:])
