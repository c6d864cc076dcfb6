# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""Pure parts of the performance gate (module inferops.sglang.server_perf): the figures from SGLang's answers and the
verdict against the known-good configuration's figures.

The figures (a dict, as kept in the known-good manifest under ``perf`` and in the deployment record):

- ``decode_tokens_per_s`` (float): completion tokens of M concurrent chat completions of N tokens each, divided by the
  wall-clock seconds from the first request sent to the last answer. The requests carry ``ignore_eos: true`` (SGLang's
  sampling parameter, ``ChatCompletionRequest.ignore_eos`` in ``sglang/srt/entrypoints/openai/protocol.py`` of 0.5.23,
  passed on to ``SamplingParams.ignore_eos``), so each generates exactly N tokens whatever the model says.
- ``accept_length`` (float or None): the speculative decoding accept length SGLang reports in ``GET /server_info``:
  ``internal_states`` (one dict per dp rank) key ``avg_spec_accept_length``, set only when a speculative algorithm runs
  (``sglang/srt/managers/scheduler_components/internal_state.py``, ``_add_speculative``, SGLang 0.5.23; SGLang's own
  tests read ``internal_states[0]["avg_spec_accept_length"]``). None without speculative decoding.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json

FIGURES = ('decode_tokens_per_s', 'accept_length')
LABELS = {'decode_tokens_per_s': 'decode throughput', 'accept_length': 'accept length'}
UNITS = {'decode_tokens_per_s': ' tokens/s', 'accept_length': ''}


def perf_request(model, prompt, max_tokens, extra=None):
    """Body of one ``POST /v1/chat/completions`` of the performance gate (bytes): MAX_TOKENS (int) tokens exactly
    (``ignore_eos`` true), temperature 0, not streamed. EXTRA (dict) adds fields (``chat_template_kwargs``...); it
    cannot change ``model``, ``messages``, ``stream``, ``max_tokens`` or ``ignore_eos``."""
    body = {'temperature': 0}
    body.update(extra or {})
    body.update({'model': model, 'messages': [{'role': 'user', 'content': prompt}], 'stream': False,
                 'max_tokens': int(max_tokens), 'ignore_eos': True})
    return json.dumps(body, sort_keys=True).encode('utf-8')


def completion_tokens(status, body):
    """``usage.completion_tokens`` (int) of one chat completion answer (STATUS int or None, BODY bytes or str).

    :raises ValueError: saying why, when the status is not 200 or the body has no integer ``usage.completion_tokens``.
    """
    if status != 200:
        raise ValueError('HTTP %s' % status)
    try:
        tokens = json.loads(body)['usage']['completion_tokens']
    except (ValueError, KeyError, TypeError):
        raise ValueError('no usage.completion_tokens in %r' % (body[:200],))
    if not isinstance(tokens, int) or isinstance(tokens, bool):
        raise ValueError('usage.completion_tokens is %r' % (tokens,))
    return tokens


def decode_throughput(tokens, seconds):
    """Tokens per second (float, 1 decimal): TOKENS (list of int, each answer's completion tokens) over SECONDS (float,
    the wall clock of the whole concurrent batch). 0.0 when SECONDS is not positive."""
    seconds = float(seconds)
    return round(sum(tokens) / seconds, 1) if seconds > 0 else 0.0


def accept_length(server_info_body):
    """The speculative accept length (float, 2 decimals) from a ``GET /server_info`` body (bytes, str or dict): the
    mean of ``internal_states[*].avg_spec_accept_length`` over the dp ranks that report it; None when none does (no
    speculative decoding, or an answer without ``internal_states``)."""
    try:
        info = server_info_body if isinstance(server_info_body, dict) else json.loads(server_info_body)
        states = info.get('internal_states') or []
    except (ValueError, TypeError, AttributeError):
        return None
    values = [s.get('avg_spec_accept_length') for s in states if isinstance(s, dict)]
    values = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return round(sum(values) / len(values), 2) if values else None


def describe_figures(figures):
    """One line for FIGURES (dict of :data:`FIGURES`, either may be None or missing): e.g.
    ``'decode throughput 80.0 tokens/s, accept length 2.6'`` (str); ``'no figures'`` when both are missing."""
    words = ['%s %g%s' % (LABELS[name], figures[name], UNITS[name])
             for name in FIGURES if isinstance((figures or {}).get(name), (int, float))]
    return ', '.join(words) if words else 'no figures'


def perf_verdict(measured, baseline, tolerance):
    """Is the new configuration at most TOLERANCE percent slower than the known-good one, figure by figure?

    :param measured: this configuration's figures (dict of :data:`FIGURES`).
    :param baseline: the known-good configuration's figures (same shape), or None/{} when it has none yet (its first
        adoption): then nothing is compared.
    :param tolerance: percent (int or float, 0 to 100): a figure fails when it is below baseline x (1 - TOLERANCE/100).
    :returns: (ok bool, message str, compared list of str - the figures compared). A figure missing on either side
        (no speculative decoding on one of them) is not compared.
    :raises ValueError: when TOLERANCE is not a number from 0 to 100.
    """
    tolerance = float(tolerance)
    if not 0 <= tolerance <= 100:
        raise ValueError('cutover_perf_tolerance must be a percentage from 0 to 100 (got %s)' % tolerance)
    baseline = baseline or {}
    compared = []
    slower = []
    for name in FIGURES:
        old, new = baseline.get(name), (measured or {}).get(name)
        if not isinstance(old, (int, float)) or not isinstance(new, (int, float)) or old <= 0:
            continue
        compared.append(name)
        if new < old * (1 - tolerance / 100.0):
            slower.append('%s %g%s is %.0f %% below the known-good %g%s' % (
                LABELS[name], new, UNITS[name], 100.0 * (old - new) / old, old, UNITS[name]))
    if not compared:
        return True, 'no known-good figures to compare with; recorded %s' % describe_figures(measured), compared
    if slower:
        return False, ('slower than the known-good configuration by more than cutover_perf_tolerance (%g %%): %s '
                       '(this configuration: %s; known-good: %s)' % (
                           tolerance, '; '.join(slower), describe_figures(measured), describe_figures(baseline))), compared
    return True, 'within %g %% of the known-good configuration (this configuration: %s; known-good: %s)' % (
        tolerance, describe_figures(measured), describe_figures(baseline)), compared
