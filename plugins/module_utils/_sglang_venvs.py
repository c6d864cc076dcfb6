# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""SGLang versions as configuration: the pinned requirement, the venv of a version, the SGLANG_* names a version's
sources never mention, and which venvs to prune. Pure functions (``package_sources`` only reads files)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re

# PEP 508 name (normalised: case and runs of -_. do not matter), optional extras, exactly one '==' and a version
# made of release/pre/post/dev characters (no wildcard, no local path, no marker, no URL).
_REQUIREMENT = re.compile(r'^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?\s*==\s*([0-9][0-9A-Za-z.!+]*)\s*$')
_EXTRA = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]*$')
INSTALL_MARKER = '.inferops-sglang-installed'


def _normalise(name):
    return re.sub(r'[-_.]+', '-', name).lower()


def parse_sglang_requirement(text):
    """``'sglang[all]==0.5.10'`` -> ``{'name': 'sglang', 'extras': ['all'], 'version': '0.5.10'}``.

    Only an exact pin (``==`` and a literal version) of the ``sglang`` distribution is accepted, because the version
    names the venv (``<venvs_dir>/<version>``) and a range would install a different SGLang on each host.
    Raises ValueError (cause and fix) for anything else.
    """
    text = '' if text is None else str(text)
    match = _REQUIREMENT.match(text)
    if not match or '*' in text or '..' in match.group(3) or '/' in text:
        raise ValueError(
            'service_sglang_version %r is not an exact pin: write the distribution, optional extras and == with one '
            'literal version, for example sglang==0.5.10 or sglang[all]==0.5.10 (no range, wildcard, marker or URL), '
            'so that every host installs the same SGLang into the venv named by that version.' % text)
    name, extras, version = match.groups()
    if _normalise(name) != 'sglang':
        raise ValueError(
            'service_sglang_version %r pins %s, not the sglang distribution: pin SGLang itself there (sglang==X) and '
            'put companions such as torch or flashinfer into service_sglang_requirements.' % (text, name))
    extras = [e.strip() for e in (extras or '').split(',') if e.strip()]
    bad = [e for e in extras if not _EXTRA.match(e)]
    if bad:
        raise ValueError('service_sglang_version %r has extras that are not names (%s): write sglang[all]==X, not an exact '
                         'pin otherwise.' % (text, ', '.join(bad)))
    return {'name': 'sglang', 'extras': extras, 'version': version}


_VENV_NAME = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._+-]*$')


def sglang_requirement(text, venvs_dir, venv_name=''):
    """The wanted SGLang: ``{name, extras, version, requirement, venv, python, problem}``.

    ``venv`` is ``<venvs_dir>/<venv_name or version>`` and ``python`` its ``bin/python3``; ``requirement`` the text
    stripped. ``venv_name`` (one path component: letters, digits, ``._+-``) names the venv when another set of
    companions needs a venv of its own for the same version (an installed venv is never changed).
    A refused requirement (see ``parse_sglang_requirement``) or a ``venvs_dir`` that is not absolute gives its message
    in ``problem`` (else '') and None for the rest, so that a pre-flight can report it with the other failures.
    """
    answer = {'name': None, 'extras': [], 'version': None, 'requirement': str(text or '').strip(),
              'venv': None, 'python': None, 'problem': ''}
    try:
        answer.update(parse_sglang_requirement(text))
    except ValueError as exc:
        answer['problem'] = str(exc)
        return answer
    venvs_dir = str(venvs_dir or '')
    if not os.path.isabs(venvs_dir):
        answer.update(version=None, problem='service_venvs_dir %r must be an absolute path (the venvs of the SGLang '
                                            'versions live under it, one per version).' % venvs_dir)
        return answer
    venv_name = str(venv_name or '')
    if venv_name and not _VENV_NAME.match(venv_name):
        answer.update(version=None, problem='service_sglang_venv_name %r must be one directory name (letters, digits '
                                            'and ._+-, starting with a letter or digit).' % venv_name)
        return answer
    answer['venv'] = os.path.join(os.path.normpath(venvs_dir), venv_name or answer['version'])
    answer['python'] = os.path.join(answer['venv'], 'bin', 'python3')
    return answer


def install_marker(requirements):
    """The text of the marker that records a completed install of exactly ``requirements`` (a list of str). The
    same set gives the same text whatever its order and spacing (``sglang == 0.5.10`` is ``sglang==0.5.10``)."""
    return json.dumps({'requirements': sorted(re.sub(r'\s+', '', str(r)) for r in requirements)}, sort_keys=True) + '\n'


def marker_requirements(text):
    """The requirements a marker's text records (list of str), or None when it is not a marker."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    found = data.get('requirements') if isinstance(data, dict) else None
    return [str(r) for r in found] if isinstance(found, list) else None


def names_absent_from_texts(names, texts):
    """The names of ``names`` (list of str) that occur in none of ``texts`` (an iterable of str, read lazily and
    only until every name was seen), in the order given. No text at all says nothing: [] (a package whose sources
    are not there to read, compiled or zipped, must not make every name look unread)."""
    missing = list(names)
    seen = False
    for text in texts:
        seen = True
        missing = [name for name in missing if name not in text]
        if not missing:
            break
    return missing if seen else []


def package_sources(root):
    """The text of every ``.py`` file under ``root`` (a package directory), one at a time; bytes that are not UTF-8
    are replaced, unreadable files skipped, a missing ``root`` gives nothing."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for filename in sorted(filenames):
            if not filename.endswith('.py'):
                continue
            try:
                with open(os.path.join(dirpath, filename), 'rb') as handle:
                    yield handle.read().decode('utf-8', 'replace')
            except (IOError, OSError):
                continue


def venvs_to_prune(venvs, wanted, keep, protected):
    """Which venvs to remove, oldest first.

    :param venvs: the venvs there are, each ``{path, mtime}`` (mtime in seconds).
    :param wanted: the path of the wanted version's venv (never counted, never removed).
    :param keep: how many venvs of other versions are kept (the newest by mtime; int >= 0).
    :param protected: paths never removed (the running server's venv, the known-good ones), even beyond ``keep``.
    :returns: the paths to remove, oldest first.
    """
    keep = int(keep)
    if keep < 0:
        raise ValueError('service_venvs_keep must be 0 or more, not %d' % keep)
    wanted = os.path.normpath(str(wanted)) if wanted else None
    safe = set(os.path.normpath(str(p)) for p in protected or [] if p)
    others = [v for v in venvs if os.path.normpath(v['path']) != wanted]
    others.sort(key=lambda v: (v['mtime'], v['path']), reverse=True)
    beyond = others[keep:]
    return [v['path'] for v in reversed(beyond) if os.path.normpath(v['path']) not in safe]
