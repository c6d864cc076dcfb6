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

smg (the router from 0.4 on; 1.13.0 measured) answers the same API with more fields per worker, a ``status`` and,
with ``--dp-aware``, one entry per data-parallel rank (``http://h:p@<rank>``): ``_router_generations`` has the
differences.

A worker's load: ``GET /v1/loads`` (SGLang 0.5.9 on, the only one in 0.5.23), else ``GET /get_load`` (see
``parse_load``).
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


def split_rank(url):
    """'http://h:30000@1' -> ('http://h:30000', 1); 'http://h:30000' -> ('http://h:30000', None).

    smg lists each data-parallel rank of a ``--dp-aware`` router as ``<url>@<rank>`` (smg 1.13.0, measured; see
    ``_router_generations``). Raises ValueError for a rank that is not a whole number."""
    text = (url or '').strip()
    base, at, rank = text.rpartition('@')
    if not at or '/' in rank or ':' in rank:
        return text, None
    if not rank.isdigit():
        raise ValueError('worker URL %r has a rank that is not a whole number' % (url,))
    return base, int(rank)


def parse_workers(body):
    """The worker list of a ``GET /workers`` answer (dict with ``workers``, or a bare list).

    Returns a list of dicts ``{'id', 'url', 'base', 'rank', 'dp_size', 'status', 'healthy', 'load'}``: ``url`` the
    normalized URL as listed (``http://h:p@1`` for a rank of a ``--dp-aware`` smg), ``base`` the server's URL without
    the rank, ``rank``/``dp_size`` int or None, ``status`` smg's state (``pending``, ``ready``, ``draining``,
    ``failed``) or None (sglang-router 0.3.2 has none), ``healthy`` ``is_healthy`` and a status absent or ``ready``.
    Raises ValueError on an answer of another shape.
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
        base, rank = split_rank(entry['url'])
        if rank is not None and entry.get('dp_base_url'):
            base = entry['dp_base_url']
        status = entry.get('status')
        status = str(status).lower() if status is not None else None
        out.append({
            'id': entry.get('id'),
            'url': normalize_url(base) + ('@%d' % rank if rank is not None else ''),
            'base': normalize_url(base),
            'rank': rank,
            'dp_size': entry.get('dp_size') if rank is not None else None,
            'status': status,
            'healthy': bool(entry.get('is_healthy', True)) and status in (None, 'ready'),
            'load': entry.get('load'),
        })
    return out


def find_worker(workers, url):
    """The first entry of ``parse_workers`` output for the server ``url`` (normalized; any of its ranks), else None."""
    found = find_workers(workers, url)
    return found[0] if found else None


def find_workers(workers, url):
    """Every entry of ``parse_workers`` output for the server ``url``: the worker itself, or all of its data-parallel
    ranks (``url@0``, ``url@1``, ... of a ``--dp-aware`` smg), in rank order. C43: a drain removes them all."""
    want = normalize_url(split_rank(url)[0])
    found = [worker for worker in workers if worker.get('base', worker['url']) == want]
    return sorted(found, key=lambda worker: -1 if worker.get('rank') is None else worker['rank'])


def parse_load(body):
    """Running and queued requests of a worker, summed over its data-parallel ranks.

    Reads either answer:

    * ``GET /v1/loads`` (SGLang 0.5.9 on; the only one in 0.5.23, ``sglang/srt/entrypoints/v1_loads.py``):
      ``{"loads": [{"dp_rank": 0, "num_running_reqs": 1, "num_waiting_reqs": 0, ...}], ...}``;
    * ``GET /get_load`` (SGLang 0.5.9, "deprecated - use /v1/loads instead"; gone in 0.5.23):
      ``[{"dp_rank": 0, "num_reqs": 1, "num_waiting_reqs": 0, "num_tokens": 42}]``, a single object in older releases;
      ``num_reqs`` counts the running requests.

    Returns ``{'running': int, 'queued': int, 'ranks': int}``; raises ValueError on another shape.
    """
    if isinstance(body, dict) and isinstance(body.get('loads'), list):
        entries, running_key, where = body['loads'], 'num_running_reqs', 'GET /v1/loads'
    else:
        entries, running_key, where = (body if isinstance(body, list) else [body]), 'num_reqs', 'GET /get_load'
    running = queued = 0
    for entry in entries:
        if not isinstance(entry, dict) or running_key not in entry:
            raise ValueError('%s answered no %s: %r' % (where, running_key, body))
        running += int(entry.get(running_key) or 0)
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
    """Whether the router's view has reached ``state`` for a worker entry (or None when not listed), or for the
    list of its ranks (``find_workers``): absent - none listed; present - listed and, with ``want_healthy``, every
    rank healthy and as many ranks as the first one's ``dp_size`` says (C43: a re-add waits for all of them)."""
    ranks = worker if isinstance(worker, list) else ([] if worker is None else [worker])
    if state == 'absent':
        return not ranks
    if not ranks:
        return False
    if not want_healthy:
        return True
    expected = ranks[0].get('dp_size')
    if isinstance(expected, int) and len(ranks) < expected:
        return False
    return all(rank['healthy'] for rank in ranks)


def failed_ranks(ranks):
    """The URLs of the ranks smg lists as ``failed`` (terminal: the router does not retry them)."""
    return [rank['url'] for rank in ranks if rank.get('status') == 'failed']


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
