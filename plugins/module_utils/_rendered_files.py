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
import json

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


# How a rendered file is checked on the host before anything is written (files[].validate of service_files).
VALIDATORS = ('none', 'systemd-unit', 'supervisor-program')

# systemd-analyze verify (systemd 252, src/analyze/analyze-verify-util.c) on a command of the unit that does not exist:
# ``UNIT: Command PATH is not executable: No such file or directory``. A venv this run installs (a managed SGLang
# version) is not there yet during the pre-flight: such a command is a note, not a failure; a command that exists but
# cannot be executed (``Permission denied``) is a failure.
_MISSING_COMMAND_END = ' is not executable: No such file or directory'


def unit_verify_verdict(rc, output, unit_path, unit_name):
    """What ``systemd-analyze verify UNIT_PATH`` says about one unit file: its problems and its notes.

    systemd-analyze exits 0 after warnings it ignores (``/path/x.service:6: ReadWritePaths= path is not absolute,
    ignoring: work/x``, ``Unknown key ...``): a unit that systemd starts differently from what was written. Every
    line that names the unit file (``UNIT_PATH:LINE: ...``) or the unit (``UNIT_NAME: ...``, ``Unit UNIT_NAME has a
    bad unit file setting.``) is a problem, except a command that does not exist yet (a note). Lines about other
    units (dependencies systemd loaded along) are left aside. A non-zero exit status without any line of this unit
    is a problem too (the whole output).

    :param rc: exit status (int).
    :param output: standard output and standard error together (str; systemd-analyze logs to standard error).
    :param unit_path: the path given to systemd-analyze (str).
    :param unit_name: the unit's name, the file's basename (str, e.g. ``sglang.service``).
    :returns: (problems, notes): two lists of str, the output lines.
    """
    problems = []
    notes = []
    for line in (output or '').splitlines():
        line = line.strip()
        ours = (line.startswith(unit_path + ':') or line.startswith(unit_name + ':')
                or ('Unit %s ' % unit_name) in line)
        if not ours:
            continue
        if line.startswith(unit_name + ': Command ') and line.endswith(_MISSING_COMMAND_END):
            notes.append(line)
        else:
            problems.append(line)
    if rc != 0 and not problems and not notes:
        problems.append('systemd-analyze verify exited with status %d: %s' % (rc, (output or '').strip() or 'no output'))
    return problems, notes


# Run by the interpreter of the venv that holds supervisor (not by the module's interpreter): parse one program
# configuration file with supervisor's own parser (supervisor/options.py: UnhosedConfigParser, then
# ServerOptions.process_groups_from_parser, which expands %(...)s and converts every value as supervisord does at its
# start). The log directory and the service user this run creates need not exist yet: supervisor's existence check of
# a log file's directory (datatypes.existing_dirpath) and its user lookup (options.name_to_uid) are replaced by ones
# that note what is missing and go on.
# argv[1]: the file. Prints one JSON object {"error": str or null, "missing": [directories], "users": [user names]},
# or {"absent": str} where the interpreter has no supervisor yet (its venv is made, supervisor not installed yet);
# exit status 0.
SUPERVISOR_CHECK = r'''
import json, os, sys
try:
    from supervisor import datatypes, options
except ImportError as e:
    print(json.dumps({'absent': '%s: %s' % (type(e).__name__, e)}))
    sys.exit(0)
missing = []
def noting_dirpath(value):
    path = os.path.expanduser(value)
    directory = os.path.dirname(path)
    if directory and not os.path.isdir(directory):
        missing.append(directory)
    return path
datatypes.existing_dirpath = noting_dirpath
users = []
known_uid = options.name_to_uid
def noting_uid(name):
    try:
        return known_uid(name)
    except ValueError:
        users.append(name)
        return 0
options.name_to_uid = noting_uid
error = None
try:
    parser = options.UnhosedConfigParser()
    parser.read([sys.argv[1]])
    if not [s for s in parser.sections() if s.startswith('program:')]:
        raise ValueError('no [program:NAME] section')
    options.ServerOptions().process_groups_from_parser(parser)
except Exception as e:
    error = '%s: %s' % (type(e).__name__, e)
print(json.dumps({'error': error, 'missing': sorted(set(missing)), 'users': sorted(set(users))}))
'''


def supervisor_check_verdict(rc, out, err):
    """What the SUPERVISOR_CHECK program (run with the supervisor venv's interpreter) says: its problems and notes.

    :param rc: its exit status; :param out: its standard output (one JSON object); :param err: its standard error.
    :returns: (problems, notes): two lists of str. A directory or a user that does not exist yet (the log directory,
        the service user this run creates), or an interpreter without supervisor yet, is a note; an error of
        supervisor's parser, or a program that did not answer, is a problem.
    """
    try:
        answer = json.loads((out or '').strip().splitlines()[-1])
    except (ValueError, IndexError):
        return ['the supervisor check did not answer (rc %d): %s' % (rc, ((err or '') + (out or '')).strip() or 'no output')], []
    if answer.get('absent'):
        return [], ['supervisor is not installed for this interpreter yet (%s; the role installs it later in the run): '
                    'the file was not checked' % answer['absent']]
    problems = [answer['error']] if answer.get('error') else []
    notes = (['the directory %s does not exist yet' % d for d in answer.get('missing') or []]
             + ['the user %s does not exist yet' % u for u in answer.get('users') or []])
    return problems, notes
