#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: service_files
short_description: Put a service's rendered files and directories in place in one call, and enable its systemd unit
version_added: 0.1.0
description:
  - The service role's one remote call per phase. Directories are created with their owner, group and mode; each file
    is compared by checksum (SHA-1) with its wanted content, and only a file that differs is written (atomically, after
    a backup of the file it replaces); owner, group and mode are then set where they differ. A file with
    O(files[].state=absent) is removed, after a backup (O(files[].backup)).
  - A file with O(files[].validate) is checked on the host before anything is written, directories included (also in
    check mode, since the check writes only into a private temporary directory, which it removes) - the wanted content is
    written into a private temporary directory under the file's own name, and the host's own tool reads it there; a
    file the tool refuses fails the module with the tool's message, and nothing is written.
  - The contents are rendered on the controller (the role uses the C(ansible.builtin.template) lookup); a converged
    host costs one module call, whatever the number of files.
  - With O(systemd_unit), in this order - C(systemd-analyze security) measures the unit's exposure before anything is
    written; after the files, C(systemctl daemon-reload) runs when a file changed; O(enabled) enables or disables the
    unit for boot (as M(ansible.builtin.systemd_service) decides, from C(systemctl is-enabled)); the exposure is
    measured again when a file changed.
  - A directory that existed owned by another user than its O(directories[].owner) is reported
    (RV(directories[].hand_over)) but its content is not changed here; the role hands it over recursively.
author:
  - inferops.sglang developers (@inferops)
options:
  directories:
    description: Directories to create (parents included, each with the same attributes) or whose attributes to set.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Absolute path of the directory.
        type: path
        required: true
      owner:
        description: User name that owns it; left as it is when not given.
        type: str
      group:
        description: Group name that owns it; left as it is when not given.
        type: str
      mode:
        description: Octal mode, as a string (for example V('0750')); left as it is when not given.
        type: str
  files:
    description: Files to write or remove.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Absolute path of the file; its directory must exist (outside check mode).
        type: path
        required: true
      content:
        description: The wanted content (text, written as UTF-8); required for O(files[].state=present).
        type: str
      state:
        description: V(present) - the file holds O(files[].content); V(absent) - there is no file.
        type: str
        choices: [present, absent]
        default: present
      owner:
        description: User name that owns it; left as it is when not given.
        type: str
      group:
        description: Group name that owns it; left as it is when not given.
        type: str
      mode:
        description: Octal mode, as a string (for example V('0600')).
        type: str
      backup:
        description:
          - Keep a copy of a file that is replaced or removed (C(PATH.PID.DATE@TIME~), with its mode and owner), as
            M(ansible.builtin.template) does; nothing is kept where there is no file.
        type: bool
        default: true
      validate:
        description:
          - Check the wanted content with the host's own tool before anything is written (only with
            O(files[].state=present)).
          - V(systemd-unit) - C(systemd-analyze --man=no verify) of the content as a unit of the file's name. Every
            line systemd-analyze prints about that unit fails it, the warnings after which systemd goes on
            (C(path is not absolute, ignoring), C(Unknown key)) included, since systemd would run another unit than
            the one written. A command of the unit that does not exist yet (C(is not executable - No such file or
            directory); the venv of a managed SGLang version, installed later in the run) is a note in
            RV(validation[].notes), not a failure; the pre-flight checks the interpreter itself. C(EnvironmentFile=),
            C(User=) and C(WorkingDirectory=) are not looked up by C(systemd-analyze verify) (systemd 252), so files,
            users and directories this run creates later need not exist. Skipped, with a note, where
            C(systemd-analyze) is missing (no systemd).
          - V(supervisor-program) - supervisor's own parser (C(supervisor.options), run by O(supervisor_python)) reads
            the content and converts every value of its C([program:NAME]) section as supervisord does at its start
            (C(%%) expansions, numbers, signals). A log directory that does not exist yet is a note. Skipped, with a
            note, where O(supervisor_python) does not exist yet (the role installs the venv after the pre-flight).
          - V(none) - no check.
        type: str
        choices: [none, systemd-unit, supervisor-program]
        default: none
      diff:
        description:
          - Whether --diff shows this file's content. V(false) for a file that may hold secrets; its content is also
            left out of the module's invocation (only its checksum is shown).
        type: bool
        default: true
  supervisor_python:
    description: The interpreter of the venv that holds supervisor, for O(files[].validate=supervisor-program).
    type: path
  systemd_unit:
    description: A systemd unit (for example V(sglang.service)) to reload, measure and enable around the files.
    type: str
  exposure:
    description: Measure O(systemd_unit)'s exposure with C(systemd-analyze security) (RV(exposure)).
    type: bool
    default: false
  enabled:
    description:
      - Whether O(systemd_unit) starts at boot; left as it is when not given.
      - In check mode, when a file changed (it was not written, systemd cannot say what it would do), the unit is not
        enabled nor checked; RV(enabled_now) says what C(systemctl is-enabled) answers now.
    type: bool
extends_documentation_fragment:
  - inferops.sglang._attributes
attributes:
  check_mode:
    support: full
    details:
      - Compares the files and reports what would change; writes, removes, reloads and enables nothing.
      - O(files[].validate) runs in check mode too (it writes only into its own temporary directory).
  diff_mode:
    support: full
    details:
      - The before and after texts of each file whose content changes (except O(files[].diff=false)).
  platform:
    platforms: posix
'''

EXAMPLES = r'''
- name: Render the systemd unit
  inferops.sglang.service_files:
    files:
      - path: /etc/systemd/system/sglang.service
        content: "{{ lookup('ansible.builtin.template', 'sglang.service.j2') }}"
        owner: root
        group: root
        mode: "0644"
    systemd_unit: sglang.service
    exposure: true
    enabled: true

- name: Check a rendered unit before anything changes (check mode; fails with systemd-analyze's message)
  inferops.sglang.service_files:
    files:
      - path: /etc/systemd/system/sglang.service
        content: "{{ lookup('ansible.builtin.template', 'sglang.service.j2') }}"
        validate: systemd-unit
  check_mode: true

- name: Create the directories and render the environment file (its content is never shown)
  inferops.sglang.service_files:
    directories:
      - {path: /etc/sglang, owner: root, group: root, mode: "0755"}
    files:
      - {path: /etc/sglang/sglang.env, content: "HF_HOME=/var/cache/sglang\n", mode: "0600", diff: false}
'''

RETURN = r'''
directories:
  description: One entry per O(directories), in their order.
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: The directory.
      type: str
    changed:
      description: Whether it was created or an attribute was set (would be, in check mode).
      type: bool
    existed:
      description: Whether it existed before this call.
      type: bool
    owner_before:
      description: User name that owned it before this call (the uid as a string without a passwd entry); null when it did not exist.
      type: str
    hand_over:
      description: Whether it existed, owned by another user than O(directories[].owner) (its content is still the other user's).
      type: bool
files:
  description: One entry per O(files), in their order.
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: The file.
      type: str
    changed:
      description: Whether it was written, removed or an attribute was set (would be, in check mode).
      type: bool
    content_changed:
      description: Whether its content was written or it was removed (would be, in check mode).
      type: bool
    checksum:
      description: SHA-1 of its content after this call (the wanted one in check mode); null when there is no file.
      type: str
    backup_file:
      description: The copy kept of the replaced or removed file; only where one was kept.
      type: str
      returned: when a file was replaced or removed with O(files[].backup), not in check mode
validation:
  description: One entry per file with O(files[].validate) other than V(none), in their order; all passed.
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: The file.
      type: str
    validate:
      description: The check (V(systemd-unit), V(supervisor-program)).
      type: str
    skipped:
      description: Whether the check could not run here (its tool is missing); RV(validation[].notes) says why.
      type: bool
    notes:
      description: What the check noted without failing (a command or directory that does not exist yet, why it was skipped).
      type: list
      elements: str
    output:
      description: The tool's output, the temporary path replaced by the file's path.
      type: str
files_changed:
  description: Whether any file changed (the directories and the unit's enablement left aside).
  returned: always
  type: bool
daemon_reloaded:
  description: Whether C(systemctl daemon-reload) ran (a file changed, with O(systemd_unit), not in check mode).
  returned: always
  type: bool
exposure:
  description:
    - Standard output of C(systemd-analyze security --no-pager UNIT) before the files were written (V(before)) and after
      (V(after); null when no file changed or in check mode). Empty text where systemd-analyze failed or is missing.
  returned: with O(exposure)
  type: dict
  sample: {before: "...\n→ Overall exposure level for sglang.service: 2.1 OK 🙂\n", after: null}
enabled:
  description: Whether the unit is enabled for boot after this call (would be, in check mode); null when not decided.
  returned: always
  type: bool
enabled_changed:
  description: Whether the unit was enabled or disabled (would be, in check mode).
  returned: always
  type: bool
enabled_now:
  description: What C(systemctl is-enabled UNIT) answered before any change (for example V(enabled), V(disabled)); null without O(enabled).
  returned: always
  type: str
  sample: enabled
'''

import os
import pwd
import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_native, to_text
from ansible_collections.inferops.sglang.plugins.module_utils._rendered_files import (
    SUPERVISOR_CHECK, VALIDATORS, checksum, file_action, hand_over_needed, is_enabled, supervisor_check_verdict,
    text_diff, unit_verify_verdict)


def owner_name(uid):
    """User name of UID, else the uid as a string."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def shown_invocation(params):
    """The module's arguments as its result shows them: a content that must not be shown is replaced by its checksum."""
    files = []
    for spec in params['files']:
        spec = dict(spec)
        if not spec.get('diff', True) and spec.get('content') is not None:
            spec['content'] = '(not shown; sha1 %s)' % checksum(to_bytes(spec['content']))
        files.append(spec)
    return {'module_args': dict(params, files=files)}


class Files(object):
    """One call: directories, files, then the systemd unit."""

    def __init__(self, module):
        self.module = module
        self.check = module.check_mode
        self.result = {'changed': False, 'directories': [], 'files': [], 'files_changed': False, 'daemon_reloaded': False,
                       'enabled': None, 'enabled_changed': False, 'enabled_now': None, 'validation': []}
        self.diffs = []

    def attributes(self, spec, path=None):
        """The file arguments AnsibleModule.set_fs_attributes_if_different takes, for one entry of directories or files."""
        return self.module.load_file_common_arguments({'owner': spec.get('owner'), 'group': spec.get('group'),
                                                       'mode': spec.get('mode')}, path=path or spec['path'])

    def fail(self, msg, **kwargs):
        self.module.fail_json(msg=msg, invocation=shown_invocation(self.module.params), **dict(self.result, **kwargs))

    def directory(self, spec):
        path = spec['path']
        existed = os.path.isdir(path)
        if os.path.lexists(path) and not existed:
            self.fail('%s exists and is not a directory: move it away, or set another path in the role variables' % path)
        owner_before = owner_name(os.stat(path).st_uid) if existed else None
        changed = False
        # The diff as ansible.builtin.file shows it: the state of a directory created, the attributes set.
        diff = {'before': {'path': path}, 'after': {'path': path}}
        if not existed:
            changed = True
            diff['before']['state'], diff['after']['state'] = 'absent', 'directory'
            missing = []
            cur = path
            while not os.path.isdir(cur):
                missing.insert(0, cur)
                cur = os.path.dirname(cur)
            for part in missing:
                if self.check:
                    break
                try:
                    os.mkdir(part)
                except OSError as e:
                    self.fail('cannot create the directory %s: %s' % (part, to_native(e)))
                self.module.set_fs_attributes_if_different(self.attributes(spec, part), True, expand=False)
        else:
            changed = self.module.set_fs_attributes_if_different(self.attributes(spec), False, diff=diff, expand=False)
        self.attribute_diff(diff)
        return {'path': path, 'changed': changed, 'existed': existed, 'owner_before': owner_before,
                'hand_over': hand_over_needed(existed, owner_before, spec.get('owner'))}

    def file(self, spec):
        path = spec['path']
        state = spec['state']
        if state == 'present' and spec.get('content') is None:
            self.fail('files[].content is required for %s (state present)' % path)
        if os.path.isdir(path):
            self.fail('%s is a directory, not a file: move it away, or set another path in the role variables' % path)
        before = None
        if os.path.lexists(path):
            with open(path, 'rb') as f:
                before = f.read()
        wanted = to_bytes(spec['content']) if state == 'present' else None
        action = file_action(state, checksum(before) if before is not None else None,
                             checksum(wanted) if wanted is not None else None)
        entry = {'path': path, 'changed': action != 'none', 'content_changed': action != 'none',
                 'checksum': checksum(wanted) if wanted is not None else None}
        if action == 'remove' and not self.check:
            if spec['backup']:
                entry['backup_file'] = self.module.backup_local(path)
            os.unlink(path)
        elif action == 'write' and not self.check:
            if before is not None and spec['backup']:
                entry['backup_file'] = self.module.backup_local(path)
            self.write(path, wanted)
        diff = {'before': {'path': path}, 'after': {'path': path}}
        if state == 'present' and os.path.lexists(path):
            # In check mode a file not written yet keeps its old attributes: they are reported as they would change.
            entry['changed'] = self.module.set_fs_attributes_if_different(self.attributes(spec), entry['changed'], diff=diff,
                                                                          expand=False)
        if not spec['diff']:
            return entry
        if action == 'remove':
            # As ansible.builtin.file shows a removal: its state, never its content.
            self.attribute_diff({'before': {'path': path, 'state': 'file'}, 'after': {'path': path, 'state': 'absent'}})
        elif action == 'write':
            if self.module._diff:
                self.diffs.append(text_diff(path, None if before is None else to_text(before, errors='surrogate_or_replace'),
                                            spec['content']))
        else:
            self.attribute_diff(diff)
        return entry

    def validate(self, spec):
        """Check one file's wanted content with the host's tool (files[].validate); fail, naming the tool's message,
        when it refuses it. Returns the entry of RV(validation)."""
        path = spec['path']
        kind = spec['validate']
        entry = {'path': path, 'validate': kind, 'skipped': False, 'notes': [], 'output': ''}
        if kind == 'systemd-unit':
            tool = self.module.get_bin_path('systemd-analyze')
            if not tool:
                entry.update(skipped=True, notes=['systemd-analyze is not installed here (no systemd): %s was not verified' % path])
                return entry
            label = 'systemd-analyze verify'
        else:
            tool = self.module.params['supervisor_python']
            if not tool:
                self.fail('files[].validate supervisor-program needs supervisor_python (the supervisor venv\'s interpreter)')
            if not os.access(tool, os.X_OK):
                entry.update(skipped=True, notes=['%s does not exist yet (the supervisor venv is installed later in the run): '
                                                  '%s was not checked' % (tool, path)])
                return entry
            label = "supervisor's configuration parser"
        # A private directory (mode 0700), the file under its own name: systemd takes the unit's name from it.
        tmpdir = tempfile.mkdtemp(prefix='inferops-sglang-validate.')
        try:
            tmp = os.path.join(tmpdir, os.path.basename(path))
            with open(tmp, 'wb') as f:
                f.write(to_bytes(spec['content']))
            if kind == 'systemd-unit':
                rc, out, err = self.module.run_command([tool, '--man=no', 'verify', tmp])
                output = '\n'.join(part.strip() for part in (out, err) if part and part.strip())
                problems, notes = unit_verify_verdict(rc, output, tmp, os.path.basename(path))
            else:
                rc, out, err = self.module.run_command([tool, '-c', SUPERVISOR_CHECK, tmp])
                output = '\n'.join(part.strip() for part in (out, err) if part and part.strip())
                problems, notes = supervisor_check_verdict(rc, out, err)
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)
        entry['notes'] = [note.replace(tmp, path) for note in notes]
        entry['output'] = output.replace(tmp, path)
        if problems:
            self.fail('%s refuses %s; nothing was written: %s'
                      % (label, path, ' '.join(problem.replace(tmp, path) for problem in problems)),
                      validation=self.result['validation'] + [entry])
        return entry

    def attribute_diff(self, diff):
        """Add DIFF (before/after dicts of a path's state and attributes) to the diffs when it says anything changed."""
        if self.module._diff and diff['before'] != diff['after']:
            self.diffs.append(diff)

    def write(self, path, data):
        directory = os.path.dirname(path)
        try:
            fd, tmp = tempfile.mkstemp(prefix='.%s.' % os.path.basename(path), dir=directory)
        except OSError as e:
            self.fail('cannot write %s: %s (its directory must exist and be writable)' % (path, to_native(e)))
        try:
            with os.fdopen(fd, 'wb') as f:
                f.write(data)
            self.module.atomic_move(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)

    def systemctl(self, *args):
        return self.module.run_command([self.module.get_bin_path('systemctl', required=True)] + list(args))

    def exposure(self, unit):
        analyze = self.module.get_bin_path('systemd-analyze')
        if not analyze:
            return ''
        rc, out, err = self.module.run_command([analyze, 'security', '--no-pager', unit])
        return out

    def run(self):
        params = self.module.params
        unit = params['systemd_unit']
        if (params['exposure'] or params['enabled'] is not None) and not unit:
            self.fail('exposure and enabled need systemd_unit (the unit to measure or enable)')
        # Every check before anything is written: a refused file leaves the host as it was.
        for spec in params['files']:
            if spec['validate'] != 'none' and spec['state'] == 'present':
                if spec.get('content') is None:
                    self.fail('files[].content is required for %s (state present)' % spec['path'])
                self.result['validation'].append(self.validate(spec))
        self.result['directories'] = [self.directory(spec) for spec in params['directories']]
        if params['exposure']:
            self.result['exposure'] = {'before': self.exposure(unit), 'after': None}
        self.result['files'] = [self.file(spec) for spec in params['files']]
        files_changed = any(f['changed'] for f in self.result['files'])
        self.result['files_changed'] = files_changed
        if unit and files_changed and not self.check:
            rc, out, err = self.systemctl('daemon-reload')
            if rc != 0:
                self.fail('systemctl daemon-reload failed (rc %d): %s' % (rc, (err or out).strip()))
            self.result['daemon_reloaded'] = True
        if params['enabled'] is not None:
            self.enable(unit, params['enabled'], files_changed)
        if params['exposure'] and files_changed and not self.check:
            self.result['exposure']['after'] = self.exposure(unit)
        self.result['changed'] = (files_changed or self.result['enabled_changed']
                                  or any(d['changed'] for d in self.result['directories']))
        if self.diffs:
            self.result['diff'] = self.diffs
        self.module.exit_json(invocation=shown_invocation(params), **self.result)

    def enable(self, unit, want, files_changed):
        rc, out, err = self.systemctl('is-enabled', unit)
        self.result['enabled_now'] = out.strip()
        if self.check and files_changed:
            return
        now = is_enabled(rc, out)
        self.result['enabled'] = now
        if now == want:
            return
        self.result['enabled_changed'] = True
        self.result['enabled'] = want
        if not self.check:
            action = 'enable' if want else 'disable'
            rc, out, err = self.systemctl(action, unit)
            if rc != 0:
                self.fail('systemctl %s %s failed (rc %d): %s' % (action, unit, rc, (err or out).strip()))


def main():
    file_spec = dict(path=dict(type='path', required=True), content=dict(type='str', no_log=True),
                     state=dict(type='str', choices=['present', 'absent'], default='present'),
                     owner=dict(type='str'), group=dict(type='str'), mode=dict(type='str'),
                     backup=dict(type='bool', default=True), diff=dict(type='bool', default=True),
                     validate=dict(type='str', choices=list(VALIDATORS), default='none'))
    dir_spec = dict(path=dict(type='path', required=True), owner=dict(type='str'), group=dict(type='str'),
                    mode=dict(type='str'))
    module = AnsibleModule(
        argument_spec=dict(
            directories=dict(type='list', elements='dict', options=dir_spec, default=[]),
            files=dict(type='list', elements='dict', options=file_spec, default=[]),
            supervisor_python=dict(type='path'),
            systemd_unit=dict(type='str'),
            exposure=dict(type='bool', default=False),
            enabled=dict(type='bool'),
        ),
        supports_check_mode=True,
    )
    # content is no_log, so that no file's text reaches the target's journal with the invocation; a file with
    # diff=true is shown in --diff and in the result, so its text is not masked there.
    for spec in module.params['files']:
        if spec.get('diff', True) and spec.get('content'):
            module.no_log_values.discard(spec['content'])
    Files(module).run()


if __name__ == '__main__':
    main()
