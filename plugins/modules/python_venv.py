#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: python_venv
short_description: Create a venv of the collection's own and install one pinned package into it
version_added: 0.1.0
description:
  - The one way the collection makes a venv (the supervisor venv of the service role, the router's venv of the router
    role). The package is installed when the venv does not hold O(requirement)'s version yet.
  - The venv gets pip from the creating interpreter's C(ensurepip) (C(python -m venv)); where that interpreter has no
    C(ensurepip) (Debian and Ubuntu ship it in C(python3.X-venv)) but has pip, the venv is made C(--without-pip) and
    the interpreter's pip installs into it (C(pip --python), pip 22.3 or later). With neither, the module fails and
    names the distribution package to install (RV(venv_package)); in check mode it reports RV(route) null instead, so
    that a pre-flight can decide before anything changes.
  - A venv directory left half-built by an earlier failure (no C(bin/python) that runs, or no pip in it while
    C(ensurepip) can give one) is rebuilt, never taken as done; one whose interpreter does not run is cleared first
    (C(--clear)).
  - Runs no package manager; RV(package_manager) says which one the host has, for the role to install RV(venv_package).
author:
  - inferops.sglang developers (@inferops)
options:
  python:
    description: Absolute path of the interpreter that creates the venv.
    type: path
    required: true
  venv:
    description: Absolute path of the venv directory.
    type: path
    required: true
  requirement:
    description: The pinned package to install, C(name==version) (for example C(supervisor==4.3.0)).
    type: str
    required: true
  pip_args:
    description: Extra arguments of C(pip install) (for example C(--no-index --find-links /opt/wheels)).
    type: list
    elements: str
    default: []
  requirements:
    description:
      - More pinned requirements installed by the same C(pip install) as O(requirement) (companions such as C(torch)).
    type: list
    elements: str
    default: []
  marker:
    description:
      - A file that records a completed install of exactly O(requirement) and O(requirements) (a path relative to
        O(venv), or absolute). With it, the venv counts as done only when the marker holds exactly these
        requirements (and O(requirement)'s version is installed); it is written after pip succeeded, so an install
        interrupted before that, or one of other requirements, is done again.
      - Empty - no marker; done when O(requirement)'s version is installed.
    type: str
    default: ''
  keep_installed:
    description:
      - With O(marker), a venv whose marker records a completed install of other requirements is never changed (a
        running or known-good server may use it) - the module fails naming both sets; in check mode it reports them
        in RV(conflict) instead, so that a pre-flight can refuse before anything changes.
      - The same set in another order or spacing is the same install.
    type: bool
    default: false
  index_url:
    description:
      - The package index (C(pip install --index-url)), handed to pip through its environment (C(PIP_INDEX_URL)),
        never on its command line, and never shown in the module's output or logs (it may carry a token).
    type: str
extends_documentation_fragment:
  - inferops.sglang._attributes
attributes:
  check_mode:
    support: full
    details:
      - Probes the venv and the interpreter and reports what it would do.
  diff_mode:
    support: none
    details:
      - No file diff is computed.
  platform:
    platforms: posix
'''

EXAMPLES = r'''
- name: Install supervisor into a venv of its own
  inferops.sglang.python_venv:
    python: /usr/bin/python3
    venv: /opt/inferops-sglang/supervisor
    requirement: supervisor==4.3.0
'''

RETURN = r'''
version:
  description: Version of the package installed in the venv after the run (before it, in check mode); null when none.
  returned: always
  type: str
  sample: 4.3.0
route:
  description:
    - How the venv gets pip - V(ensurepip) (the venv's own pip), V(pip) (the creating interpreter's pip aimed at the
      venv), or null when the interpreter has neither (then RV(venv_package) gives it C(ensurepip)).
  returned: always
  type: str
  sample: ensurepip
python_version:
  description: C(major.minor) of O(python); null when it does not run.
  returned: always
  type: str
  sample: '3.11'
venv_package:
  description: The Debian/Ubuntu package that ships C(ensurepip) for O(python), C(python<major.minor>-venv).
  returned: always
  type: str
  sample: python3.11-venv
package_manager:
  description: V(apt), V(dnf), V(yum), V(zypper) or V(apk), the first found on C(PATH); null without one.
  returned: always
  type: str
  sample: apt
rebuilt:
  description: Whether a half-built venv directory was found (and, outside check mode, rebuilt).
  returned: always
  type: bool
marker:
  description: The absolute path of the install marker (O(marker)), or null without one.
  returned: always
  type: str
  sample: /opt/sglang/venvs/0.5.10/.inferops-sglang-installed
conflict:
  description:
    - With O(keep_installed), why the venv is left as it is (its marker records another completed install), else ''.
  returned: always
  type: str
  sample: "/opt/sglang/venvs/0.5.10 holds a completed install of sglang==0.5.10, torch==2.9.0; ..."
'''

import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.inferops.sglang.plugins.module_utils._secrets import url_passwords
from ansible_collections.inferops.sglang.plugins.module_utils._sglang_venvs import install_marker, marker_requirements

PACKAGE_MANAGERS = (('apt', 'apt-get'), ('dnf', 'dnf'), ('yum', 'yum'), ('zypper', 'zypper'), ('apk', 'apk'))
# What the creating interpreter and a venv's interpreter can do, without importing anything heavy.
PROBE = r'''
import json, sys
try:
    from importlib.util import find_spec
except ImportError:
    find_spec = None
def has(name):
    return find_spec is not None and find_spec(name) is not None
v = None
if len(sys.argv) > 1:
    try:
        from importlib import metadata
        v = metadata.version(sys.argv[1])
    except Exception:
        v = None
print(json.dumps({"python_version": "%d.%d" % sys.version_info[:2], "ensurepip": has("ensurepip"),
                  "pip": has("pip"), "version": v}))
'''


def requirement_name(requirement):
    """'supervisor==4.3.0' -> ('supervisor', '4.3.0'); 'sglang[all]==0.5.10' -> ('sglang', '0.5.10') (extras are
    not part of the distribution's name); a requirement without '==' gives version None."""
    name, sep, version = requirement.partition('==')
    return name.split('[', 1)[0].strip(), (version.strip() if sep else None)


def choose_route(creator):
    """'ensurepip' when the creating interpreter has ensurepip, 'pip' when it has only pip, else None.

    :param creator: the PROBE's answer in that interpreter ({ensurepip, pip} booleans), or None if it did not run.
    """
    if not creator:
        return None
    if creator.get('ensurepip'):
        return 'ensurepip'
    if creator.get('pip'):
        return 'pip'
    return None


class Venv(object):
    def __init__(self, module):
        self.module = module
        p = module.params
        self.python, self.venv, self.pip_args = p['python'], p['venv'].rstrip('/') or '/', p['pip_args']
        self.name, self.wanted = requirement_name(p['requirement'])
        self.venv_python = os.path.join(self.venv, 'bin', 'python')
        self.requirements = [p['requirement']] + list(p['requirements'])
        self.marker = os.path.join(self.venv, p['marker']) if p['marker'] else None
        self.marker_text = install_marker(self.requirements)

    def marker_conflict(self):
        """'' unless O(keep_installed) and the marker records a completed install of another set: then why."""
        if self.marker is None or not self.module.params['keep_installed']:
            return ''
        try:
            with open(self.marker, 'r') as handle:
                text = handle.read()
        except (IOError, OSError):
            return ''
        if text == self.marker_text:
            return ''
        installed = marker_requirements(text)
        return ('%s holds a completed install of %s; %s differs. An installed venv is never changed, since a running '
                'or known-good server may use it: give this set a venv of its own (service_sglang_venv_name), or '
                'remove %s when nothing uses it.'
                % (self.venv, ', '.join(installed) if installed is not None else 'another set',
                   ', '.join(marker_requirements(self.marker_text)), self.venv))

    def marker_ok(self):
        """True without a marker, else whether the marker records exactly these requirements."""
        if self.marker is None:
            return True
        try:
            with open(self.marker, 'r') as handle:
                return handle.read() == self.marker_text
        except (IOError, OSError):
            return False

    def write_marker(self):
        if self.marker is None:
            return
        tmp = self.marker + '.tmp'
        with open(tmp, 'w') as handle:
            handle.write(self.marker_text)
        os.rename(tmp, self.marker)

    def probe(self, python, dist=None):
        if not os.access(python, os.X_OK):
            return None
        # Through sh: an interpreter that cannot be executed (a half-built venv's) is an answer here, not an error.
        rc, out, dummy = self.module.run_command(['/bin/sh', '-c', 'exec "$0" "$@"', python, '-c', PROBE] + ([dist] if dist else []),
                                                 environ_update={'LANG': 'C', 'LC_ALL': 'C', 'PYTHONPATH': ''})
        if rc != 0:
            return None
        try:
            return json.loads(out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            return None

    def run(self, argv, what, env=None):
        rc, out, err = self.module.run_command(argv, environ_update=dict({'LANG': 'C', 'LC_ALL': 'C'}, **(env or {})))
        if rc != 0:
            self.module.fail_json(msg='%s failed (rc %d): %s' % (what, rc, (err or out).strip()[-2000:]), cmd=argv)

    def package_manager(self):
        for name, binary in PACKAGE_MANAGERS:
            if self.module.get_bin_path(binary):
                return name
        return None

    def ensure(self):
        before = self.probe(self.venv_python, self.name)
        result = {'changed': False, 'version': (before or {}).get('version'), 'rebuilt': False, 'route': None,
                  'marker': self.marker}
        creator = self.probe(self.python)
        result['python_version'] = (creator or {}).get('python_version')
        result['venv_package'] = 'python%s-venv' % (result['python_version'] or '3')
        result['package_manager'] = self.package_manager()
        result['route'] = route = choose_route(creator)
        result['conflict'] = self.marker_conflict()
        if result['conflict']:
            if self.module.check_mode:
                return result
            self.module.fail_json(msg=result['conflict'], **result)
        if before and self.wanted is not None and before['version'] == self.wanted and self.marker_ok():
            return result
        exists = os.path.lexists(self.venv)
        broken = exists and (before is None or not os.path.exists(os.path.join(self.venv, 'pyvenv.cfg')))
        no_pip = before is not None and not before['pip'] and route == 'ensurepip'
        result['rebuilt'] = broken or no_pip
        result['changed'] = True
        if self.module.check_mode:
            return result
        if creator is None:
            self.module.fail_json(msg='%s does not run; point the interpreter that creates the venv at a working Python 3.'
                                  % self.python, **result)
        if route is None:
            self.module.fail_json(
                msg='%s has neither ensurepip nor pip, so it cannot give the venv %s a pip. Install %s (Debian, Ubuntu) '
                    'or python3-pip, or create the venv with an interpreter that has pip.'
                    % (self.python, self.venv, result['venv_package']), **result)
        if not exists or broken or no_pip or before is None:
            argv = [self.python, '-m', 'venv'] + (['--without-pip'] if route == 'pip' else []) \
                + (['--clear'] if broken else []) + [self.venv]
            self.run(argv, 'Creating the venv %s' % self.venv)
        venv_pip = (self.probe(self.venv_python) or {}).get('pip')
        pip = [self.venv_python, '-m', 'pip'] if venv_pip else [self.python, '-m', 'pip', '--python', self.venv_python]
        if self.marker is not None and os.path.lexists(self.marker):
            os.unlink(self.marker)
        index = self.module.params['index_url']
        self.run(pip + ['install', '--disable-pip-version-check', '-q'] + self.pip_args + self.requirements,
                 'Installing %s into %s' % (' '.join(self.requirements), self.venv),
                 env={'PIP_INDEX_URL': index} if index else None)
        result['version'] = (self.probe(self.venv_python, self.name) or {}).get('version')
        if self.wanted is not None and result['version'] != self.wanted:
            self.module.fail_json(msg='pip ran, yet the venv %s holds %s %s instead of %s.'
                                  % (self.venv, self.name, result['version'], self.wanted), **result)
        self.write_marker()
        return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            python=dict(type='path', required=True),
            venv=dict(type='path', required=True),
            requirement=dict(type='str', required=True),
            pip_args=dict(type='list', elements='str', default=[]),
            requirements=dict(type='list', elements='str', default=[]),
            marker=dict(type='str', default=''),
            keep_installed=dict(type='bool', default=False),
            index_url=dict(type='str', no_log=True),
        ),
        supports_check_mode=True,
        # pip_args and requirements may hold an index URL with a password, which is known only after the arguments
        # are read: the invocation is not written to the target's journal at all.
        no_log=True,
    )
    # An index or proxy URL in pip_args may carry a password (https://user:TOKEN@host/...): Ansible masks it wherever
    # the module's output would show it.
    for arg in module.params['pip_args']:
        module.no_log_values.update(url_passwords(arg))
    for key in ('python', 'venv'):
        if not os.path.isabs(module.params[key]):
            module.fail_json(msg='%s must be an absolute path, not %r.' % (key, module.params[key]))
    module.exit_json(**Venv(module).ensure())


if __name__ == '__main__':
    main()
