# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action plugin of inferops.sglang.controller_files: writes text files on the controller, in the controller's own
process (no module is sent anywhere and no process is spawned per file). The documentation is in
plugins/modules/controller_files.py."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.plugins.loader import lookup_loader
from ansible.utils.display import Display

from ansible_collections.inferops.sglang.plugins.module_utils import _controller_files

ARGUMENT_SPEC = dict(
    dir=dict(type='path', required=True),
    files=dict(type='list', elements='dict', required=True, options=dict(
        name=dict(type='str', required=True),
        content=dict(type='raw', no_log=True),
        template=dict(type='str'),
    ), mutually_exclusive=[('content', 'template')], required_one_of=[('content', 'template')]),
    mode=dict(type='raw', default='0644'),
    show=dict(type='str', default=''),
)


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        dummy, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        try:
            mode = int(str(args['mode']), 8)
        except ValueError:
            raise AnsibleActionFail('mode must be octal permission bits such as 0644, not %r' % (args['mode'],))
        entries = args['files']
        bad = [entry['name'] for entry in entries if entry['content'] is not None and not isinstance(entry['content'], str)]
        if bad:
            raise AnsibleActionFail('files: the content of %s is not text; render it with a template (template) or a '
                                    'filter such as to_nice_json' % ', '.join(bad))
        # Each template is rendered once, as the ansible.builtin.template lookup renders it (the role's templates/
        # directory first), however many files it is written to.
        rendered = {}
        templates = sorted(set(entry['template'] for entry in entries if entry['template'] is not None))
        if templates:
            lookup = lookup_loader.get('ansible.builtin.template', loader=self._loader, templar=self._templar)
            for src in templates:
                rendered[src] = lookup.run([src], variables=task_vars)[0]
        files = {}
        for entry in entries:
            if entry['name'] in files:
                raise AnsibleActionFail('files: %s is named twice; give each file one entry' % entry['name'])
            files[entry['name']] = entry['content'] if entry['template'] is None else rendered[entry['template']]
        try:
            written = _controller_files.write_text_files(args['dir'], files, mode=mode, check=self._task.check_mode)
        except (ValueError, OSError) as exc:
            raise AnsibleActionFail('Could not write the files into %s on the controller: %s (give a directory the '
                                    'controller user may create and write)' % (args['dir'], exc))
        if args['show']:
            if args['show'] not in files:
                raise AnsibleActionFail('show: %s is not one of the files' % args['show'])
            # A person's table: printed as its lines, not as a JSON string in the task result.
            Display().display(files[args['show']].rstrip('\n'))
        result.update(changed=written['changed'], dir=args['dir'], paths=written['paths'],
                      changed_paths=written['changed_paths'])
        return result
