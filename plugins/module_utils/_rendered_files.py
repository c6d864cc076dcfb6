# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Rules of the module service_files: which rendered file is written, and what systemd says about a unit.

Pure functions (no file or process access); the module does the reading and writing.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import hashlib

# ``systemctl is-enabled`` answers (rc 0) that ansible.builtin.systemd_service does not take for "enabled": it enables
# the unit anyway (a transient enablement, one through another unit, an alias).
NOT_ENABLED_ANSWERS = ('enabled-runtime', 'indirect', 'alias')


def checksum(data):
    """SHA-1 hex digest of DATA (bytes), the checksum Ansible's stat and copy report (40 hex characters)."""
    return hashlib.sha1(data).hexdigest()


def file_action(state, current_checksum, wanted_checksum):
    """What to do with one file: 'write', 'remove' or 'none'.

    :param state: 'present' (the file must hold the wanted content) or 'absent' (it must not exist).
    :param current_checksum: checksum() of the file on the host, None where there is no file.
    :param wanted_checksum: checksum() of the wanted content (ignored for 'absent').
    :raises ValueError: on another state.
    """
    if state == 'absent':
        return 'remove' if current_checksum is not None else 'none'
    if state != 'present':
        raise ValueError("state must be 'present' or 'absent', not %r" % (state,))
    return 'write' if current_checksum != wanted_checksum else 'none'


def hand_over_needed(exists, owner_before, owner):
    """Whether a directory's content must be handed over to OWNER (a user name): it existed, owned by another user.

    :param exists: whether the directory existed before this run.
    :param owner_before: the user name owning it then (None when unknown, e.g. a uid without a passwd entry: the
        uid as a string is compared instead by the caller).
    :param owner: the wanted owner; None (not known yet, check mode before the user exists) never hands over.
    """
    return bool(exists and owner is not None and owner_before != owner)


def is_enabled(rc, out):
    """Whether ``systemctl is-enabled UNIT`` (its exit status RC and standard output OUT) says the unit is enabled.

    The same answer as ansible.builtin.systemd_service: rc 0 is enabled, except the answers NOT_ENABLED_ANSWERS.
    """
    return rc == 0 and (out or '').strip() not in NOT_ENABLED_ANSWERS


def text_diff(path, before, after):
    """The diff entry of one file, the shape Ansible's --diff shows: before/after texts and their headers.

    :param before: the file's text before (None: there was no file); :param after: its text after (None: removed).
    """
    return {'before_header': path if before is not None else '%s (absent)' % path,
            'after_header': path if after is not None else '%s (absent)' % path,
            'before': before or '', 'after': after or ''}
