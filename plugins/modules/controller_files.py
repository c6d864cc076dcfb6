# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: controller_files
short_description: Write text files into a directory on the controller, in the controller's own process
version_added: 0.1.0
description:
  - Creates O(dir) on the controller when it is missing and writes each of O(files) into it, replacing each file
    atomically (a temporary file in the same directory, then a rename).
  - An action plugin that runs in the controller's process. Nothing is sent to a host and no module process is
    started per file, unlike C(ansible.builtin.template) or C(ansible.builtin.copy) delegated to C(localhost).
    It always writes on the controller, whatever host the task runs for; C(delegate_to) and C(become) do not apply.
  - Meant for reports a play writes on the controller, such as the fleet summary of the P(inferops.sglang.fleet#role)
    role.
author:
  - inferops.sglang developers (@inferops)
options:
  dir:
    description:
      - Absolute path of the directory on the controller. Created (mode C(0755)) when it is missing.
    type: path
    required: true
  files:
    description:
      - The files to write into O(dir), in any order.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description:
          - The file name, a plain name without C(/).
        type: str
        required: true
      content:
        description:
          - The text to write (as UTF-8). Exactly one of O(files[].content) and O(files[].template) is given.
        type: raw
      template:
        description:
          - A template, rendered with the task's variables exactly as the C(ansible.builtin.template) lookup renders it
            (a relative name is looked for in the role's C(templates) directory first).
          - Each template is rendered once, however many files are written from it.
        type: str
  mode:
    description:
      - Permission bits of the files written, in octal, for example C(0644).
    type: raw
    default: '0644'
  show:
    description:
      - The name of one of O(files) whose text is printed on the controller's terminal as it is (plain lines, not a
        JSON value), for example a table a person reads; also in check mode, where nothing is written.
      - Empty prints nothing.
    type: str
    default: ''
attributes:
  action:
    support: full
    description: Runs on the controller, in the controller's process.
  check_mode:
    support: full
    description: Writes nothing; returns the paths and whether a file would change.
  diff_mode:
    support: none
    description: No diff is returned.
  platform:
    support: full
    platforms: posix
    description: The controller's file system.
notes:
  - A file whose content and mode are already those given is left as it is (not rewritten).
'''

EXAMPLES = r'''
- name: Write the report on the controller (JSON and Markdown), once
  inferops.sglang.controller_files:
    dir: /var/tmp/reports
    files:
      - name: report.json
        content: "{{ __report | to_nice_json }}"
      - name: "report-{{ __run_id }}.md"
        template: report.md.j2
      - name: latest.md
        template: report.md.j2
  run_once: true
'''

RETURN = r'''
dir:
  description: The directory written into (O(dir)).
  returned: always
  type: str
  sample: /var/tmp/reports
paths:
  description: The paths of the files written (or, in check mode, that would be written), in file name order.
  returned: always
  type: list
  elements: str
  sample: [/var/tmp/reports/report.json, /var/tmp/reports/report.md]
changed_paths:
  description: The paths whose content or mode changed (or would change, in check mode); all of them when O(dir) was created.
  returned: always
  type: list
  elements: str
  sample: [/var/tmp/reports/report.json]
'''
