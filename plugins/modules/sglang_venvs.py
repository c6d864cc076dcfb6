#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: sglang_venvs
short_description: Prune the venvs of SGLang versions, never the running one nor a known-good one
version_added: 0.1.0
description:
  - Lists the venvs under O(dir) (one directory per SGLang version, as the P(inferops.sglang.service#role) role makes
    them) and removes those of versions other than O(wanted) beyond the newest O(keep) (by the directory's mtime),
    oldest first.
  - Only a directory that holds a C(pyvenv.cfg) and the install marker O(marker) (written by
    M(inferops.sglang.python_venv) after a completed install) counts as a venv; anything else under O(dir), a symlink
    included, is never touched.
  - Never removes O(wanted), a venv that a path of O(protect) lies in (the running server's interpreter; symlinked
    directories resolved, so C(/data/venvs/0.5.9/bin/python3) protects C(/opt/sglang/venvs/0.5.9) when that is a
    symlink to C(/data/venvs)), nor one that
    a known-good configuration runs - the first word of the C(command) of C(manifest.json) in each directory of
    O(known_good_dirs) and in each directory directly under it (the current known-good store and its history), so
    that a rollback finds its venv on disk.
  - A known-good manifest that cannot be read could name any venv - then nothing is removed, with a warning.
author:
  - inferops.sglang developers (@inferops)
options:
  dir:
    description: Absolute path of the directory holding one venv per version, for example C(/opt/sglang/venvs).
    type: path
    required: true
  wanted:
    description: The venv of the wanted version; never counted against O(keep), never removed.
    type: path
    required: true
  keep:
    description: How many venvs of other versions are kept (the newest by mtime); 0 or more.
    type: int
    default: 3
  protect:
    description: Paths (interpreters or venvs) whose venv under O(dir) is never removed, for example the running servers' interpreters.
    type: list
    elements: path
    default: []
  marker:
    description: The install marker's name inside a venv (as given to M(inferops.sglang.python_venv)).
    type: str
    default: .inferops-sglang-installed
  known_good_dirs:
    description:
      - Known-good stores (the current one and the history directory of the P(inferops.sglang.known_good#role) role);
        the venv of each C(manifest.json)'s C(command) in them, or in a directory directly under them, is never removed.
    type: list
    elements: path
    default: []
extends_documentation_fragment:
  - inferops.sglang._attributes
attributes:
  check_mode:
    support: full
    details:
      - Reports in RV(removed) what would be removed, and removes nothing.
  diff_mode:
    support: none
    details:
      - No diff is computed.
  platform:
    platforms: posix
'''

EXAMPLES = r'''
- name: Prune the venvs of old SGLang versions
  inferops.sglang.sglang_venvs:
    dir: /opt/sglang/venvs
    wanted: /opt/sglang/venvs/0.5.10
    keep: 3
    protect: [/opt/sglang/venvs/0.5.9/bin/python3]
    known_good_dirs: [/var/lib/inferops-sglang/known-good, /var/lib/inferops-sglang/history]
'''

RETURN = r'''
venvs:
  description: The venvs found under O(dir) before pruning, each C({path, mtime}) (mtime in seconds since the epoch).
  returned: always
  type: list
  elements: dict
  sample: [{"path": "/opt/sglang/venvs/0.5.9", "mtime": 1764583200.0}]
protected:
  description: The venvs under O(dir) that O(protect) or a known-good manifest names (never removed).
  returned: always
  type: list
  elements: str
  sample: [/opt/sglang/venvs/0.5.9]
removed:
  description: The venvs removed (in check mode, that would be removed), oldest first.
  returned: always
  type: list
  elements: str
  sample: [/opt/sglang/venvs/0.5.7]
'''

import os
import shutil

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.inferops.sglang.plugins.module_utils import _known_good
from ansible_collections.inferops.sglang.plugins.module_utils._sglang_venvs import venvs_to_prune


def list_venvs(root, marker):
    """The venvs this collection installed directly under ``root``: directories (not symlinks) holding ``pyvenv.cfg``
    and the install ``marker``, each ``{path, mtime}``; [] when ``root`` is missing."""
    found = []
    if not os.path.isdir(root):
        return found
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name)
        if (os.path.isdir(path) and not os.path.islink(path) and os.path.isfile(os.path.join(path, 'pyvenv.cfg'))
                and os.path.isfile(os.path.join(path, marker))):
            found.append({'path': path, 'mtime': os.stat(path).st_mtime})
    return found


def protected_venvs(venvs, named):
    """The venvs (paths) that a path of ``named`` (interpreters, venvs) lies in, as written or with the symlinks of
    its directories resolved (an interpreter itself is a symlink to the base Python, so only its directory is
    resolved), against each venv as listed and as resolved."""
    protected = set()
    for venv in venvs:
        bases = set([os.path.normpath(venv), os.path.realpath(venv)])
        for path in named:
            path = os.path.normpath(str(path))
            forms = (path, os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path)))
            if any(form == base or form.startswith(base + os.sep) for form in forms for base in bases):
                protected.add(venv)
    return sorted(protected)


def known_good_commands(dirs):
    """The first word of the command of every manifest.json in ``dirs`` and directly under them; raises ValueError
    (or IOError) when one cannot be read."""
    manifests = []
    for store in dirs:
        if not os.path.isdir(store):
            continue
        manifests.append(os.path.join(store, _known_good.MANIFEST))
        manifests.extend(os.path.join(store, name, _known_good.MANIFEST) for name in sorted(os.listdir(store)))
    words = []
    for path in manifests:
        if not os.path.isfile(path):
            continue
        with open(path, 'r') as handle:
            manifest = _known_good.parse_known_good_manifest(handle.read(), path)
        command = manifest.get('command') or []
        if command:
            words.append(str(command[0]))
    return words


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dir=dict(type='path', required=True),
            wanted=dict(type='path', required=True),
            keep=dict(type='int', default=3),
            protect=dict(type='list', elements='path', default=[]),
            known_good_dirs=dict(type='list', elements='path', default=[]),
            marker=dict(type='str', default='.inferops-sglang-installed'),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if not os.path.isabs(p['dir']):
        module.fail_json(msg='dir must be an absolute path, not %r' % p['dir'])
    venvs = list_venvs(p['dir'], p['marker'])
    result = dict(changed=False, venvs=venvs, protected=[], removed=[])
    try:
        named = list(p['protect']) + known_good_commands(p['known_good_dirs'])
    except (IOError, OSError, ValueError) as exc:
        module.warn('No venv was pruned: a known-good manifest cannot be read, so which venv it runs is not known (%s).' % exc)
        module.exit_json(**result)
    protected = protected_venvs([v['path'] for v in venvs], named)
    result['protected'] = protected
    try:
        removed = venvs_to_prune(venvs, p['wanted'], p['keep'], protected)
    except ValueError as exc:
        module.fail_json(msg=str(exc), **result)
    result['removed'] = removed
    result['changed'] = bool(removed)
    if not module.check_mode:
        for path in removed:
            try:
                shutil.rmtree(path)
            except OSError as exc:
                module.fail_json(msg='Could not remove the venv %s (%s); remove it by hand or run as root.' % (path, exc), **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
