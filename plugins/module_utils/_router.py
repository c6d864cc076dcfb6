# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pure helpers for talking to the SGLang router (sglang-router, "SGLang Model Gateway") about its workers.

Facts used here come from sglang-router 0.3.2 (PyPI), checked against the running binary:

* ``GET /workers`` answers ``{"workers": [{"id": "<uuid>", "url": "http://h:p", "is_healthy": true,
  "load": 0, ...}], "total": N, "stats": {...}}``.
* ``POST /workers`` with ``{"url": "http://h:p"}`` answers 202 ``{"status": "accepted", "worker_id": ...}``
  and registers the worker in the background (it checks the worker's ``/health`` and reads its model
  info first), so the caller waits until ``GET /workers`` lists it healthy.
* ``DELETE /workers/<id>`` answers 202 and removes it in the background, too.
* The body of ``POST /workers`` (``WorkerConfigRequest``) takes ``api_key``: the key the router sends to that
  worker (its ``--api-key``); the router never shows it in ``GET /workers``.
* The worker API is the control plane: with ``--control-plane-api-keys 'id:name:role:key'`` it wants
  ``Authorization: Bearer <key>`` of an ``admin`` key (401 ``Missing or invalid Authorization header`` without
  one, 401 ``Invalid authentication token`` for an unknown key, 403 ``Admin role required for control plane
  access`` for a ``user`` key); with only ``--api-key`` it wants that key (401 otherwise).

SGLang's ``GET /get_load`` (a worker's own endpoint) answers one entry per data-parallel rank:
``[{"dp_rank": 0, "num_reqs": 1, "num_waiting_reqs": 0, "num_tokens": 42}]``; ``num_reqs`` counts the
running requests and ``num_waiting_reqs`` the queued ones. Older releases answer a single object.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


def normalize_url(url):
    """'HTTP://Host:30000/' -> 'http://host:30000': scheme and host lower-cased, trailing slashes gone.

    Raises ValueError when the URL has no http:// or https:// scheme.
    """
    text = (url or '').strip()
    scheme, sep, rest = text.partition('://')
    if not sep or scheme.lower() not in ('http', 'https'):
        raise ValueError('not an http(s) URL: %r' % (url,))
    hostport, slash, path = rest.partition('/')
    path = path.rstrip('/')
    return '%s://%s%s' % (scheme.lower(), hostport.lower(), ('/' + path) if path else '')


def parse_workers(body):
    """The worker list of a ``GET /workers`` answer (dict with ``workers``, or a bare list).

    Returns a list of dicts ``{'id', 'url', 'healthy', 'load'}`` with normalized URLs; raises ValueError on
    an answer of another shape.
    """
    workers = body.get('workers') if isinstance(body, dict) else body
    if not isinstance(workers, list):
        raise ValueError('GET /workers answered no worker list: %r' % (body,))
    out = []
    for entry in workers:
        if isinstance(entry, str):
            entry = {'url': entry}
        if not isinstance(entry, dict) or 'url' not in entry:
            raise ValueError('GET /workers answered a worker without a url: %r' % (entry,))
        out.append({
            'id': entry.get('id'),
            'url': normalize_url(entry['url']),
            'healthy': bool(entry.get('is_healthy', True)),
            'load': entry.get('load'),
        })
    return out


def find_worker(workers, url):
    """The entry of ``parse_workers`` output whose URL is ``url`` (normalized), else None."""
    want = normalize_url(url)
    for worker in workers:
        if worker['url'] == want:
            return worker
    return None


def parse_load(body):
    """Running and queued requests from a worker's ``GET /get_load`` answer, summed over dp ranks.

    Returns ``{'running': int, 'queued': int, 'ranks': int}``; raises ValueError on another shape.
    """
    entries = body if isinstance(body, list) else [body]
    running = queued = 0
    for entry in entries:
        if not isinstance(entry, dict) or 'num_reqs' not in entry:
            raise ValueError('GET /get_load answered no num_reqs: %r' % (body,))
        running += int(entry.get('num_reqs') or 0)
        queued += int(entry.get('num_waiting_reqs') or 0)
    return {'running': running, 'queued': queued, 'ranks': len(entries)}


def worker_action(state, present):
    """What to do for the desired ``state`` ('present' or 'absent') given whether the router lists the
    worker now (``present``, the entry or None): 'add', 'remove' or 'none'."""
    if state == 'present':
        return 'none' if present is not None else 'add'
    if state == 'absent':
        return 'remove' if present is not None else 'none'
    raise ValueError('state must be present or absent, not %r' % (state,))


def settled(state, worker, want_healthy=True):
    """Whether the router's view has reached ``state`` for a worker entry (or None when not listed)."""
    if state == 'absent':
        return worker is None
    return worker is not None and (worker['healthy'] or not want_healthy)


def drained(load):
    """Whether a ``parse_load`` result shows no running and no queued requests."""
    return load['running'] == 0 and load['queued'] == 0


# The router acts on a POST or DELETE /workers within a fraction of a second (sglang-router 0.3.2 checked the double's
# /health and listed it in 0.1-0.4 s here), so a poll a whole interval later wastes most of that interval: the first
# polls come after FIRST_POLL seconds, each wait twice the one before, up to the caller's interval.
FIRST_POLL = 0.05


def poll_delays(interval, first=FIRST_POLL):
    """Seconds to sleep before each next poll, endlessly: ``first``, doubling, capped at ``interval`` (s, > 0).

    poll_delays(0.5) -> 0.05, 0.1, 0.2, 0.4, 0.5, 0.5, ...; an interval at or below ``first`` gives the interval
    throughout. Raises ValueError for an interval that is not positive."""
    if not interval > 0:
        raise ValueError('interval must be positive, not %r' % (interval,))
    delay = min(first, interval)
    while True:
        yield delay
        delay = min(delay * 2, interval)
