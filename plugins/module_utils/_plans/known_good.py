# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""The known_good role's one manifest schema, as a pure function (filter known_good_manifest)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

SCHEMA = 1


def known_good_manifest(files, manifest, saved_at):
    """The manifest a known-good configuration is saved with: one schema for every writer (the cutover, the seed of a
    hand-started server, a restart onto a history entry).

    :param files: the files kept (``known_good_files``: dicts with ``src``, and ``owner``/``group``/``mode`` where the
        file has its own owner).
    :param manifest: what the writer knows (``known_good_manifest``: ``source``, ``unit``, ``manager``, ``command``,
        ``pid``, ``time_to_healthy``, ``sitecustomize``, ``sitecustomize_block``, ``record``, ...); its keys win over
        the defaults, except ``schema`` and ``saved_at``.
    :param saved_at: the time of the save (UTC, ``%Y-%m-%dT%H:%M:%SZ``).
    :returns: dict: the defaults (``source`` cutover, ``manager`` systemd, empty ``unit`` and ``command``, no ``pid``,
        ``time_to_healthy``, ``dark_window`` (filter cutover_dark_window) or ``sitecustomize``, empty
        ``sitecustomize_block``), ``files`` (the sources),
        ``file_modes`` (the files with an ``owner``), then ``manifest``, then ``schema`` and ``saved_at``.
    """
    files = list(files or [])
    result = {'schema': SCHEMA, 'source': 'cutover', 'unit': '', 'manager': 'systemd', 'command': [],
              'files': [item['src'] for item in files],
              'file_modes': [item for item in files if 'owner' in item],
              'pid': None, 'time_to_healthy': None, 'dark_window': None, 'sitecustomize': None, 'sitecustomize_block': ''}
    result.update(manifest or {})
    result.update(schema=SCHEMA, saved_at=saved_at)
    return result
