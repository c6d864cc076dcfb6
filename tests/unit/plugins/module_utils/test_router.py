# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils import _router as r

# What sglang-router 0.3.2 answered to GET /workers with two test-double workers (trimmed).
WORKERS_0_3_2 = {
    'workers': [
        {'id': '706a38b1-b305-4bc8-a511-569d3e2c15f0', 'url': 'http://127.0.0.1:31001', 'model_id': '/m',
         'priority': 50, 'cost': 1.0, 'worker_type': 'regular', 'is_healthy': True, 'load': 0,
         'connection_mode': 'HTTP', 'metadata': {'dp_size': '1', 'tp_size': '1'}, 'disable_health_check': False},
        {'id': '06477e36-319c-4d0d-a49e-d548b55a0dfb', 'url': 'http://127.0.0.1:31002', 'is_healthy': False,
         'load': 3},
    ],
    'total': 2,
    'stats': {'prefill_count': 0, 'decode_count': 0, 'regular_count': 2},
}


@pytest.mark.parametrize('url, expected', [
    ('http://gpu1:30000', 'http://gpu1:30000'),
    ('HTTP://GPU1:30000/', 'http://gpu1:30000'),
    ('  https://Router.example:443//  ', 'https://router.example:443'),
    ('http://[::1]:30000', 'http://[::1]:30000'),
    ('http://h:1/prefix/', 'http://h:1/prefix'),
])
def test_normalize_url(url, expected):
    assert r.normalize_url(url) == expected


@pytest.mark.parametrize('url', ['gpu1:30000', '', None, 'ftp://h:1', '://h'])
def test_normalize_url_rejects(url):
    with pytest.raises(ValueError):
        r.normalize_url(url)


def test_parse_workers_0_3_2():
    workers = r.parse_workers(WORKERS_0_3_2)
    assert workers == [
        {'id': '706a38b1-b305-4bc8-a511-569d3e2c15f0', 'url': 'http://127.0.0.1:31001', 'base': 'http://127.0.0.1:31001',
         'rank': None, 'dp_size': None, 'status': None, 'healthy': True, 'load': 0},
        {'id': '06477e36-319c-4d0d-a49e-d548b55a0dfb', 'url': 'http://127.0.0.1:31002', 'base': 'http://127.0.0.1:31002',
         'rank': None, 'dp_size': None, 'status': None, 'healthy': False, 'load': 3},
    ]


def test_parse_workers_bare_list_of_urls():
    assert r.parse_workers(['http://a:1/']) == [{'id': None, 'url': 'http://a:1', 'base': 'http://a:1', 'rank': None,
                                                 'dp_size': None, 'status': None, 'healthy': True, 'load': None}]


@pytest.mark.parametrize('body', [{}, {'workers': 'x'}, 'text', {'workers': [{'id': 'no-url'}]}, {'workers': [3]}])
def test_parse_workers_rejects(body):
    with pytest.raises(ValueError):
        r.parse_workers(body)


def test_find_worker_normalizes():
    workers = r.parse_workers(WORKERS_0_3_2)
    assert r.find_worker(workers, 'HTTP://127.0.0.1:31002/')['id'].startswith('06477e36')
    assert r.find_worker(workers, 'http://127.0.0.1:31003') is None
    assert r.find_worker([], 'http://a:1') is None


@pytest.mark.parametrize('body, expected', [
    ([{'dp_rank': 0, 'num_reqs': 0, 'num_waiting_reqs': 0, 'num_tokens': 0}], {'running': 0, 'queued': 0, 'ranks': 1}),
    ([{'dp_rank': 0, 'num_reqs': 2, 'num_waiting_reqs': 1, 'num_tokens': 9},
      {'dp_rank': 1, 'num_reqs': 3, 'num_waiting_reqs': 0, 'num_tokens': 4}], {'running': 5, 'queued': 1, 'ranks': 2}),
    ({'num_reqs': 1}, {'running': 1, 'queued': 0, 'ranks': 1}),
    ({'num_reqs': None, 'num_waiting_reqs': None}, {'running': 0, 'queued': 0, 'ranks': 1}),
])
def test_parse_load(body, expected):
    assert r.parse_load(body) == expected


@pytest.mark.parametrize('body', [{}, [{'dp_rank': 0}], 'busy', [None]])
def test_parse_load_rejects(body):
    with pytest.raises(ValueError):
        r.parse_load(body)


@pytest.mark.parametrize('state, listed, expected', [
    ('present', None, 'add'),
    ('present', {'url': 'u'}, 'none'),
    ('absent', {'url': 'u'}, 'remove'),
    ('absent', None, 'none'),
])
def test_worker_action(state, listed, expected):
    assert r.worker_action(state, listed) == expected


def test_worker_action_rejects_state():
    with pytest.raises(ValueError):
        r.worker_action('drained', None)


@pytest.mark.parametrize('state, worker, expected', [
    ('absent', None, True),
    ('absent', {'healthy': True}, False),
    ('present', None, False),
    ('present', {'healthy': False}, False),
    ('present', {'healthy': True}, True),
])
def test_settled(state, worker, expected):
    assert r.settled(state, worker) is expected


def test_settled_present_without_health():
    assert r.settled('present', {'healthy': False}, want_healthy=False) is True


@pytest.mark.parametrize('load, expected', [
    ({'running': 0, 'queued': 0}, True),
    ({'running': 1, 'queued': 0}, False),
    ({'running': 0, 'queued': 2}, False),
])
def test_drained(load, expected):
    assert r.drained(load) is expected


def _first(gen, n):
    return [next(gen) for dummy in range(n)]


def test_poll_delays_double_up_to_the_interval():
    assert _first(r.poll_delays(0.5), 7) == [0.05, 0.1, 0.2, 0.4, 0.5, 0.5, 0.5]


def test_poll_delays_short_interval_throughout():
    assert _first(r.poll_delays(0.02), 3) == [0.02, 0.02, 0.02]
    assert _first(r.poll_delays(1, first=0.3), 4) == [0.3, 0.6, 1, 1]


@pytest.mark.parametrize('interval', [0, -1])
def test_poll_delays_reject_a_non_positive_interval(interval):
    with pytest.raises(ValueError):
        next(r.poll_delays(interval))


# GET /workers of smg 1.13.0 with --dp-aware in front of a dp 2 server (measured; fields cut to those read).
def _smg_rank(rank, status='ready', healthy=True, dp_size=2, base='http://127.0.0.1:31801'):
    return {'id': 'id-%d' % rank, 'url': '%s@%d' % (base, rank), 'dp_base_url': base, 'dp_rank': rank,
            'dp_size': dp_size, 'is_healthy': healthy, 'status': status, 'load': 0}


@pytest.mark.parametrize('url, expected', [
    ('http://h:30000@1', ('http://h:30000', 1)),
    ('http://h:30000', ('http://h:30000', None)),
    ('http://user@h:30000', ('http://user@h:30000', None)),
    ('http://[fd00::1]:30000@0', ('http://[fd00::1]:30000', 0)),
])
def test_split_rank(url, expected):
    assert r.split_rank(url) == expected


def test_split_rank_rejects_a_rank_that_is_no_number():
    with pytest.raises(ValueError):
        r.split_rank('http://h:30000@x')


def test_parse_workers_smg_dp_aware_ranks():
    workers = r.parse_workers({'workers': [_smg_rank(0), _smg_rank(1, 'draining', False)]})
    assert [(w['url'], w['base'], w['rank'], w['dp_size'], w['status'], w['healthy']) for w in workers] == [
        ('http://127.0.0.1:31801@0', 'http://127.0.0.1:31801', 0, 2, 'ready', True),
        ('http://127.0.0.1:31801@1', 'http://127.0.0.1:31801', 1, 2, 'draining', False),
    ]


@pytest.mark.parametrize('status, healthy', [('ready', True), ('pending', False), ('failed', False),
                                             ('draining', False), ('Ready', True)])
def test_a_rank_is_healthy_only_when_ready(status, healthy):
    assert r.parse_workers([_smg_rank(0, status)])[0]['healthy'] is healthy


def test_find_workers_finds_every_rank_c43():
    """C43: a dp 2 server behind a --dp-aware router is two workers; the drain must see both."""
    workers = r.parse_workers({'workers': [_smg_rank(1), _smg_rank(0, base='http://other:1'), _smg_rank(0)]})
    found = r.find_workers(workers, 'http://127.0.0.1:31801/')
    assert [w['url'] for w in found] == ['http://127.0.0.1:31801@0', 'http://127.0.0.1:31801@1']
    assert r.find_worker(workers, 'http://127.0.0.1:31801')['rank'] == 0
    assert r.find_workers(workers, 'http://127.0.0.1:9') == []


@pytest.mark.parametrize('ranks, state, expected', [
    ([], 'absent', True),
    ([_smg_rank(0, 'draining', False)], 'absent', False),
    ([], 'present', False),
    ([_smg_rank(0)], 'present', False),                       # one of two ranks listed: not yet (C43)
    ([_smg_rank(0), _smg_rank(1, 'pending', False)], 'present', False),
    ([_smg_rank(0), _smg_rank(1)], 'present', True),
])
def test_settled_over_every_rank(ranks, state, expected):
    assert r.settled(state, r.parse_workers(ranks)) is expected


def test_failed_ranks():
    ranks = r.parse_workers([_smg_rank(0), _smg_rank(1, 'failed', False)])
    assert r.failed_ranks(ranks) == ['http://127.0.0.1:31801@1']


def test_parse_load_v1_loads_of_0_5_23():
    """SGLang 0.5.23 sglang/srt/entrypoints/v1_loads.py: {"loads": [{"dp_rank", "num_running_reqs", ...}]}."""
    body = {'timestamp': '2026-12-05T16:00:00+00:00', 'version': '0.5.23', 'accelerator': None, 'num_accelerators': 1,
            'loads': [{'dp_rank': 0, 'num_running_reqs': 2, 'num_waiting_reqs': 1},
                      {'dp_rank': 1, 'num_running_reqs': 0, 'num_waiting_reqs': 3}]}
    assert r.parse_load(body) == {'running': 2, 'queued': 4, 'ranks': 2}


def test_parse_load_v1_loads_without_running_count_is_refused():
    with pytest.raises(ValueError, match='GET /v1/loads answered no num_running_reqs'):
        r.parse_load({'loads': [{'dp_rank': 0, 'num_reqs': 1}]})
