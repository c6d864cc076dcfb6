# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""Pure parts of the health gate (module inferops.sglang.server_health).

What an SGLang server answers, from sgl-project/sglang ``python/sglang/srt/entrypoints/http_server.py``:

- ``GET /health`` and ``GET /health_generate`` run a one-token generation and answer 200 when it
  succeeds, 503 while the server is still starting or unhealthy; SGLang's own check waits up to 20 s.
- ``GET /v1/models`` answers 200 as soon as the HTTP server runs, before the model can generate, so
  it never counts as healthy.
- ``POST /v1/chat/completions`` is the OpenAI-compatible API; a real answer proves generation.
- Nodes of rank >= 1 of a multi-node replica answer ``/health`` with a dummy 200: gate rank 0 only.

With ``--api-key`` (and ``--admin-api-key``), SGLang's ``add_api_key_middleware``
(``python/sglang/srt/utils/common.py``; ``python/sglang/srt/utils/auth.py`` in newer releases) answers 401
``{"error": "Unauthorized"}`` (403 for an admin-only endpoint without an admin key configured) to every path
but ``/health*`` and ``/metrics*`` unless the request has ``Authorization: Bearer <key>``; the key on
``/health`` is ignored, so the gate sends it on every request.

SGLang logs its whole configuration at start (``server_args=ServerArgs(..., api_key='...', ...)`` in 0.5.9,
``server_args={'model_path': ..., 'api_key': '...', ...}`` in 0.5.23), so a log tail is passed through
``_secrets.redact_log_line`` before it is returned.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json

from ansible_collections.inferops.sglang.plugins.module_utils import _secrets
from ansible_collections.inferops.sglang.plugins.module_utils._supervisors import (
    SUPERVISOR_ALIVE,
    SYSTEMD_ALIVE,
    SYSTEMD_FAILED,
)


def service_verdict(manager, baseline, current):
    """Has the service failed or restarted since the cutover began?

    :param manager: ``systemd`` or ``supervisord``.
    :param baseline: status right after the start: for systemd the dict of ``_supervisors.parse_systemctl_show``
        (MainPID, NRestarts), for supervisord the dict of ``_supervisors.parse_supervisorctl_status``; or None
        when the caller did not start the service (then only a dead service fails).
    :param current: the same kind of dict, read now.
    :returns: None when the service looks alive and unchanged, else a str saying what happened.
    """
    if manager == 'systemd':
        state = current.get('ActiveState')
        sub = current.get('SubState')
        pid = current.get('MainPID') or 0
        if state in SYSTEMD_FAILED:
            return 'the unit failed (ActiveState=failed, Result=%s)' % current.get('Result', '?')
        if sub == 'auto-restart' or state not in SYSTEMD_ALIVE:
            return ('the server exited (ActiveState=%s, SubState=%s, exit status %s)'
                    % (state, sub, current.get('ExecMainStatus')))
        if baseline:
            if (current.get('NRestarts') or 0) > (baseline.get('NRestarts') or 0):
                return 'the unit restarted (NRestarts %s -> %s)' % (baseline.get('NRestarts'), current.get('NRestarts'))
            if baseline.get('MainPID') and pid and pid != baseline.get('MainPID'):
                return 'the server restarted (MainPID %s -> %s)' % (baseline.get('MainPID'), pid)
        if not pid:
            return 'the unit has no main process (ActiveState=%s, SubState=%s)' % (state, sub)
        return None
    if manager == 'supervisord':
        state = current.get('state')
        if state not in SUPERVISOR_ALIVE:
            return 'the program is %s (%s)' % (state, current.get('detail', ''))
        if baseline and baseline.get('pid') and current.get('pid') and current['pid'] != baseline['pid']:
            return 'the program restarted (pid %s -> %s)' % (baseline['pid'], current['pid'])
        return None
    raise ValueError('unknown service manager %r' % (manager,))


# Members that count as schedulers: retitled ones, and multiprocessing spawn children not retitled yet (in the first
# seconds of a start every scheduler is one; counting them keeps a server that is still starting from looking degraded).
SCHEDULER_ROLES = ('scheduler', 'spawn_child')


def scheduler_shortfall(server, expected):
    """Why a running SGLang server is degraded: fewer scheduler processes than its arguments need.

    SGLang runs one scheduler process per GPU rank of a node (titled ``sglang::scheduler_TP3``,
    ``sglang::scheduler_DP1_TP1`` ...; ``run_scheduler_process`` in ``sglang/srt/managers/scheduler.py``). One that
    died (``kill -9``, a CUDA error, the OOM killer) is not restarted; the server then answers ``/health`` with 503
    only after its own 20 s wait for output that never comes, and never recovers.

    :param server: a discovered server (a dict of :func:`discovery.discover`'s entries, with ``members``: dicts with
        ``role`` and ``title``), or None when there is none.
    :param expected: int, scheduler processes this node runs: tp x pp x dp (without dp under
        ``--enable-dp-attention``) / nnodes, what ``cmdline.gpus_needed`` counts.
    :returns: '' when the server is complete (or there is no server, or ``expected`` is below 1), else
        ``'degraded: 3 of 4 scheduler processes are running (sglang::scheduler_TP0, ...)'``.
    :raises ValueError: when ``expected`` is not an integer.
    """
    expected = int(expected)
    if not server or expected < 1:
        return ''
    titles = sorted(member.get('title') or '' for member in server.get('members') or []
                    if member.get('role') in SCHEDULER_ROLES)
    if len(titles) >= expected:
        return ''
    return 'degraded: %d of %d scheduler processes are running (%s)' % (
        len(titles), expected, ', '.join(titles) if titles else 'none')


def scheduler_count(server):
    """The members of a discovered server that are (or may yet become) scheduler processes: :data:`SCHEDULER_ROLES`."""
    return len([m for m in (server or {}).get('members') or [] if m.get('role') in SCHEDULER_ROLES])


def progress_line(result, budget):
    """One line for a person watching a long load: what the gate saw last, and the seconds spent of the budget.

    SGLang opens its port only after every scheduler loaded the weights, then answers ``/health`` with 503 until
    its warm-up generation passed; so a closed port means "loading the model" and a 503 "warming up".

    :param result: the gate's result dict (``state``, ``phase``, ``reason``, ``elapsed`` in seconds,
        ``last_status``, ``smoke_latencies``, ``service`` - the systemd properties or the supervisord status).
    :param budget: the gate's whole budget in seconds (int or float).
    :returns: str, for example ``'loading the model (pid 4242 running, port not open yet), 40 s of 600 s'`` or
        ``'ready: /health ok, 3 chat completions ok, 12 s of 600 s'``.
    """
    reason = result.get('reason') or ''
    state = result.get('state')
    if state == 'ready':
        smoke = len(result.get('smoke_latencies') or [])
        what = 'ready: /health ok' + (', %d chat completion%s ok' % (smoke, '' if smoke == 1 else 's') if smoke else '')
    elif state == 'failed':
        what = 'failed: %s' % reason
    elif result.get('phase') == 'tcp':
        service = result.get('service') or {}
        pid = service.get('MainPID') or service.get('pid')
        what = 'loading the model (%sport not open yet)' % ('pid %s running, ' % pid if pid else '')
    elif result.get('last_status') == 200:
        what = '/health ok, generation not yet (%s)' % reason
    elif result.get('last_status') is None:
        what = 'listening, no answer to /health yet (%s)' % reason
    else:
        what = 'listening, warming up (%s)' % reason
    return '%s, %.0f s of %.0f s' % (what, float(result.get('elapsed') or 0), float(budget))


def model_id(models_body, fallback='default'):
    """The model id to ask for, from a ``GET /v1/models`` body (OpenAI list shape)."""
    try:
        data = json.loads(models_body)
        return data['data'][0]['id']
    except (ValueError, KeyError, IndexError, TypeError):
        return fallback


def chat_request(model, prompt, max_tokens, extra=None):
    """Body of a small deterministic ``POST /v1/chat/completions`` request (bytes).

    :param extra: dict of more body fields (``chat_template_kwargs``, ``separate_reasoning``...); they win over the
        defaults except ``model``, ``messages`` and ``stream``, which the gate needs as they are.
    """
    body = {'max_tokens': max_tokens, 'temperature': 0}
    body.update(extra or {})
    body.update({'model': model, 'messages': [{'role': 'user', 'content': prompt}], 'stream': False})
    return json.dumps(body, sort_keys=True).encode('utf-8')


def check_chat_response(status, body):
    """Did the server generate? The answer to the gate's chat completion request, judged as SGLang builds it.

    Generation is any of: a non-empty ``message.content``; a non-empty ``message.reasoning_content`` (a thinking
    model served with ``--reasoning-parser``: SGLang's ``serving_chat`` puts the text before ``</think>`` there, and
    with a small ``max_tokens`` the budget ends inside it - ``content`` is then null (0.5.9) or ``""`` (0.5.23),
    ``finish_reason`` ``length``); ``tool_calls``; or ``usage.completion_tokens`` > 0 with ``finish_reason``
    ``length`` (tokens were generated, the budget ended them, whatever the parsers made of them).

    :param status: int HTTP status (None when there was no answer).
    :param body: bytes or str, the response body.
    :returns: (ok bool, reason str or None, completion_tokens int).
    """
    if status != 200:
        return False, 'HTTP %s' % status, 0
    try:
        data = json.loads(body)
        choice = data['choices'][0]
        message = choice.get('message') or {}
        content = message.get('content')
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return False, 'not an OpenAI chat completion: %r' % (body[:200],), 0
    usage = data.get('usage') if isinstance(data, dict) else None
    tokens = usage.get('completion_tokens') if isinstance(usage, dict) else None
    tokens = tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else 0
    generated = (bool(content) or bool(message.get('reasoning_content')) or bool(message.get('tool_calls'))
                 or (tokens > 0 and choice.get('finish_reason') == 'length'))
    if not generated:
        return False, 'the completion is empty (no content, reasoning_content or tool_calls; %d tokens, finish_reason %s)' % (
            tokens, choice.get('finish_reason')), 0
    return True, None, tokens


# What one smoke completion says of a server whose /health answered 200 (smoke_verdict).
SMOKE_OK = 'ok'
SMOKE_NOT_READY = 'not_ready'
SMOKE_BROKEN = 'broken'


def smoke_verdict(status, body, error=None, timed_out=False, timeout=None):
    """Is a server whose ``/health`` just answered 200 generating, not ready yet, or broken? One smoke completion.

    "Not ready yet" is what a loading server does: a refused or reset connection (it went away: the gate goes back to
    ``/health`` and its check of the service, which sees an exit or a restart). "Broken" is what no wait fixes once
    SGLang said it is healthy (its ``/health`` ran a generation): a completion that outlasts its timeout (the
    generation hangs), an HTTP error answer (4xx/5xx: SGLang's ``serving_chat`` answers 400 for a request it cannot
    template, 500 for an engine error), or a 200 that is no generation (:func:`check_chat_response`).

    :param status: int HTTP status, None without an answer.
    :param body: the answer's body (str), '' without one.
    :param error: why there was no answer (str), None with one.
    :param timed_out: bool, no answer because the timeout ran out.
    :param timeout: the request's timeout in seconds (float), for the reason.
    :returns: (verdict, reason, completion_tokens): verdict :data:`SMOKE_OK`, :data:`SMOKE_NOT_READY` or
        :data:`SMOKE_BROKEN`; reason None when ok.
    """
    if status is None:
        if timed_out:
            return SMOKE_BROKEN, 'no answer within %s s (the generation hangs)' % (
                '%g' % timeout if isinstance(timeout, (int, float)) else '?'), 0
        return SMOKE_NOT_READY, 'no answer: %s' % (error or 'no connection'), 0
    ok, why, tokens = check_chat_response(status, body)
    if ok:
        return SMOKE_OK, None, tokens
    return SMOKE_BROKEN, why, 0


def response_excerpt(status, body, error=None, secrets=(), limit=300):
    """What the gate shows of an answer that failed a smoke completion: status, error and the body's first characters,
    with secret settings and the given secret values masked (``_secrets.redact_log_line``, ``_secrets.mask_values``).

    :param status: int HTTP status or None.
    :param body: the body (str).
    :param error: why there was no answer, or None.
    :param secrets: values to mask wherever they appear (the API key the gate sends).
    :param limit: characters of the body kept (a longer one ends in ``...``).
    :returns: dict ``status`` (int or None), ``body`` (str), ``error`` (str or None).
    """
    text = ' '.join(str(body or '').split())
    text = text if len(text) <= limit else text[:limit] + '...'
    text = _secrets.mask_values(_secrets.redact_log_line(text), secrets)
    error = _secrets.mask_values(_secrets.redact_log_line(str(error)), secrets) if error else None
    return {'status': status, 'body': text, 'error': error}
