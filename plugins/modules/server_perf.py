#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: server_perf
short_description: Performance gate for an SGLang server - decode throughput and speculative accept length
version_added: 0.1.0
description:
  - Measures two figures of a healthy SGLang server (run it after M(inferops.sglang.server_health) passed) and compares
    them with the known-good configuration's figures O(baseline).
  - Decode throughput - O(concurrency) chat completions of O(max_tokens) tokens each, sent at once, each with
    C(ignore_eos) true (SGLang's sampling parameter, so every answer has exactly O(max_tokens) tokens); the figure is
    the completion tokens of all answers divided by the wall-clock seconds of the whole batch (RV(perf.decode_tokens_per_s)).
  - Accept length - after the batch, C(GET /server_info), whose C(internal_states) (one per dp rank) carry
    C(avg_spec_accept_length) when the server runs speculative decoding (SGLang 0.5.23,
    C(scheduler_components/internal_state.py)); the mean over the ranks (RV(perf.accept_length)), null without
    speculative decoding.
  - A figure below O(baseline)'s by more than O(tolerance) percent fails the task with both figures in the message.
    Without O(baseline) (or a figure missing on either side) nothing is compared; the figures are returned to be recorded.
options:
  host:
    description: Address the server binds; a wildcard bind is probed on loopback (as M(inferops.sglang.server_health)).
    type: str
    default: 127.0.0.1
  port:
    description: Port of the server.
    type: int
    default: 30000
  scheme:
    description: C(https) when the server serves TLS, else C(http).
    type: str
    choices: [http, https]
    default: http
  validate_certs:
    description: Verify the server's certificate with O(scheme=https).
    type: bool
    default: true
  ca_path:
    description: PEM file of the CA certificate(s) to verify the server's certificate against.
    type: path
  api_key:
    description: The server's C(--api-key), sent as C(Authorization) C(Bearer <key>). Never logged.
    type: str
  prompt:
    description: The user message of every request (a fixed prompt, so that figures compare).
    type: str
    default: Write a long story about a lighthouse keeper.
  max_tokens:
    description: Tokens each request generates (N), exactly, through C(ignore_eos).
    type: int
    default: 256
  concurrency:
    description: Requests sent at once (M).
    type: int
    default: 8
  timeout:
    description: Seconds each request may take.
    type: float
    default: 300
  extra_body:
    description:
      - More fields of each request's body (such as C(chat_template_kwargs)). C(model), C(messages), C(stream),
        C(max_tokens) and C(ignore_eos) cannot be changed.
    type: dict
    default: {}
  baseline:
    description:
      - The known-good configuration's figures (the C(perf) of its manifest) - keys C(decode_tokens_per_s) and
        C(accept_length). Empty or omitted - nothing is compared (the first adoption records the figures).
    type: dict
  tolerance:
    description: Percent a figure may fall below O(baseline)'s before the gate fails.
    type: float
    default: 20
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details:
      - Only sends generation requests and reads C(/server_info); it changes nothing, so it runs in check mode too.
  diff_mode:
    support: none
  platform:
    platforms: posix
notes:
  - Run it on the server's host; the endpoint is usually bound to loopback.
  - The decode throughput includes the prefill of the short prompt and the HTTP round trip; with O(max_tokens) in the
    hundreds it is dominated by decoding. Compare figures measured with the same O(prompt), O(max_tokens) and
    O(concurrency) only.
seealso:
  - module: inferops.sglang.server_health
author:
  - inferops.sglang developers (@inferops)
'''

EXAMPLES = r'''
- name: Measure the server and compare it with the known-good figures
  inferops.sglang.server_perf:
    port: 30000
    max_tokens: 256
    concurrency: 8
    baseline: "{{ inferops_sglang_known_good.manifest.perf | default({}) }}"
    tolerance: 20
  register: perf
'''

RETURN = r'''
perf:
  description:
    - The figures measured, as kept in the known-good manifest under C(perf).
    - C(decode_tokens_per_s) (float), C(accept_length) (float or null), C(max_tokens), C(concurrency),
      C(completion_tokens) (all answers), C(seconds) (the batch's wall clock).
  returned: always
  type: dict
  sample: {decode_tokens_per_s: 80.0, accept_length: 2.6, max_tokens: 256, concurrency: 8, completion_tokens: 2048, seconds: 25.6}
  contains:
    decode_tokens_per_s:
      description: Completion tokens of all answers over the batch's wall-clock seconds.
      type: float
    accept_length:
      description: The mean C(avg_spec_accept_length) of C(/server_info)'s C(internal_states); null without speculative decoding.
      type: float
    max_tokens:
      description: O(max_tokens).
      type: int
    concurrency:
      description: O(concurrency).
      type: int
    completion_tokens:
      description: Completion tokens of all answers.
      type: int
    seconds:
      description: The batch's wall clock, from the first request sent to the last answer.
      type: float
baseline:
  description: The known-good figures compared with (O(baseline)), empty without them.
  returned: always
  type: dict
compared:
  description: The figures compared (C(decode_tokens_per_s), C(accept_length)); empty when nothing was.
  returned: always
  type: list
  elements: str
verdict:
  description: One line - both configurations' figures and whether the new one is within O(tolerance).
  returned: always
  type: str
  sample: within 20 % of the known-good configuration (this configuration - decode throughput 81 tokens/s, accept length 2.6; ...)
'''

import threading
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.inferops.sglang.plugins.module_utils import _health, _http, _perf


def main():
    module = AnsibleModule(
        argument_spec=dict(
            host=dict(type='str', default='127.0.0.1'),
            port=dict(type='int', default=30000),
            scheme=dict(type='str', default='http', choices=list(_http.SCHEMES)),
            validate_certs=dict(type='bool', default=True),
            ca_path=dict(type='path'),
            api_key=dict(type='str', no_log=True),
            prompt=dict(type='str', default='Write a long story about a lighthouse keeper.'),
            max_tokens=dict(type='int', default=256, no_log=False),
            concurrency=dict(type='int', default=8),
            timeout=dict(type='float', default=300),
            extra_body=dict(type='dict', default={}),
            baseline=dict(type='dict'),
            tolerance=dict(type='float', default=20),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if p['max_tokens'] < 1 or p['concurrency'] < 1:
        module.fail_json(msg='max_tokens and concurrency must be at least 1')
    base = _http.base_url(p['host'], p['port'], p['scheme'])

    def ask(path, body=None, timeout=60):
        return _http.request(base + path, method='GET' if body is None else 'POST', body=body,
                             headers={'Accept': 'application/json'}, timeout=timeout, bearer_token=p['api_key'],
                             validate_certs=p['validate_certs'], ca_path=p['ca_path'])

    models = ask('/v1/models')
    model = _health.model_id(models.body if models.status == 200 else '')
    body = _perf.perf_request(model, p['prompt'], p['max_tokens'], p['extra_body'])
    answers = [None] * p['concurrency']

    def one(index):
        answers[index] = ask('/v1/chat/completions', body, p['timeout'])

    threads = [threading.Thread(target=one, args=(i,)) for i in range(p['concurrency'])]
    started = time.time()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.time() - started
    tokens = []
    for number, answer in enumerate(answers):
        try:
            tokens.append(_perf.completion_tokens(answer.status, answer.body))
        except ValueError as exc:
            module.fail_json(msg='performance request %d of %d failed: %s' % (
                number + 1, p['concurrency'], exc if answer.status is not None else answer.error))
    info = ask('/server_info')
    perf = {
        'decode_tokens_per_s': _perf.decode_throughput(tokens, seconds),
        'accept_length': _perf.accept_length(info.body) if info.status == 200 else None,
        'max_tokens': p['max_tokens'], 'concurrency': p['concurrency'],
        'completion_tokens': sum(tokens), 'seconds': round(seconds, 3),
    }
    baseline = dict((k, v) for k, v in (p['baseline'] or {}).items() if k in _perf.FIGURES)
    try:
        ok, verdict, compared = _perf.perf_verdict(perf, baseline, p['tolerance'])
    except ValueError as exc:
        module.fail_json(msg=str(exc), perf=perf, verdict='')
    result = dict(changed=False, perf=perf, baseline=baseline, compared=compared, verdict=verdict)
    if not ok:
        module.fail_json(msg='SGLang on port %d is %s' % (p['port'], verdict), **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
