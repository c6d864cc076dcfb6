# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The two generations of SGLang's router, and every difference the collection depends on, in one table.

* ``sglang-router`` (PyPI, up to 0.3.2 of 2026-01-15): module ``sglang_router``, started with
  ``python -m sglang_router.launch_router``; ``sglang_router/launch_router.py`` has ``parse_router_args(argv)`` and
  ``launch_router(args)``.
* ``smg`` (PyPI, "Shepherd Model Gateway", from 0.4 on; 1.13.0 read here): module ``smg``, console script ``smg``
  (``smg.cli:main`` in its ``entry_points.txt``) with the subcommands ``launch`` (router only) and ``serve``;
  ``smg/launch_router.py`` keeps ``parse_router_args(argv)`` and ``launch_router(args)`` with the same flags as
  ``sglang_router.launch_router`` (both ``router_args.py``: ``--worker-urls``, ``--dp-aware``, ``--api-key``,
  ``--control-plane-api-keys``, ``--shutdown-grace-period-secs`` default 180).

What the collection reads from each (``DIFFERENCES``; ``since`` is the first version of the row's ``smg`` value: the
package split at 0.4, else the release the value was checked on, smg 1.13.0, because the releases between were not
read - the value may be older):

* GET /workers of smg 1.13.0 (measured: ``smg launch --dp-aware`` in front of a dp 2 SGLang test double) lists each
  data-parallel rank as its own worker: ``{"id": "<uuid>", "url": "http://h:p@0", "dp_base_url": "http://h:p",
  "dp_rank": 0, "dp_size": 2, "is_healthy": true, "status": "ready", ...}``; ``DELETE /workers/<id>`` removes that
  rank only (it is listed ``"status": "draining"``, ``is_healthy`` false, until its requests end); a
  ``POST /workers {"url": "http://h:p"}`` while another rank of that server is still listed fails in the background
  ("Worker http://h:p@0 already exists"). So a drain removes every rank and waits until none is listed, and a
  re-add waits until ``dp_size`` ranks are listed healthy.
* ``status`` (smg): ``ready`` and ``draining`` measured on 1.13.0; ``pending`` (before the first health check) and
  ``failed`` (terminal) are the other states its binary names, not observed here; sglang-router 0.3.2 has no
  ``status``, only ``is_healthy``. The collection counts a rank as healthy only with ``is_healthy`` and a status
  that is absent or ``ready``, and stops waiting at ``failed``.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

# The first smg version; sglang-router ended at 0.3.2.
SMG_FROM = (0, 4, 0)
SGLANG_ROUTER_UNTIL = (0, 3, 2)

# Seconds the unit's TimeoutStopSec= gives beyond the router's graceful shutdown period.
STOP_MARGIN = 15

# name -> (sglang-router value, smg value, since (smg version), what it is)
DIFFERENCES = {
    'package': ('sglang-router', 'smg', '0.4.0', 'the PyPI distribution pip installs'),
    'module': ('sglang_router', 'smg', '0.4.0', 'the import package'),
    'launch_module': ('sglang_router.launch_router', 'smg.launch_router', '0.4.0',
                      'python -m <it> starts the router; it has parse_router_args(argv) and launch_router(args)'),
    'console_script': ('', 'smg launch', '0.4.0', 'the entry point (smg.cli:main, subcommand launch)'),
    'process_title': ('sglang::router', 'smg::router', '1.13.0', 'setproctitle in launch_router'),
    'worker_status': ('', 'status', '1.13.0', 'GET /workers field: pending, ready, draining, failed'),
    'dp_rank_ids': ('', 'url@rank', '1.13.0',
                    'with --dp-aware each rank is a worker http://h:p@<rank> with dp_base_url, dp_rank, dp_size'),
    'shutdown_grace_period_secs': (180, 180, '1.13.0',
                                   'router_args.py default of --shutdown-grace-period-secs (0.3.2 too)'),
}


def _release(version):
    text = str(version or '').strip()
    parts = text.split('.')
    if not text or not all(part.isdigit() for part in parts):
        raise ValueError('router_version must be a release like 0.3.2 or 1.13.0, not %r' % (version,))
    return tuple(int(part) for part in (parts + ['0', '0'])[:3])


def router_generation(version):
    """What the router of ``version`` is, from ``DIFFERENCES``.

    :param version: str, router_version (``0.3.2``, ``1.13.0``).
    :returns: dict - ``generation`` (``sglang-router`` or ``smg``), one key per row of ``DIFFERENCES`` with that
        generation's value, ``requirement`` (``<package>==<version>``).
    :raises ValueError: a version that is not N.N[.N], or one between 0.3.2 and 0.4 (no such release of either).
    """
    release = _release(version)
    if release >= SMG_FROM:
        generation, column = 'smg', 1
    elif release <= SGLANG_ROUTER_UNTIL:
        generation, column = 'sglang-router', 0
    else:
        raise ValueError('router_version %s: sglang-router ended at 0.3.2 and smg starts at 0.4' % version)
    out = dict((name, row[column]) for name, row in DIFFERENCES.items())
    out['generation'] = generation
    out['requirement'] = '%s==%s' % (out['package'], str(version).strip())
    return out


def router_timeout_stop_sec(args, margin=STOP_MARGIN):
    """TimeoutStopSec= (s) for the router's unit: its graceful shutdown period (``args``'
    ``shutdown-grace-period-secs``, else the router's default of 180) plus ``margin``, so systemd never kills a router
    that is still draining. Raises ValueError for a period that is not a non-negative integer."""
    period = (args or {}).get('shutdown-grace-period-secs', (args or {}).get('shutdown_grace_period_secs'))
    if period is None:
        period = DIFFERENCES['shutdown_grace_period_secs'][1]
    if isinstance(period, bool) or not str(period).isdigit():
        raise ValueError('shutdown-grace-period-secs must be a whole number of seconds, not %r' % (period,))
    return int(period) + int(margin)
