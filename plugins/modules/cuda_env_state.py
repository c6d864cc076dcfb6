#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: cuda_env_state
short_description: Check in one call what the CUDA/NCCL environment of an SGLang server needs on the host
version_added: 0.1.0
description:
  - Everything the role P(inferops.sglang.cuda_env#role) asks the host before and instead of writing, in one
    round trip, changing nothing.
  - B(The CUDA toolkit) - whether C(<cuda_home>/bin/<tool>) exists for every O(tools).
  - B(The sitecustomize.py) to manage - whether it exists, is a regular file or a directory, whether its directory
    exists, which of O(variables) it sets by hand outside the collection's managed blocks, and whether the managed
    block is in place exactly as C(ansible.builtin.blockinfile) would write it (with its mode).
  - B(The environment file and its directory) - whether they are exactly what C(ansible.builtin.template) and
    C(ansible.builtin.file) would leave (content byte for byte, owner, group, mode).
  - B(The spawned child) - runs the command of P(inferops.sglang.spawn_probe_argv#filter) (a child of the server's
    interpreter, started with multiprocessing C(spawn) from a clean environment) and returns what it printed, to be
    read with P(inferops.sglang.spawn_env_missing#filter). It reflects the sitecustomize.py as it is now; after
    the block is (re)written, run it again.
  - A V(false) in C(current) only means that the writing module has to look; a V(true) is certain.
options:
  cuda_home:
    description: The CUDA toolkit directory (C(CUDA_HOME)).
    type: path
    required: true
  tools:
    description: Executables that must exist in C(<cuda_home>/bin).
    type: list
    elements: str
    default: [nvcc, ptxas]
  env_file:
    description: The environment file as C(ansible.builtin.template) would write it.
    type: dict
    required: true
    suboptions:
      path:
        description: Its path.
        type: path
        required: true
      content:
        description: The rendered content (the template's output).
        type: str
        required: true
      owner:
        description: Owner name.
        type: str
      group:
        description: Group name.
        type: str
      mode:
        description: Octal mode, for example C('0644').
        type: str
  env_dir:
    description: The directory of the environment file as C(ansible.builtin.file) with C(state=directory) would leave it.
    type: dict
    required: true
    suboptions:
      path:
        description: Its path.
        type: path
        required: true
      owner:
        description: Owner name.
        type: str
      group:
        description: Group name.
        type: str
      mode:
        description: Octal mode, for example C('0755').
        type: str
  sitecustomize:
    description:
      - The C(sitecustomize.py) holding the managed block, as C(ansible.builtin.blockinfile) would write it. Omit it
        when no block is managed (then no spawned child is run either).
    type: dict
    suboptions:
      path:
        description: Its path (symlinks resolved).
        type: path
        required: true
      marker:
        description: blockinfile's C(marker), with C({mark}).
        type: str
        required: true
      block:
        description: The block's text.
        type: str
        required: true
      mode:
        description: Octal mode, for example C('0644').
        type: str
  variables:
    description: The variables of the block (name to value); their names are looked for outside the managed blocks.
    type: dict
    default: {}
  python:
    description: The server's interpreter (absolute path), whose spawned child is checked. Omit it to run no child.
    type: path
  pythonpath:
    description: The E(PYTHONPATH) the server runs with (empty for none).
    type: str
    default: ''
  paths:
    description:
      - Other files and directories the role writes (its one-time notice), read into RV(paths) so that the role can
        tell with the filter P(inferops.sglang.rendered_current#filter) that they need no write.
    type: list
    elements: path
    default: []
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Changes nothing in any mode; the spawned child runs in check mode too, as it only reads.
  diff_mode:
    support: none
  platform:
    platforms: posix
seealso:
  - module: ansible.builtin.blockinfile
  - module: ansible.builtin.template
author:
  - inferops.sglang developers (@inferops)
'''

EXAMPLES = r'''
- name: Check the CUDA toolkit, the sitecustomize.py and the files in one call
  inferops.sglang.cuda_env_state:
    cuda_home: /usr/local/cuda-13.0
    env_file:
      path: /etc/sglang/cuda.env
      content: "{{ lookup('ansible.builtin.template', 'cuda.env.j2') }}"
      owner: root
      group: root
      mode: "0644"
    env_dir:
      path: /etc/sglang
      owner: root
      group: root
      mode: "0755"
    sitecustomize:
      path: /root/ml-env/lib/python3.12/site-packages/sitecustomize.py
      marker: "# {mark} inferops.sglang managed block: CUDA/NCCL environment"
      block: "{{ lookup('ansible.builtin.template', 'sitecustomize_block.py.j2') }}"
      mode: "0644"
    variables:
      CUDA_HOME: /usr/local/cuda-13.0
    python: /root/ml-env/bin/python3
  register: cuda_env_state

- name: Write only what differs
  ansible.builtin.template:
    src: cuda.env.j2
    dest: /etc/sglang/cuda.env
    mode: "0644"
  when: not cuda_env_state.env_file.current
'''

RETURN = r'''
paths:
  description:
    - Each of O(paths) as it is now - C(exists), C(kind) (C(file), C(directory), C(other)), C(owner), C(group)
      (names; C(uid), C(gid) the numbers), C(mode) (C(0600)) and, for a regular file, C(checksum) (SHA-1 of its
      content, V(null) when it cannot be read); the state C(_managed_files.path_state) reads.
  returned: always
  type: dict
  sample: {"/var/lib/inferops-sglang": {"exists": true, "kind": "directory", "owner": "root", "uid": "0",
           "group": "root", "gid": "0", "mode": "0700"}}
tools:
  description: For each of O(tools), whether C(<cuda_home>/bin/<tool>) exists (a symlink counts, as for C(ansible.builtin.stat)).
  returned: always
  type: dict
  sample: {nvcc: true, ptxas: true}
env_dir:
  description: The directory of the environment file.
  returned: always
  type: dict
  contains:
    exists:
      description: Whether the path exists.
      type: bool
    current:
      description: A directory (not a symlink) with the wanted owner, group and mode.
      type: bool
env_file:
  description: The environment file.
  returned: always
  type: dict
  contains:
    exists:
      description: Whether the path exists.
      type: bool
    current:
      description: A regular file (not a symlink) with exactly the wanted content, owner, group and mode.
      type: bool
sitecustomize:
  description: The sitecustomize.py; null without O(sitecustomize).
  returned: always
  type: dict
  contains:
    exists:
      description: Whether the path exists (a symlink is not followed, as for C(ansible.builtin.stat)).
      type: bool
    isreg:
      description: Whether it is a regular file (a symlink is not).
      type: bool
    isdir:
      description: Whether it is a directory (a symlink is not).
      type: bool
    dir_isdir:
      description: Whether its directory exists as a directory (a symlink is not).
      type: bool
    current:
      description: The managed block is in place as blockinfile would write it, and the file has the wanted mode.
      type: bool
    shadowed:
      description: Names of O(variables) the file mentions outside the collection's managed blocks, in the order given.
      type: list
      elements: str
    marker_problem:
      description:
        - Empty when the managed block's BEGIN and END marker lines alternate (or there are none); else a sentence
          naming the line numbers of every marker. C(ansible.builtin.blockinfile) replaces from the last BEGIN to the
          last END mark, so unbalanced marks could take in hand-written lines; the pre-flight refuses such a file.
      type: str
spawn:
  description:
    - What the spawned child printed (C(rc), C(stdout), C(stderr)), as the command of
      P(inferops.sglang.spawn_probe_argv#filter) returns it; null without O(sitecustomize) or O(python).
    - C(rc) is null and C(stderr) says why when the command could not be built or started.
  returned: always
  type: dict
current:
  description: Whether nothing needs writing (C(env_dir), C(env_file) and, when given, C(sitecustomize) are current).
  returned: always
  type: bool
'''

import grp
import os
import pwd

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native
from ansible_collections.inferops.sglang.plugins.module_utils import _managed_files, _python_probe


def _stat(path):
    """os.lstat of path (a symlink is not followed, as ansible.builtin.stat by default), or None when absent."""
    try:
        return os.lstat(path)
    except OSError:
        return None


def _read(path):
    try:
        with open(path, 'rb') as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def _id_of(name, lookup):
    """The id LOOKUP (a name -> id callable) gives NAME (or a numeric string's int), None when NAME is None, -1 when
    unknown (never matches)."""
    if name is None:
        return None
    if str(name).isdigit():
        return int(name)
    try:
        return lookup(name)
    except KeyError:
        return -1


def uid_of(name):
    """The uid of a user name (or a numeric string), None when not given, -1 when unknown (never matches)."""
    return _id_of(name, lambda user: pwd.getpwnam(user).pw_uid)


def gid_of(name):
    """The gid of a group name (or a numeric string), None when not given, -1 when unknown (never matches)."""
    return _id_of(name, lambda group: grp.getgrnam(group).gr_gid)


def env_dir_state(spec):
    """``{exists, current}`` of the environment file's directory."""
    st = _stat(spec['path'])
    return {'exists': st is not None,
            'current': _managed_files.is_directory(st)
            and _managed_files.attrs_match(st, uid_of(spec.get('owner')), gid_of(spec.get('group')), spec.get('mode'))}


def env_file_state(spec):
    """``{exists, current}`` of the environment file."""
    st = _stat(spec['path'])
    current = (_managed_files.is_regular(st)
               and _managed_files.attrs_match(st, uid_of(spec.get('owner')), gid_of(spec.get('group')), spec.get('mode'))
               and _read(spec['path']) == spec['content'].encode('utf-8'))
    return {'exists': st is not None, 'current': bool(current)}


def sitecustomize_state(spec, names):
    """``{exists, isreg, isdir, dir_isdir, current, shadowed, marker_problem}`` of the sitecustomize.py."""
    path = spec['path']
    st = _stat(path)
    dir_st = _stat(os.path.dirname(path))
    original = _read(path) if _managed_files.is_regular(st) else None
    return {
        'exists': st is not None,
        'isreg': _managed_files.is_regular(st),
        'isdir': _managed_files.is_directory(st),
        'dir_isdir': _managed_files.is_directory(dir_st),
        'current': (_managed_files.attrs_match(st, mode=spec.get('mode'))
                    and _managed_files.block_unchanged(original, spec['marker'], spec['block'])),
        'shadowed': _managed_files.shadowed_names(to_native(original, errors='surrogate_or_strict') if original else '',
                                                  names),
        'marker_problem': _managed_files.marker_problem(original, spec['marker']),
    }


def spawn_child(module, python, names, pythonpath):
    """rc, stdout and stderr of the spawn probe (see _python_probe.spawn_probe_argv)."""
    try:
        argv = _python_probe.spawn_probe_argv(python, names, pythonpath)
    except (ValueError, TypeError) as exc:
        return {'rc': None, 'stdout': '', 'stderr': to_native(exc)}
    try:
        rc, out, err = module.run_command(argv, check_rc=False)
    except OSError as exc:
        return {'rc': None, 'stdout': '', 'stderr': to_native(exc)}
    return {'rc': rc, 'stdout': out, 'stderr': err}


def main():
    file_spec = dict(path=dict(type='path', required=True), owner=dict(type='str'), group=dict(type='str'),
                     mode=dict(type='str'))
    module = AnsibleModule(
        argument_spec=dict(
            cuda_home=dict(type='path', required=True),
            tools=dict(type='list', elements='str', default=['nvcc', 'ptxas']),
            env_file=dict(type='dict', required=True,
                          options=dict(file_spec, content=dict(type='str', required=True, no_log=True))),
            env_dir=dict(type='dict', required=True, options=file_spec),
            sitecustomize=dict(type='dict', options=dict(
                path=dict(type='path', required=True), marker=dict(type='str', required=True),
                block=dict(type='str', required=True, no_log=True), mode=dict(type='str'))),
            variables=dict(type='dict', default={}),
            python=dict(type='path'),
            pythonpath=dict(type='str', default=''),
            paths=dict(type='list', elements='path', default=[]),
        ),
        supports_check_mode=True,
    )
    p = module.params
    names = list(p['variables'])
    result = {
        'tools': dict((tool, os.path.lexists(os.path.join(p['cuda_home'], 'bin', tool))) for tool in p['tools']),
        'env_dir': env_dir_state(p['env_dir']),
        'env_file': env_file_state(p['env_file']),
        'sitecustomize': sitecustomize_state(p['sitecustomize'], names) if p['sitecustomize'] else None,
        'spawn': None,
        'paths': dict((path, _managed_files.path_state(path)) for path in p['paths']),
    }
    if p['sitecustomize'] and p['python']:
        result['spawn'] = spawn_child(module, p['python'], names, p['pythonpath'])
    result['current'] = bool(result['env_dir']['current'] and result['env_file']['current']
                             and (result['sitecustomize'] is None or result['sitecustomize']['current']))
    module.exit_json(changed=False, **result)


if __name__ == '__main__':
    main()
