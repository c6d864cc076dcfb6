#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: model_stage
short_description: Check a model's weight files and read them into the page cache before the server is stopped
version_added: 0.1.0
description:
  - Run while the old server still serves, so that the new server's weight load reads memory, not disk, and the dark
    window of the cutover (old server's last answer to the new one's first) comes close to the warm-load floor.
  - The model directories are O(paths) and the C(--model-path) and C(--speculative-draft-model-path) of O(command)
    that are absolute paths. The weight files are those SGLang 0.5.23 loads (C(sglang/srt/model_loader/loader.py)) -
    the C(*.safetensors) that C(model.safetensors.index.json) lists, every C(*.safetensors) without an index.
  - Every shard the index lists must be present and have the size its own safetensors header gives; otherwise the
    module fails naming the files, and reads nothing.
  - Bytes already in the page cache are measured with C(mincore(2)) before and after. Cold bytes are read in
    parallel threads only as far as C(MemAvailable) of C(/proc/meminfo) less O(margin_gib) allows, as O(mode) says.
    The module never evicts a page and never reads beyond that budget, so the host does not swap for it.
  - Linux only. Check mode measures and says what would be staged; it reads nothing.
options:
  paths:
    description: Model directories to stage (a path that is no directory is listed as skipped).
    type: list
    elements: path
    default: []
  command:
    description: The server's argv (the service role's C(command)); its model and draft model paths are staged.
    type: list
    elements: str
    default: []
  mode:
    description:
      - V(all) reads every cold file when they all fit, else nothing; V(fit) reads the files that fit, in order;
        V(none) only checks and measures.
    type: str
    choices: [all, fit, none]
    default: fit
  margin_gib:
    description: GiB of C(MemAvailable) left untouched after staging.
    type: float
    default: 8
  threads:
    description: Reader threads.
    type: int
    default: 8
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details:
      - Checks the files and measures what is resident; reads nothing.
  diff_mode:
    support: none
    details:
      - Nothing to show as a diff; RV(plan) says what is (or would be) read.
  platform:
    platforms: posix
author:
  - inferops.sglang developers (@inferops)
'''

EXAMPLES = r'''
- name: Stage the model and the draft model of the rendered service before the cutover stops the old server
  inferops.sglang.model_stage:
    command: "{{ inferops_sglang_service.command }}"
    mode: fit
    margin_gib: 16

- name: Only check the shards against the index and measure what is resident
  inferops.sglang.model_stage:
    paths: [/models/kimi-k2]
    mode: none
'''

RETURN = r'''
models:
  description: Per model directory, its weight files' count and bytes; C(skipped_reason) when it is no directory.
  returned: always
  type: list
  elements: dict
  sample: [{"path": "/models/kimi-k2", "files": 64, "bytes": 547000000000, "indexed": true}]
problems:
  description: Missing shards and files of the wrong size (the module then fails).
  returned: always
  type: list
  elements: str
mem_available:
  description: C(MemAvailable) in bytes before staging.
  returned: always
  type: int
total_bytes:
  description: Bytes of all weight files.
  returned: always
  type: int
resident_before:
  description: Bytes of the weight files in the page cache before.
  returned: always
  type: int
resident_after:
  description: Bytes of the weight files in the page cache after (equal to RV(resident_before) in check mode).
  returned: always
  type: int
plan:
  description:
    - What was (check mode - would be) read - C(stage) (paths), C(stage_bytes), C(missing_bytes) (cold bytes),
      C(budget) (bytes available above the margin), C(fits), C(skipped) (paths left cold), C(message).
  returned: always
  type: dict
read:
  description: C(bytes) read, C(seconds), C(gb_per_s) (1e9 bytes per second).
  returned: always
  type: dict
  sample: {"bytes": 2147483648, "seconds": 1.2, "gb_per_s": 1.79}
summary:
  description: What the cutover's record keeps - C(mode), C(check), C(total_bytes), C(resident_before),
    C(resident_after), C(read_bytes), C(seconds), C(gb_per_s), C(message).
  returned: always
  type: dict
msg:
  description: The plan's message.
  returned: always
  type: str
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inferops.sglang.plugins.module_utils import _stage


def main():
    module = AnsibleModule(
        argument_spec=dict(
            paths=dict(type='list', elements='path', default=[]),
            command=dict(type='list', elements='str', default=[]),
            mode=dict(type='str', choices=list(_stage.MODES), default='fit'),
            margin_gib=dict(type='float', default=8.0),
            threads=dict(type='int', default=8),
        ),
        supports_check_mode=True,
    )
    paths = _stage.model_paths(module.params['command'], module.params['paths'])
    try:
        result = _stage.stage(paths, mode=module.params['mode'], margin=int(module.params['margin_gib'] * (1 << 30)),
                              threads=module.params['threads'], check=module.check_mode)
    except OSError as exc:
        module.fail_json(msg='Staging the model failed: %s' % exc)
    if result['problems']:
        module.fail_json(msg='The model files do not match their index; nothing was stopped or read: '
                         + ' '.join(result['problems']), **result)
    module.exit_json(msg=result['plan']['message'], **result)


if __name__ == '__main__':
    main()
