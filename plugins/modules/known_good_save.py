#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: known_good_save
short_description: Keep a service configuration as the known-good one, the previous one going to history, in one call
version_added: 0.1.0
description:
  - Creates O(dir) and O(history_dir) (mode C(0700)) when they are missing.
  - When O(dir) holds a C(manifest.json) of another configuration, copies everything in O(dir) into a new history
    entry, O(history_dir)/C(<UTC timestamp>), named by when that configuration was saved (its manifest's C(saved_at),
    for example C(20261201T073002000000Z); entries written before were named by when they were replaced, and are read
    the same way), modes kept.
  - The same configuration saved again (the same files, a manifest that differs only in C(saved_at),
    C(time_to_healthy), C(perf), C(record) or C(schema), as when a stopped unit is started again) rewrites the manifest and
    pushes no history entry, so an identical configuration is never in the history twice.
  - Deletes the history entries (directories directly under O(history_dir), hidden ones excepted) beyond the newest
    O(history), newest by name.
  - Copies each of O(files) into O(dir) under its base name (mode C(0600); owned by root when the module runs as
    root), then writes O(manifest) to C(manifest.json) (mode C(0600)) as JSON, keys sorted, indented by 4.
  - Nothing is ever half written (C48, a disk that fills up) - the new O(dir) is written in full beside it
    (C(.<name>.new)) and renamed into place, the old one kept as C(.<name>.old) until then; a history entry is copied
    into a hidden directory (C(.<timestamp>.partial)) and renamed when complete. A failure leaves O(dir) and the
    history as they were (the partial copies are removed), and its message names the file system and its free space.
    A run interrupted between the two renames is completed by the next call (and read by
    M(inferops.sglang.known_good_info)).
  - One call does what the known_good role's C(file), C(stat), C(copy), C(find) and per-file C(file) and C(copy) tasks
    did, so that keeping a configuration costs one round trip.
  - File contents are never returned (environment files and secret files hold keys).
author:
  - inferops.sglang developers (@inferops)
options:
  dir:
    description: Absolute path of the known-good directory on the target.
    type: path
    required: true
  history_dir:
    description: Absolute path of the history directory on the target.
    type: path
    required: true
  history:
    description: How many earlier known-good configurations to keep in O(history_dir).
    type: int
    default: 5
  files:
    description:
      - Absolute paths of the files to keep (the live files of the service), copied under their base names.
      - A file that does not exist fails the module (the known-good configuration would be incomplete).
    type: list
    elements: path
    required: true
  source_dir:
    description:
      - Take each file of O(files) from this directory (the same base name) instead of from its own path, for example a
        configuration rendered into a directory of its own that is not live yet. Empty - from the files' own paths.
    type: path
  contents:
    description:
      - Files of O(files) whose text is given here instead of read - for example a configuration rendered on the
        controller that is not live yet (the service role's first known-good configuration, the hand-started server).
        Files not listed here are read as O(source_dir) says.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: The file's path, as in O(files).
        type: path
        required: true
      content:
        description: Its text. Never logged (it may be an environment file).
        type: str
        required: true
  manifest:
    description: The manifest to write to C(manifest.json) (the known_good role's manifest schema).
    type: dict
    required: true
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details:
      - Changes nothing; the result says whether the module would change something.
  diff_mode:
    support: none
    details:
      - No diff is returned (the files may hold secrets).
  platform:
    platforms: posix
notes:
  - A file of O(dir) that O(files) no longer lists stays (the history entry made from O(dir) keeps it too).
'''

EXAMPLES = r'''
- name: Keep this configuration as the known-good one (the previous one goes to history)
  inferops.sglang.known_good_save:
    dir: /var/lib/inferops-sglang/known-good
    history_dir: /var/lib/inferops-sglang/history
    history: 5
    files: [/etc/systemd/system/sglang.service, /etc/sglang/sglang.env]
    manifest: {schema: 1, source: cutover, files: [/etc/systemd/system/sglang.service, /etc/sglang/sglang.env]}
'''

RETURN = r'''
history_entry:
  description: The history entry the previous known-good configuration was copied into; null when there was none.
  returned: always
  type: str
  sample: /var/lib/inferops-sglang/history/20261201T073002123456Z
pruned:
  description: The history entries deleted (beyond the newest O(history)).
  returned: always
  type: list
  elements: str
  sample: [/var/lib/inferops-sglang/history/20261101T000000000000Z]
copied:
  description: The paths in O(dir) whose content, mode or owner changed (or would change, in check mode), manifest included.
  returned: always
  type: list
  elements: str
  sample: [/var/lib/inferops-sglang/known-good/sglang.env, /var/lib/inferops-sglang/known-good/manifest.json]
'''

import json
import os
import shutil
import stat
import tempfile
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes

from ansible_collections.inferops.sglang.plugins.module_utils import _known_good


def _needs_write(path, data, mode):
    try:
        info = os.stat(path)
        with open(path, 'rb') as handle:
            same = handle.read() == data
    except (IOError, OSError):
        return True
    owner_ok = os.geteuid() != 0 or (info.st_uid, info.st_gid) == (0, 0)
    return not (same and stat.S_IMODE(info.st_mode) == mode and owner_ok)


def _write(path, data, mode):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix='.' + os.path.basename(path) + '.')
    try:
        with os.fdopen(fd, 'wb') as handle:
            handle.write(data)
        os.chmod(tmp, mode)
        if os.geteuid() == 0:
            os.chown(tmp, 0, 0)
        os.rename(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)


def _read_manifest(store):
    """The store's manifest (dict), {} when it cannot be read or parsed (then it goes to history as before)."""
    try:
        with open(os.path.join(store, _known_good.MANIFEST), 'rb') as handle:
            manifest = json.loads(handle.read().decode('utf-8'))
    except (IOError, OSError, ValueError):
        return {}
    return manifest if isinstance(manifest, dict) else {}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dir=dict(type='path', required=True),
            history_dir=dict(type='path', required=True),
            history=dict(type='int', default=5),
            files=dict(type='list', elements='path', required=True),
            source_dir=dict(type='path'),
            contents=dict(type='list', elements='dict', default=[], options=dict(
                path=dict(type='path', required=True),
                content=dict(type='str', required=True, no_log=True),
            )),
            manifest=dict(type='dict', required=True),
        ),
        supports_check_mode=True,
    )
    params = module.params
    store, history_dir, check = params['dir'], params['history_dir'], module.check_mode
    changed = False
    # Every source first: a missing file fails before anything changes.
    contents = dict((item['path'], item['content']) for item in params['contents'])
    strangers = sorted(set(contents) - set(params['files']))
    if strangers:
        module.fail_json(msg='contents names %s, which files does not list' % ', '.join(strangers))
    sources = []
    for live in params['files']:
        if live in contents:
            sources.append((_known_good.kept_copy_path(store, live), to_bytes(contents[live])))
            continue
        src = os.path.join(params['source_dir'], os.path.basename(live)) if params['source_dir'] else live
        try:
            with open(src, 'rb') as handle:
                sources.append((_known_good.kept_copy_path(store, live), handle.read()))
        except (IOError, OSError) as exc:
            module.fail_json(msg='Could not read %s to keep it as known-good (%s): the service files must exist before '
                             'the configuration is kept; run the service role first' % (src, exc))
    new_dir, old_dir = _known_good.store_swap_paths(store)
    entry = None
    pruned = []
    copied = []
    made = []
    try:
        if not check:
            _known_good.finish_store_swap(store)
        for directory in (store, history_dir):
            if not os.path.isdir(directory) or stat.S_IMODE(os.stat(directory).st_mode) != 0o700:
                changed = True
                if not check:
                    if not os.path.isdir(directory):
                        os.makedirs(directory, 0o700)
                    os.chmod(directory, 0o700)
        manifest = _known_good.known_good_manifest_text(params['manifest']).encode('utf-8')
        wanted = sources + [(os.path.join(store, _known_good.MANIFEST), manifest)]
        copied = [dest for dest, data in wanted if _needs_write(dest, data, 0o600)]
        has_manifest = os.path.isfile(os.path.join(store, _known_good.MANIFEST))
        previous = _read_manifest(store) if has_manifest else {}
        # The configuration being replaced goes to history, named by when it was saved; the same configuration saved
        # again (only the manifest's save fields differ: a stopped unit started again) pushes no entry.
        files_differ = [dest for dest in copied if os.path.basename(dest) != _known_good.MANIFEST]
        if has_manifest and copied and (files_differ or not _known_good.same_configuration(previous, params['manifest'])):
            taken = os.listdir(history_dir) if os.path.isdir(history_dir) else []
            entry = os.path.join(history_dir, _known_good.saved_entry_name(previous.get('saved_at'), time.time(), taken))
        if copied and not check:
            # the new store in full beside the old one, then the old one into history, then the swap
            _remove(new_dir)
            os.mkdir(new_dir, 0o700)
            for dest, data in wanted:
                _write(os.path.join(new_dir, os.path.basename(dest)), data, 0o600)
            if entry:
                partial = os.path.join(history_dir, '.' + os.path.basename(entry) + '.partial')
                _remove(partial)
                try:
                    shutil.copytree(store, partial)
                    os.rename(partial, entry)
                except BaseException:
                    _remove(partial)
                    raise
                made.append(entry)
            _remove(old_dir)
            if os.path.isdir(store):
                os.rename(store, old_dir)
            os.rename(new_dir, store)
            _remove(old_dir)
        changed = changed or bool(copied)
        entries = []
        if os.path.isdir(history_dir):
            entries = [os.path.join(history_dir, name) for name in os.listdir(history_dir)
                       if not name.startswith('.') and os.path.isdir(os.path.join(history_dir, name))]
        if check and entry:
            entries.append(entry)
        pruned = _known_good.history_to_prune(entries, params['history'])
        for path in pruned:
            changed = True
            if not check:
                shutil.rmtree(path)
    except (IOError, OSError) as exc:
        if not check:
            # as it was: the old store back in place, no history entry of this attempt, no partial copy
            _known_good.finish_store_swap(store)
            for path in made:
                _remove(path)
        module.fail_json(msg='Could not keep the known-good configuration in %s (%s; %s): the known-good configuration '
                         'and its history are as they were. Check that the module runs as root (become) and that the '
                         'disk is not full' % (store, exc, _known_good.free_space_text(os.path.dirname(store))))
    module.exit_json(changed=changed or bool(copied), history_entry=entry, pruned=pruned, copied=copied)


if __name__ == '__main__':
    main()
