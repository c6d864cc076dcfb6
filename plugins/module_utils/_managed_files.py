# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""Whether files the collection lays down are already as they should be, so that a converged host needs no write.

Each function answers "would the writing module leave this as it is?" conservatively: True only when the writing
module (``ansible.builtin.file``, ``ansible.builtin.template``, ``ansible.builtin.blockinfile``) is certain to report
no change; False sends the caller to that module, which then decides (and writes, with backup, check mode and diff)
as it always did. A wrong False costs a round trip; a True is never wrong.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import grp
import hashlib
import os
import pwd
import re
import stat

from ansible_collections.inferops.sglang.plugins.module_utils._plans.values import truth

# A managed block of this collection in a text file (any of its markers), as the cuda_env role writes it.
MANAGED_BLOCK = re.compile(r'(?s)# BEGIN inferops\.sglang managed block.*?# END inferops\.sglang managed block[^\n]*\n?')


def octal_mode(mode):
    """``'0644'`` (or ``'644'``, or an int) -> 0o644; None for a symbolic mode (``u=rw``) or None."""
    if isinstance(mode, int):
        return mode
    if mode is None or not re.match(r'^0?[0-7]{3,4}$', str(mode)):
        return None
    return int(str(mode), 8)


def attrs_match(st, uid=None, gid=None, mode=None):
    """Whether an ``os.stat`` result has the owner, group and permission bits a file module would set.

    :param st: an ``os.stat_result`` (or anything with ``st_uid``, ``st_gid``, ``st_mode``), or None (absent).
    :param uid: wanted owner uid, or None (not managed).
    :param gid: wanted group gid, or None (not managed).
    :param mode: wanted mode (``'0644'`` or an int), or None (not managed). A symbolic mode never matches.
    :returns: bool.
    """
    if st is None:
        return False
    if uid is not None and st.st_uid != uid:
        return False
    if gid is not None and st.st_gid != gid:
        return False
    if mode is not None:
        wanted = octal_mode(mode)
        if wanted is None or stat.S_IMODE(st.st_mode) != wanted:
            return False
    return True


def block_unchanged(original, marker, block):
    """Whether ``ansible.builtin.blockinfile`` (state present, BEGIN/END marks) leaves ``original`` as it is.

    That is: the last line holding the BEGIN mark comes before the last line holding the END mark, the lines
    between them are the block's, and the line before the block ends in a newline (blockinfile would add one).

    :param original: the file's bytes, or None when it does not exist (blockinfile creates it: a change).
    :param marker: blockinfile's ``marker`` (str with ``{mark}``).
    :param block: blockinfile's ``block`` (str; a newline is added when it lacks one, as blockinfile does).
    :returns: bool.
    """
    if original is None or not block:
        return False
    begin = (marker.replace('{mark}', 'BEGIN') + '\n').encode('utf-8')
    end = (marker.replace('{mark}', 'END') + '\n').encode('utf-8')
    body = block.encode('utf-8')
    if not body.endswith(b'\n'):
        body += b'\n'
    lines = original.splitlines(True)
    first = last = None
    for index, line in enumerate(lines):
        if line == begin:
            first = index
        if line == end:
            last = index
    if first is None or last is None or first > last:
        return False
    if first > 0 and not lines[first - 1].endswith(b'\n'):
        return False
    return lines[first:last + 1] == [begin] + body.splitlines(True) + [end]


def marker_lines(original, marker):
    """The 1-based numbers of the lines that hold ``marker``'s BEGIN and END marks, as blockinfile matches them.

    :param original: the file's bytes, or None when it does not exist.
    :param marker: blockinfile's ``marker`` (str with ``{mark}``).
    :returns: a list of ``(line_number, 'BEGIN' | 'END')`` in file order; empty for None.
    """
    if original is None:
        return []
    marks = {}
    for mark in ('BEGIN', 'END'):
        marks[marker.replace('{mark}', mark).encode('utf-8')] = mark
    found = []
    for number, line in enumerate(original.splitlines(), 1):
        mark = marks.get(line.rstrip(b'\r'))
        if mark:
            found.append((number, mark))
    return found


def marker_problem(original, marker):
    """Why ``ansible.builtin.blockinfile`` must not write ``marker``'s block into ``original``, or ''.

    blockinfile replaces the lines from the last BEGIN mark to the last END mark. Unless the marks alternate
    BEGIN, END, BEGIN, END ... (each block closed before the next opens), that span can take in lines someone wrote by
    hand, or leave a lone mark that makes the next run replace a different span: such a file is refused, naming the
    lines of every mark, before anything is written.

    :param original: the file's bytes, or None when it does not exist (nothing to refuse).
    :param marker: blockinfile's ``marker`` (str with ``{mark}``).
    :returns: str: empty when the marks are balanced (or absent), else a sentence naming the lines.
    """
    found = marker_lines(original, marker)
    balanced = len(found) % 2 == 0 and all(
        mark == ('BEGIN' if index % 2 == 0 else 'END') for index, (number, mark) in enumerate(found))
    if balanced:
        return ''
    return 'the managed block\'s markers are unbalanced at lines %s (%s); remove the extra marker line(s) by hand' % (
        ', '.join(str(number) for number, mark in found), ', '.join(mark for number, mark in found))


def shadowed_names(text, names):
    """The names of ``names`` that ``text`` mentions outside this collection's managed blocks (hand-written settings
    of the same variables), sorted as given.

    :param text: the file's text (str), or None.
    :param names: iterable of variable names.
    :returns: list of names (substring match, as a reader of the file would find them).
    """
    outside = MANAGED_BLOCK.sub('', text or '')
    return [name for name in names if name in outside]


def is_regular(st):
    """Whether an ``os.lstat`` result (or None) is a regular file (not a symlink)."""
    return st is not None and stat.S_ISREG(st.st_mode)


def is_directory(st):
    """Whether an ``os.lstat`` result (or None) is a directory (not a symlink)."""
    return st is not None and stat.S_ISDIR(st.st_mode)


def _name(lookup, number):
    """The name of a uid or gid (``pwd.getpwuid`` or ``grp.getgrgid``), else the number as a string."""
    try:
        return lookup(number)[0]
    except KeyError:
        return str(number)


def path_state(path):
    """What a writer of ``path`` compares, read from the host (the one reading function here).

    :param path: an absolute path.
    :returns: ``{'exists': False}``, or ``{'exists': True, 'kind': 'file' | 'directory' | 'other' (a symlink, a
        device...), 'owner': name (the uid as a string without a passwd entry), 'group': name (likewise),
        'mode': '0644', 'checksum': SHA-1 hex of the content (regular files only; None when unreadable)}``.
    """
    try:
        st = os.lstat(path)
    except OSError:
        return {'exists': False}
    kind = 'file' if is_regular(st) else 'directory' if is_directory(st) else 'other'
    state = {'exists': True, 'kind': kind, 'owner': _name(pwd.getpwuid, st.st_uid), 'uid': str(st.st_uid),
             'group': _name(grp.getgrgid, st.st_gid), 'gid': str(st.st_gid), 'mode': '%04o' % stat.S_IMODE(st.st_mode)}
    if kind == 'file':
        try:
            with open(path, 'rb') as handle:
                state['checksum'] = hashlib.sha1(handle.read()).hexdigest()
        except (IOError, OSError):
            state['checksum'] = None
    return state


def _attributes_match(seen, spec):
    """Whether ``seen`` (path_state) has the owner, group (names) and mode (text, ``'0644'``) ``spec`` asks for (each
    None: not managed)."""
    for key in ('owner', 'group'):
        # By name only: service_files hands a directory over when its owner's name differs (a uid matching a
        # number given as the owner is no match here).
        wanted = spec.get(key)
        if wanted is not None and wanted != seen.get(key):
            return False
    wanted_mode = spec.get('mode')
    if wanted_mode is None:
        return True
    if not isinstance(wanted_mode, str):
        # An int (unquoted YAML 0644 is 420) reaches service_files as the text '420', which it reads as octal.
        return False
    wanted_mode = octal_mode(wanted_mode)
    return wanted_mode is not None and octal_mode(seen.get('mode')) == wanted_mode


def rendered_current(wanted, seen, unit=None):
    """Whether the module service_files, given ``wanted``, would change nothing, judged from ``seen`` (read before).

    Conservative (see the module's docstring): a path ``seen`` lacks, a file it could not read, a symbolic mode or
    an owner not known yet (Ansible's omit placeholder) all count as not current.

    :param wanted: service_files' options: ``{'directories': [{'path', 'owner', 'group', 'mode'}], 'files': [{'path',
        'content' (str) or 'state': 'absent', 'owner', 'group', 'mode'}], 'enabled': bool}`` (missing keys: none).
    :param seen: ``{path: path_state(path)}``.
    :param unit: with ``enabled`` wanted, the unit as read (service_preflight_info's ``unit``: ``enabled`` bool); a
        unit not read (None, {}) counts as not current.
    :returns: bool.
    """
    seen = seen if hasattr(seen, 'get') else {}
    if 'enabled' in wanted:
        read = unit.get('enabled') if hasattr(unit, 'get') else None
        # Ansible's truth rule, as service_files reads its own enabled ('no' is false).
        if not isinstance(read, bool) or read != truth(wanted['enabled']):
            return False
    for spec in wanted.get('directories') or []:
        state = seen.get(spec.get('path'))
        if not state or state.get('kind') != 'directory' or not _attributes_match(state, spec):
            return False
    for spec in wanted.get('files') or []:
        state = seen.get(spec.get('path'))
        if not state:
            return False
        if spec.get('state', 'present') == 'absent':
            if state.get('exists'):
                return False
            continue
        content = spec.get('content')
        if content is None or state.get('kind') != 'file' or not _attributes_match(state, spec):
            return False
        if hashlib.sha1(content.encode('utf-8', 'surrogateescape')).hexdigest() != state.get('checksum'):
            return False
    return True
