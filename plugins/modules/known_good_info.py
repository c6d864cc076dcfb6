#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: known_good_info
short_description: Read a known-good configuration store and compare its copies with the live files, in one call
version_added: 0.1.0
description:
  - Reads C(manifest.json) in O(dir) (the store the P(inferops.sglang.known_good#role) role keeps) and compares
    each live file the manifest lists under C(files) with the copy kept of it in O(dir) (under the file's basename),
    by SHA-1 checksum.
  - One call does what a C(stat), a C(slurp) and a C(stat) per file would do, so that a converged run spends one
    round trip on it.
  - Read-only; never reports a change.
author:
  - inferops.sglang developers (@inferops)
options:
  dir:
    description:
      - Absolute path of the known-good directory on the target, for example C(/var/lib/inferops-sglang/known-good).
      - A directory without C(manifest.json) (or one that does not exist) means there is no known-good configuration.
    type: path
    required: true
extends_documentation_fragment:
  - inferops.sglang._attributes
  - inferops.sglang._attributes.INFO_MODULE
attributes:
  platform:
    platforms: posix
notes:
  - A file counts as missing when it is not a readable regular file. A live file and its copy that are both missing
    do not differ; one missing and the other present do.
  - A manifest that is not a JSON object, or whose C(files) is not a list of absolute paths, fails the task with the
    path and the fix.
'''

EXAMPLES = r'''
- name: Read the known-good configuration
  inferops.sglang.known_good_info:
    dir: /var/lib/inferops-sglang/known-good
  register: __known_good_info

- name: Say which live files differ from the known-good copies
  ansible.builtin.debug:
    msg: "{{ __known_good_info.differ }}"
  when: __known_good_info.exists
'''

RETURN = r'''
exists:
  description: Whether O(dir) holds a C(manifest.json).
  returned: always
  type: bool
  sample: true
manifest:
  description:
    - The manifest (C(manifest.json) parsed), as the known_good role's save.yml wrote it; V({}) when there is none.
    - Its fields are those of the role's manifest schema (C(schema), C(source), C(unit), C(manager), C(command),
      C(files), C(file_modes), C(sitecustomize), C(sitecustomize_block), C(saved_at), ...).
  returned: always
  type: dict
  sample: {"schema": 1, "source": "cutover", "files": ["/etc/systemd/system/sglang.service", "/etc/sglang/sglang.env"]}
differ:
  description:
    - The live files of the manifest's C(files) whose SHA-1 checksum differs from that of the copy kept in O(dir),
      in the manifest's order; V([]) when there is no manifest.
  returned: always
  type: list
  elements: str
  sample: ["/etc/sglang/sglang.env"]
'''

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inferops.sglang.plugins.module_utils import _known_good


def main():
    module = AnsibleModule(
        argument_spec=dict(dir=dict(type='path', required=True)),
        supports_check_mode=True,
    )

    # a save interrupted between its two renames left the old store beside the directory: that one is read
    try:
        store = _known_good.read_store(module.params['dir'], module.sha1)
    except (IOError, OSError) as exc:
        module.fail_json(msg='Could not read %s (%s): run as root (become), which the known-good store needs'
                         % (os.path.join(_known_good.readable_store(module.params['dir']), _known_good.MANIFEST), exc))
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=False, **store)


if __name__ == '__main__':
    main()
