# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Write small text files into one directory, in the calling process (the controller_files action plugin).

Each file is replaced atomically (a temporary file in the same directory, then a rename), so a reader never sees a
half-written report.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import tempfile


def bad_file_names(names):
    """The names (of NAMES, an iterable of str) that are not a plain file name: empty, '.', '..', or with a '/'."""
    return [name for name in names if not name or name in ('.', '..') or '/' in name or '\0' in name]


def _same_content(path, data):
    try:
        with open(path, 'rb') as handle:
            return handle.read() == data
    except (IOError, OSError):
        return False


def write_text_files(directory, files, mode=0o644, dir_mode=0o755, check=False):
    """Write FILES (dict: file name -> text) into DIRECTORY (an absolute path, created with DIR_MODE if missing).

    MODE: the files' permission bits (int). CHECK: write nothing, only say what would change.
    Returns a dict: ``paths`` (list of str, the files' paths in name order), ``changed`` (bool: the directory was
    created or a file's content or mode differs), ``changed_paths`` (list of str).
    Raises ValueError for a relative DIRECTORY or a name that is not a plain file name; OSError when writing fails.
    """
    if not os.path.isabs(directory):
        raise ValueError('dir must be an absolute path, not %r' % (directory,))
    bad = bad_file_names(files)
    if bad:
        raise ValueError('files must be named by plain file names (no "/"), not %r' % (bad,))
    created = not os.path.isdir(directory)
    if created and not check:
        os.makedirs(directory, dir_mode)
        os.chmod(directory, dir_mode)
    paths, changed_paths = [], []
    for name in sorted(files):
        path = os.path.join(directory, name)
        data = files[name].encode('utf-8')
        paths.append(path)
        if not created and _same_content(path, data) and (os.stat(path).st_mode & 0o7777) == mode:
            continue
        changed_paths.append(path)
        if check:
            continue
        fd, tmp = tempfile.mkstemp(dir=directory, prefix='.' + name + '.')
        try:
            with os.fdopen(fd, 'wb') as handle:
                handle.write(data)
            os.chmod(tmp, mode)
            os.rename(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
    return {'paths': paths, 'changed': created or bool(changed_paths), 'changed_paths': changed_paths}
