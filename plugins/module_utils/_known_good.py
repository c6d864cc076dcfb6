# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pure helpers for the known-good configuration store (the manifest and the copies kept beside it).

The store is a directory holding ``manifest.json`` (written by the known_good role's save.yml) and one copy of each
live file the manifest lists under ``files`` (absolute paths), kept under the file's basename.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import calendar
import json
import os
import shutil
import time

from ansible_collections.inferops.sglang.plugins.module_utils._secrets import redact_argv

MANIFEST = 'manifest.json'


def parse_known_good_manifest(text, path):
    """The text of a manifest (str) -> its mapping (dict).

    Raises ValueError naming PATH when the text is not a JSON object, or when its ``files`` is not a list of
    absolute paths.
    """
    try:
        manifest = json.loads(text)
    except ValueError as exc:
        raise ValueError('%s is not valid JSON (%s): remove the known-good directory and run the site playbook again, '
                         'which keeps the running configuration as the known-good one' % (path, exc))
    if not isinstance(manifest, dict):
        raise ValueError('%s holds a JSON %s, not an object: remove the known-good directory and run the site '
                         'playbook again' % (path, type(manifest).__name__))
    files = manifest.get('files', [])
    if not isinstance(files, list) or not all(isinstance(f, str) and f.startswith('/') for f in files):
        raise ValueError('%s: files must be a list of absolute paths (it is %r): remove the known-good directory and '
                         'run the site playbook again' % (path, files))
    return manifest


def kept_copy_path(store_dir, live_path):
    """Where the store keeps its copy of LIVE_PATH: STORE_DIR/basename(LIVE_PATH) (str)."""
    return os.path.join(store_dir, os.path.basename(live_path))


def known_good_differ(files, store_dir, checksum):
    """The live files whose content differs from the copy kept of them, in manifest order (list of str).

    FILES: the manifest's absolute live paths; CHECKSUM: a callable path -> a digest (str), or None when the path is
    not a readable regular file. A file missing on both sides does not differ; missing on one side does.
    """
    return [path for path in files if checksum(path) != checksum(kept_copy_path(store_dir, path))]


def known_good_manifest_text(manifest):
    """The text written to manifest.json for MANIFEST (dict): JSON, keys sorted, indent 4, a final newline (str).

    The same text as Ansible's ``to_nice_json`` filter followed by a newline. Secrets in the ``command`` (argv
    words; only shown and compared, never run) are masked as ``_secrets.redact_argv`` does: values of secret flags
    and URL passwords, so that the manifest never holds one.
    """
    if isinstance(manifest.get('command'), (list, tuple)):
        manifest = dict(manifest, command=redact_argv(manifest['command']))
    return json.dumps(manifest, indent=4, sort_keys=True, separators=(',', ': '), ensure_ascii=False) + '\n'


def history_to_prune(entries, keep):
    """The history entries (paths, list of str) beyond the newest KEEP (int >= 0), newest first by name (the names are
    UTC timestamps): the ones to delete (list of str)."""
    return sorted(entries, reverse=True)[max(0, int(keep)):]


def history_entry_name(epoch):
    """The name of a history entry for EPOCH (seconds, float): its UTC time, e.g. 20261201T073002123456Z (str)."""
    seconds = int(epoch)
    return time.strftime('%Y%m%dT%H%M%S', time.gmtime(seconds)) + '%06dZ' % int(round((epoch - seconds) * 1e6) % 1000000)


# Manifest fields that describe one save of a configuration, not the configuration: a save that changes only these
# (a stopped unit started again, the same configuration gated again) rewrites the manifest but pushes no history entry.
SAVE_FIELDS = ('saved_at', 'time_to_healthy', 'perf', 'record', 'schema')


def same_configuration(old, new):
    """Whether two manifests (dicts) describe the same configuration: equal but for ``SAVE_FIELDS``, the ``command``
    compared as the manifest keeps it (secrets masked). None or {} for OLD is never the same."""
    if not isinstance(old, dict) or not old or not isinstance(new, dict):
        return False

    def configuration(manifest):
        kept = json.loads(known_good_manifest_text(manifest))
        return dict((key, value) for key, value in kept.items() if key not in SAVE_FIELDS)

    return configuration(old) == configuration(new)


def saved_entry_name(saved_at, fallback_epoch, taken=()):
    """The history name of a configuration being replaced: when it was SAVED (its manifest's ``saved_at``, UTC ISO 8601
    as ``2026-12-01T07:30:02Z``), in the names' format (``20261201T073002000000Z``, ``history_entry_name``).

    :param saved_at: the old manifest's ``saved_at`` (str); None or unreadable: FALLBACK_EPOCH (the replacement time,
        as entries were named before).
    :param taken: names already in the history: a clash moves the name on by one microsecond (names stay in order).
    :returns: str.
    """
    try:
        epoch = float(calendar.timegm(time.strptime(str(saved_at), '%Y-%m-%dT%H:%M:%SZ')))
    except (TypeError, ValueError):
        epoch = float(fallback_epoch)
    name = history_entry_name(epoch)
    step = 0
    while name in taken:
        step += 1
        name = history_entry_name(epoch + step / 1e6)
    return name


def store_swap_paths(store_dir):
    """Where known_good_save writes a new store before the swap, and keeps the old one during it:
    (``<parent>/.<name>.new``, ``<parent>/.<name>.old``), both str."""
    parent, name = os.path.split(os.path.normpath(store_dir))
    return os.path.join(parent, '.%s.new' % name), os.path.join(parent, '.%s.old' % name)


def readable_store(store_dir):
    """The directory holding the known-good store to read: STORE_DIR, or its ``.old`` copy when a save was interrupted
    between its two renames (STORE_DIR gone, the old one kept). str."""
    old = store_swap_paths(store_dir)[1]
    if not os.path.isdir(store_dir) and os.path.isfile(os.path.join(old, MANIFEST)):
        return old
    return store_dir


def finish_store_swap(store_dir):
    """Undo what an interrupted known_good_save left: the old store back where it was (when the new one never got
    there), a stale new store removed. Returns True when it renamed the old one back."""
    new, old = store_swap_paths(store_dir)
    restored = False
    if not os.path.isdir(store_dir) and os.path.isdir(old):
        os.rename(old, store_dir)
        restored = True
    for leftover in (new, old):
        if os.path.isdir(leftover) and not os.path.islink(leftover):
            shutil.rmtree(leftover, ignore_errors=True)
    return restored


def free_space_text(path):
    """'<path>: N MiB free of M MiB' for the file system holding PATH (its nearest existing parent), for messages."""
    probe = path
    while probe and not os.path.exists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    try:
        info = os.statvfs(probe or '/')
    except OSError as exc:
        return 'free space of %s unknown (%s)' % (path, exc)
    mib = 1024 * 1024
    return 'the file system of %s has %d MiB free of %d MiB' % (probe, info.f_bavail * info.f_frsize // mib,
                                                                info.f_blocks * info.f_frsize // mib)


def read_store(store_dir, sha1):
    """The known-good store at STORE_DIR as ``known_good_info`` returns it (one home for the read, used by that module
    and by the service pre-flight's host read): dict ``exists`` (bool), ``manifest`` (dict, {} without one) and
    ``differ`` (list of str, ``known_good_differ``'s). SHA1: a callable path -> digest (``AnsibleModule.sha1``), called
    for readable regular files only (any other path has no digest).

    :raises IOError, OSError: when the manifest cannot be read. :raises ValueError: when it is not a manifest
        (``parse_known_good_manifest``'s message).
    """
    store = readable_store(store_dir)
    manifest_path = os.path.join(store, MANIFEST)
    if not os.path.isfile(manifest_path):
        return {'exists': False, 'manifest': {}, 'differ': []}
    with open(manifest_path, 'r') as handle:
        manifest = parse_known_good_manifest(handle.read(), manifest_path)

    def checksum(path):
        return sha1(path) if os.path.isfile(path) and os.access(path, os.R_OK) else None
    return {'exists': True, 'manifest': manifest, 'differ': known_good_differ(manifest.get('files', []), store, checksum)}
