#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: server_health
short_description: Health gate for an SGLang server - TCP, /health, then real chat completions
version_added: 0.1.0
description:
  - Waits until an SGLang server proves it can generate - a TCP connection to O(host):O(port), then
    C(GET /health) answering 200 (SGLang's handler runs a one-token generation, so each request may take
    over a second; the per-request timeout O(request_timeout) is at least 20 s, SGLang's own health timeout),
    then O(smoke_requests) sequential C(POST /v1/chat/completions) requests, each bounded by O(smoke_timeout),
    that must return a non-empty completion.
  - C(GET /v1/models) answers 200 while the model is still loading, so it never counts as a sign of health.
  - The gate tells B(not ready yet) from B(broken). A closed port, a refused connection and C(/health) answering 503
    are a server still loading or warming up - the gate waits, up to O(budget). Once C(/health) answered 200 (SGLang's
    handler ran a generation), a chat completion that gets no answer within O(smoke_timeout) (the generation hangs),
    answers an HTTP error (4xx or 5xx) or answers 200 without generating is B(broken) - no wait fixes it, so the gate
    fails at once with RV(failure_kind=broken), the reason C(the server is broken), and the answer (redacted) in
    RV(response); it does not wait for the rest of the budget. A refused or reset connection after C(/health) passed
    sends the gate back to C(/health) (the server went away; the service check sees an exit or a restart).
  - Each poll also checks the service itself (O(manager)) - a systemd unit that failed, is waiting to
    restart, restarted (C(NRestarts) or C(MainPID) changed against O(baseline)), or a supervisord program
    that is not C(RUNNING)/C(STARTING) or changed pid - and then fails at once with the last O(log_lines)
    lines of its log (C(journalctl -u) or the program's log file). With O(interval) = 1 s, a crash during
    the load is reported about a second after it happens.
  - One call waits at most O(round_seconds) seconds and returns RV(state=waiting) if the server is not ready
    yet, so a task can call it round after round and show each round's RV(progress) (a 10-minute load does not look
    like a hang). The overall budget is O(budget) seconds from O(started_at); progress (first TCP accept, first
    healthy answer) is kept between calls in O(progress_file).
  - Nodes of rank >= 1 of a multi-node replica answer C(/health) with a dummy 200 (SGLang's
    C(http_server.py)); gate rank 0 only.
  - A server started with C(--api-key) answers 401 to every path but C(/health) and C(/metrics) without
    the header C(Authorization) with C(Bearer <key>) (SGLang's C(add_api_key_middleware),
    C(python/sglang/srt/utils/common.py)). The gate sends O(api_key) on every request. The first 401 or 403 answer ends the gate at once with
    RV(state=failed) and the reason C(the server requires an API key) (no O(api_key) given) or
    C(the key was refused) (a key was given), followed by the request and status in parentheses, for example
    C(the key was refused (GET /v1/models answered 401)). It does not wait for the budget.
  - With O(scheme=https) every request is HTTPS. A failed certificate check, or a server that does not speak
    TLS, ends the gate at once with the reason C(TLS failed (GET /health)) and the error after it. A TLS server
    probed with O(scheme=http) cannot be told from one still starting; it fails at the end of the budget.
  - Requests to a local address (loopback C(127.0.0.0/8), C(::1), C(localhost), or a wildcard bind probed on
    loopback) never go through a proxy, whatever C(http_proxy)/C(https_proxy) say in the environment. Any
    other O(host) honours the environment's proxy settings and C(no_proxy).
options:
  host:
    description:
      - Address the server binds. A wildcard bind is probed on loopback - C(0.0.0.0) (or empty) on C(127.0.0.1),
        C(::) on C(::1); any other address as it is (an IPv6 literal without brackets).
    type: str
    default: 127.0.0.1
  port:
    description: Port of the server.
    type: int
    default: 30000
  scheme:
    description:
      - C(https) when the server serves TLS (C(--ssl-certfile)/C(--ssl-keyfile), SGLang 0.5.10 and later), else
        C(http).
      - The probe URL is C(<scheme>://<host>:<port>), O(host) mapped as described there.
    type: str
    choices: [http, https]
    default: http
  validate_certs:
    description:
      - Verify the server's certificate with O(scheme=https) - it must be signed by a trusted CA (O(ca_path) or
        the system's store) and name the probed host (C(127.0.0.1) for a wildcard bind, so the certificate needs
        that IP address as a subject alternative name).
      - C(false) accepts any certificate; use it only for a self-signed certificate without the loopback address.
    type: bool
    default: true
  ca_path:
    description:
      - PEM file of the CA certificate(s) to verify the server's certificate against instead of the system's
        store (for example the self-signed certificate itself).
      - A file that cannot be read ends the gate at once (C(TLS failed ... no TLS context)).
    type: path
  manager:
    description: What runs the server, checked on every poll. C(none) checks only the endpoint.
    type: str
    choices: [systemd, supervisord, none]
    default: systemd
  service:
    description: The systemd unit or supervisord program name. Required unless O(manager=none).
    type: str
  baseline:
    description:
      - Status of the service right after it was started, as returned in RV(service) by an earlier call
        (or by this module with O(round_seconds=0)). A later restart against it fails the gate.
      - For systemd the keys C(MainPID) and C(NRestarts); for supervisord the key C(pid).
    type: dict
  started_at:
    description: Epoch seconds when the service was started; times are measured from it. Default now.
    type: float
  budget:
    description: Seconds from O(started_at) the server may take to become ready (a large model loads ~10 min).
    type: float
    default: 900
  round_seconds:
    description:
      - Seconds this one call (one round of an C(until) loop) may poll before it returns RV(state=waiting).
        0 polls once.
      - The whole wait is bounded by O(budget), not by this.
    type: float
    default: 30
  interval:
    description: Seconds between polls.
    type: float
    default: 1
  request_timeout:
    description: Timeout of each C(GET /health) in seconds; at least 20.
    type: float
    default: 30
  smoke_requests:
    description: Sequential chat completions that must succeed after C(/health). 0 skips them.
    type: int
    default: 3
  smoke_timeout:
    description: Timeout of each chat completion in seconds.
    type: float
    default: 60
  smoke_prompt:
    description: The user message of the smoke test.
    type: str
    default: Reply with one word.
  smoke_max_tokens:
    description:
      - C(max_tokens) of each smoke request. A thinking model (C(--reasoning-parser)) may spend it all on its reasoning;
        that counts as generation (C(reasoning_content), or completion tokens with C(finish_reason) C(length)).
    type: int
    default: 8
  smoke_extra_body:
    description:
      - More fields of each smoke request's body, such as C(chat_template_kwargs) with C(thinking) false, which turns
        a Kimi-K2.5 model's thinking off. C(model), C(messages) and C(stream) cannot be changed.
    type: dict
    default: {}
  api_key:
    description:
      - The server's C(--api-key), sent in the header C(Authorization) as C(Bearer <key>) on every request of the
        gate. SGLang ignores it on C(/health) and requires it on C(/v1/models) and C(/v1/chat/completions).
      - Without it, a server that requires a key fails the gate at once with C(the server requires an API key);
        a wrong key with C(the key was refused).
      - Never logged; masked in the result and in every message.
    type: str
  schedulers:
    description:
      - Scheduler processes the server must keep running - tp x pp x dp (without dp under C(--enable-dp-attention))
        / nnodes, one per GPU rank of this node. C(0) skips the check.
      - Once the port is open (SGLang opens it after every scheduler reported ready), each poll counts the processes
        titled C(sglang::scheduler...) in the tree of the service's main process (O(manager) C(systemd) or
        C(supervisord)). Fewer than this ends the gate at once with RV(state=failed), RV(degraded=true) and the reason
        C(degraded) followed by the count, for example 3 of 4 scheduler processes running. A scheduler that died is never restarted by
        SGLang, whose C(/health) then answers 503 only after its own 20 s wait, round after round.
    type: int
    default: 0
  log_lines:
    description: Lines of the service's log to include when the gate fails.
    type: int
    default: 40
  log_file:
    description: Log file of a supervisord program (for O(manager=supervisord)).
    type: path
  supervisor_config:
    description: supervisord configuration file passed to C(supervisorctl -c).
    type: path
  supervisorctl:
    description: Path of C(supervisorctl) (for O(manager=supervisord)), e.g. in supervisor's venv.
    type: path
    default: supervisorctl
  progress_file:
    description: Where progress is kept between calls. Default C(/run/inferops-sglang/health-<port>.json).
    type: path
  give_back_lock:
    description:
      - The host lock (M(inferops.sglang.host_lock)) of run O(give_back_lock.run_id), given back in this call once the
        gate passed (RV(state=ready)), exactly as C(host_lock state=absent) gives it back - for a caller whose last call
        on the host this is, saving it one (the cutover of an unchanged server). A gate that waits or fails keeps the
        lock. Not in check mode. The outcome is RV(lock).
    type: dict
    suboptions:
      run_id:
        description: The run whose lock it is (another run's lock is left alone).
        type: str
        required: true
      path:
        description: The lock file, as M(inferops.sglang.host_lock)'s.
        type: path
        default: /run/lock/inferops-sglang.lock
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details:
      - Only reads; in check mode the progress file is not written.
  diff_mode:
    support: none
  platform:
    platforms: posix
notes:
  - Run it on the server's host; the endpoint is usually bound to loopback.
  - The returned RV(log_tail) has the values of secret settings masked (C(api_key='********') in SGLang's
    C(server_args=ServerArgs(...)) line, C(--api-key ********) on a command line).
seealso:
  - module: inferops.sglang.server_process
author:
  - inferops.sglang developers (@inferops)
'''

EXAMPLES = r'''
- name: Note when the unit was started
  ansible.builtin.set_fact:
    gate_started_at: "{{ now().timestamp() }}"

- name: Wait until the server generates (each round waits up to 30 s)
  inferops.sglang.server_health:
    port: 30000
    manager: systemd
    service: sglang.service
    started_at: "{{ gate_started_at }}"
    budget: 900
    round_seconds: 30
  register: gate
  until: gate.state | default('failed') != 'waiting'
  retries: 40
  delay: 0

- name: Gate a server that serves TLS and requires an API key
  inferops.sglang.server_health:
    port: 30000
    scheme: https
    ca_path: /etc/sglang/tls/ca.pem
    api_key: "{{ sglang_api_key }}"
    manager: systemd
    service: sglang.service
    started_at: "{{ gate_started_at }}"
  register: gate
  until: gate.state | default('failed') != 'waiting'
  retries: 40
  delay: 0
'''

RETURN = r'''
degraded:
  description: Whether the gate ended because the server runs fewer scheduler processes than O(schedulers).
  returned: always
  type: bool
  sample: false
schedulers:
  description: Scheduler processes counted in the service's tree at the last check; null when not counted.
  returned: always
  type: int
  sample: 8
lock:
  description:
    - What became of the lock of O(give_back_lock) - C(result) (C(released); C(expired), its holder had ended;
      C(not_held), no record of it; C(other), another run holds the lock, left alone; C(error), the give-back failed,
      with C(reason), and a warning - the gate's verdict stands) and C(owner), the record it had. Empty without
      O(give_back_lock), in check mode, and when the gate did not pass.
  returned: always
  type: dict
  sample: {"result": "released", "owner": {"run_id": "20261204T130000Z-5f3a9c21", "holder_pid": 41234}}
state:
  description: C(ready) when every step passed, C(waiting) when the call ran out of O(round_seconds), C(failed) otherwise.
  returned: always
  type: str
  sample: ready
url:
  description: The base URL the gate probes (C(<scheme>://<host>:<port>), a wildcard bind mapped to loopback).
  returned: always
  type: str
  sample: https://127.0.0.1:30000
phase:
  description: The step reached - C(tcp), C(health), C(smoke) or C(ready).
  returned: always
  type: str
reason:
  description:
    - Why the gate failed, or what it is waiting for.
    - For a 401 or 403 answer C(the server requires an API key (<method> <path> answered <status>)) or
      C(the key was refused (<method> <path> answered <status>)); for TLS C(TLS failed (<method> <path>)) and the error after it.
  returned: always
  type: str
  sample: the key was refused (GET /v1/models answered 401)
progress:
  description:
    - "One line for a person watching the load - what the gate saw last and the seconds spent of O(budget), for
      example C(loading the model (pid 4242 running, port not open yet), 40 s of 600 s),
      C(listening, warming up (GET /health answered 503), 95 s of 600 s) or
      C(ready: /health ok, 3 chat completions ok, 130 s of 600 s)."
    - A closed port means the model is still loading (SGLang opens the port only after every scheduler loaded the
      weights); a C(/health) answer of 503 means SGLang's warm-up generation has not passed yet.
  returned: always
  type: str
  sample: loading the model (pid 4242 running, port not open yet), 40 s of 600 s
elapsed:
  description: Seconds since O(started_at).
  returned: always
  type: float
time_to_tcp:
  description: Seconds from O(started_at) to the first accepted TCP connection (null before).
  returned: always
  type: float
time_to_healthy:
  description: Seconds from O(started_at) to the first C(/health) 200 (null before).
  returned: always
  type: float
health_latency:
  description: Seconds the passing C(GET /health) took.
  returned: always
  type: float
smoke_latencies:
  description: Seconds each smoke-test completion took, in order.
  returned: always
  type: list
  elements: float
last_status:
  description: HTTP status of the last C(/health) answer (null without one).
  returned: always
  type: int
service:
  description: The service's status at the last poll (systemd properties, or supervisord state and pid).
  returned: always
  type: dict
failure_kind:
  description:
    - Why the gate failed, null unless RV(state=failed) - C(service) (the unit or program failed, exited or
      restarted), C(degraded) (fewer scheduler processes than O(schedulers)), C(budget) (not ready within O(budget)),
      C(broken) (C(/health) answered 200, then a smoke completion hung, answered 4xx/5xx or did not generate) or
      C(refused) (the API key was refused or required, or TLS failed).
    - A caller that checks a server it did not change can act on it - a C(broken) or C(refused) server still answers
      C(/health), so only the check failed.
  returned: always
  type: str
  sample: broken
response:
  description:
    - The answer to the smoke completion that did not pass, null when none failed - C(status) (null without an
      answer), C(body) (its first 300 characters, whitespace folded) and C(error) (why there was no answer).
    - Secret settings and O(api_key) are masked.
  returned: always
  type: dict
  sample: {"status": 500, "body": "{\"object\": \"error\", \"message\": \"Internal server error\"}", "error": null}
log_tail:
  description: Last lines of the service's log, when the gate failed; values of secret settings masked.
  returned: when state is failed
  type: list
  elements: str
'''

import json
import os
import socket
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native, to_text
from ansible_collections.inferops.sglang.plugins.module_utils import _health, _host_lock, _http, _secrets, _supervisors
from ansible_collections.inferops.sglang.plugins.module_utils._server_process.discovery import discover


class GateFailed(Exception):
    """An answer that ends the gate at once (an API key refused, TLS failed); the message is the reason."""


class Gate(object):
    """One call of the gate: polls until ready, failed, out of budget, or out of this call's round_seconds."""

    def __init__(self, module):
        self.module = module
        p = module.params
        self.p = p
        self.host = _http.probe_host(p['host'])
        self.base = _http.base_url(p['host'], p['port'], p['scheme'])
        self.now = time.time()
        self.started_at = p['started_at'] if p['started_at'] is not None else self.now
        self.progress_file = p['progress_file'] or '/run/inferops-sglang/health-%d.json' % p['port']
        self.progress = self.load_progress()
        self.result = {
            'state': 'waiting', 'phase': 'tcp', 'reason': '', 'elapsed': 0.0,
            'time_to_tcp': self.progress.get('time_to_tcp'),
            'time_to_healthy': self.progress.get('time_to_healthy'),
            'health_latency': None, 'smoke_latencies': [], 'last_status': None, 'service': {},
            'url': self.base, 'degraded': False, 'schedulers': None, 'failure_kind': None, 'response': None,
        }

    # -- progress kept between calls ---------------------------------------------------------
    def load_progress(self):
        try:
            with open(self.progress_file) as handle:
                data = json.load(handle)
        except (IOError, OSError, ValueError):
            return {}
        if data.get('started_at') != self.started_at or data.get('port') != self.p['port']:
            return {}
        return data

    def save_progress(self):
        if self.module.check_mode:
            return
        data = {'started_at': self.started_at, 'port': self.p['port'],
                'time_to_tcp': self.result['time_to_tcp'], 'time_to_healthy': self.result['time_to_healthy']}
        try:
            directory = os.path.dirname(self.progress_file)
            if directory and not os.path.isdir(directory):
                os.makedirs(directory, 0o700)
            tmp = self.progress_file + '.tmp'
            with open(tmp, 'w') as handle:
                json.dump(data, handle)
            os.rename(tmp, self.progress_file)
        except (IOError, OSError) as exc:
            self.module.warn('could not keep the gate progress in %s: %s' % (self.progress_file, to_native(exc)))

    # -- the service --------------------------------------------------------------------------
    def service_status(self):
        manager = self.p['manager']
        if manager == 'systemd':
            rc, out, err = self.module.run_command(
                ['systemctl', 'show', self.p['service'], '--property=ActiveState', '--property=SubState',
                 '--property=MainPID', '--property=NRestarts', '--property=Result', '--property=ExecMainStatus'],
                environ_update={'LANG': 'C', 'LC_ALL': 'C'})
            if rc != 0:
                return {'ActiveState': 'unknown', 'error': to_text(err).strip()}
            return _supervisors.parse_systemctl_show(out)
        if manager == 'supervisord':
            cmd = [self.p['supervisorctl']]
            if self.p['supervisor_config']:
                cmd += ['-c', self.p['supervisor_config']]
            rc, out, err = self.module.run_command(cmd + ['status', self.p['service']],
                                                   environ_update={'LANG': 'C', 'LC_ALL': 'C'})
            return _supervisors.parse_supervisorctl_status(out or err)
        return {}

    def log_tail(self):
        lines = self.p['log_lines']
        if self.p['manager'] == 'systemd':
            rc, out, err = self.module.run_command(
                ['journalctl', '-u', self.p['service'], '-n', str(lines), '--no-pager', '-o', 'short-iso'])
            return [_secrets.redact_log_line(line) for line in to_text(out or err).splitlines()[-lines:]]
        if self.p['manager'] == 'supervisord' and self.p['log_file']:
            try:
                with open(self.p['log_file'], 'rb') as handle:
                    handle.seek(0, 2)
                    size = handle.tell()
                    handle.seek(max(0, size - 65536))
                    tail = to_text(handle.read(), errors='replace').splitlines()[-lines:]
                return [_secrets.redact_log_line(line) for line in tail]
            except (IOError, OSError) as exc:
                return ['(could not read %s: %s)' % (self.p['log_file'], to_native(exc))]
        return []

    def scheduler_shortfall(self):
        """'' when the service's server runs its O(schedulers) scheduler processes, else why it is degraded."""
        status = self.result['service'] or {}
        pid = status.get('MainPID') if self.p['manager'] == 'systemd' else status.get('pid')
        if not pid:
            return ''
        try:
            found = discover(unit=self.p['service'] or 'sglang.service', include_gpu_holders=False)
        except (OSError, IOError, ValueError) as exc:
            self.module.warn('could not count the scheduler processes: %s' % to_native(exc))
            return ''
        server = next((s for s in found.servers if s.get('main_pid') == pid), None)
        if server is None:
            return ''
        self.result['schedulers'] = _health.scheduler_count(server)
        return _health.scheduler_shortfall(server, self.p['schedulers'])

    # -- the endpoint -------------------------------------------------------------------------
    def tcp_open(self):
        try:
            sock = socket.create_connection((self.host, self.p['port']), timeout=min(5, self.p['interval'] + 1))
            sock.close()
            return True
        except (OSError, socket.error):
            return False

    def http(self, path, timeout, body=None):
        """_http.Response of GET <path>, or of POST <path> with a JSON body (bytes).

        Raises GateFailed for an answer no retry changes: 401/403 (the API key) or a failed TLS handshake.
        """
        method = 'GET' if body is None else 'POST'
        answer = _http.request(self.base + path, method=method, body=body,
                               headers={'Accept': 'application/json'}, timeout=timeout,
                               bearer_token=self.p['api_key'], validate_certs=self.p['validate_certs'],
                               ca_path=self.p['ca_path'])
        refusal = _http.auth_refusal(answer.status, bool(self.p['api_key']))
        if refusal:
            if path == '/health':
                self.result['last_status'] = answer.status
            raise GateFailed('%s (%s %s answered %d)' % (refusal, method, path, answer.status))
        if answer.tls:
            raise GateFailed('TLS failed (%s %s): %s' % (method, path, answer.error))
        return answer

    def smoke(self):
        """(latencies, verdict, why): the seconds of each passed smoke completion, and the verdict of the first that did
        not pass (``_health.smoke_verdict``; its answer, redacted, in the result's ``response``), else ok and None."""
        models = self.http('/v1/models', self.p['request_timeout'])
        model = _health.model_id(models.body if models.status == 200 else '')
        latencies = []
        for number in range(self.p['smoke_requests']):
            body = _health.chat_request(model, self.p['smoke_prompt'], self.p['smoke_max_tokens'], self.p['smoke_extra_body'])
            answer = self.http('/v1/chat/completions', self.p['smoke_timeout'], body)
            verdict, why, dummy = _health.smoke_verdict(answer.status, answer.body, answer.error, answer.timed_out,
                                                        self.p['smoke_timeout'])
            if verdict != _health.SMOKE_OK:
                self.result['response'] = _health.response_excerpt(
                    answer.status, answer.body, answer.error, [self.p['api_key'] or ''])
                return latencies, verdict, 'smoke request %d of %d failed: %s' % (number + 1, self.p['smoke_requests'], why)
            latencies.append(round(answer.elapsed, 3))
        return latencies, _health.SMOKE_OK, None

    # -- the loop -----------------------------------------------------------------------------
    def fail(self, reason, kind, with_log=True):
        reason = _secrets.mask_values(reason, [self.p['api_key'] or ''])
        self.result.update(state='failed', reason=reason, failure_kind=kind, elapsed=round(time.time() - self.started_at, 3))
        if with_log:
            self.result['log_tail'] = self.log_tail()
        return self.result

    def run(self):
        try:
            return self.poll()
        except GateFailed as exc:
            return self.fail(to_native(exc), 'refused')

    def poll(self):
        p = self.p
        call_deadline = self.now + p['round_seconds']
        budget_deadline = self.started_at + p['budget']
        phase = 'health' if self.result['time_to_tcp'] is not None else 'tcp'
        while True:
            now = time.time()
            self.result['elapsed'] = round(now - self.started_at, 3)
            if p['manager'] != 'none':
                status = self.service_status()
                self.result['service'] = status
                verdict = _health.service_verdict(p['manager'], p['baseline'], status)
                if verdict:
                    self.result['phase'] = phase
                    return self.fail('%s after %.1f s' % (verdict, now - self.started_at), 'service')
            if phase == 'tcp':
                if self.tcp_open():
                    if self.result['time_to_tcp'] is None:
                        self.result['time_to_tcp'] = round(time.time() - self.started_at, 3)
                    phase = 'health'
                else:
                    self.result['reason'] = 'the port is not open yet (model loading)'
            if phase != 'tcp' and p['schedulers'] > 0 and p['manager'] != 'none':
                shortfall = self.scheduler_shortfall()
                if shortfall:
                    self.result.update(phase=phase, degraded=True)
                    return self.fail('%s after %.1f s' % (shortfall, time.time() - self.started_at), 'degraded')
            if phase == 'health':
                self.result['phase'] = phase
                answer = self.http('/health', p['request_timeout'])
                self.result['last_status'] = answer.status
                if answer.status == 200:
                    self.result['health_latency'] = round(answer.elapsed, 3)
                    if self.result['time_to_healthy'] is None:
                        self.result['time_to_healthy'] = round(time.time() - self.started_at, 3)
                    phase = 'smoke'
                else:
                    self.result['reason'] = ('GET /health answered %s' % answer.status if answer.status is not None
                                             else 'GET /health got no answer: %s' % answer.error)
            if phase == 'smoke':
                self.result['phase'] = phase
                latencies, verdict, why = self.smoke() if p['smoke_requests'] > 0 else ([], _health.SMOKE_OK, None)
                self.result['smoke_latencies'] = latencies
                if verdict == _health.SMOKE_OK:
                    self.result.update(phase='ready', state='ready', reason='ready',
                                       elapsed=round(time.time() - self.started_at, 3))
                    return self.result
                if verdict == _health.SMOKE_BROKEN:
                    # /health ran a generation and said healthy, yet a real one fails: no wait fixes that.
                    answer = self.result.get('response') or {}
                    return self.fail('the server is broken: /health answered 200, but %s%s after %.1f s' % (
                        why, (' (answer: %s)' % answer['body']) if answer.get('body') else '',
                        time.time() - self.started_at), 'broken')
                # No connection after /health passed: the server went away; /health (and the service) next round.
                self.result['reason'] = why
                phase = 'health'
            self.result['phase'] = phase
            now = time.time()
            if now >= budget_deadline:
                return self.fail('not ready after the whole budget of %.0f s (%s)' % (p['budget'], self.result['reason']),
                                 'budget')
            if now + p['interval'] > call_deadline:
                return self.result
            time.sleep(p['interval'])


def give_back(module, state, lock, release=None):
    """RV(lock): the lock of O(give_back_lock) given back when the gate's STATE is C(ready) (``_host_lock.release``'s
    dict, with a warning where the lock had expired), else {} - also without LOCK and in check mode. A give-back that
    fails (the holder did not end, the lock file cannot be opened) is C({result: error, reason}) with a warning: the
    gate's verdict stands, and the caller's own give-back runs."""
    if not lock or state != 'ready' or module.check_mode:
        return {}
    try:
        out = (release or _host_lock.release)(lock['path'], lock['run_id'])
    except (IOError, OSError) as exc:
        reason = to_native(exc)
        module.warn('The gate passed, but the lock of run %s was not given back here: %s.' % (lock['run_id'], reason))
        return {'result': 'error', 'reason': reason, 'owner': {}}
    if out['result'] == 'expired':
        module.warn(_host_lock.expired_warning(lock['run_id'], out['owner']))
    return out


def main():
    module = AnsibleModule(
        argument_spec=dict(
            host=dict(type='str', default='127.0.0.1'),
            port=dict(type='int', default=30000),
            scheme=dict(type='str', default='http', choices=list(_http.SCHEMES)),
            validate_certs=dict(type='bool', default=True),
            ca_path=dict(type='path'),
            manager=dict(type='str', default='systemd', choices=['systemd', 'supervisord', 'none']),
            service=dict(type='str'),
            baseline=dict(type='dict'),
            started_at=dict(type='float'),
            budget=dict(type='float', default=900),
            round_seconds=dict(type='float', default=30),
            interval=dict(type='float', default=1),
            request_timeout=dict(type='float', default=30),
            smoke_requests=dict(type='int', default=3),
            smoke_timeout=dict(type='float', default=60),
            smoke_prompt=dict(type='str', default='Reply with one word.'),
            smoke_max_tokens=dict(type='int', default=8, no_log=False),
            smoke_extra_body=dict(type='dict', default={}),
            api_key=dict(type='str', no_log=True),
            schedulers=dict(type='int', default=0),
            log_lines=dict(type='int', default=40),
            log_file=dict(type='path'),
            supervisor_config=dict(type='path'),
            supervisorctl=dict(type='path', default='supervisorctl'),
            progress_file=dict(type='path'),
            give_back_lock=dict(type='dict', options=dict(run_id=dict(type='str', required=True),
                                                          path=dict(type='path', default=_host_lock.DEFAULT_PATH))),
        ),
        required_if=[('manager', 'systemd', ['service']), ('manager', 'supervisord', ['service'])],
        supports_check_mode=True,
    )
    p = module.params
    if p['request_timeout'] < 20:
        module.fail_json(msg='request_timeout must be at least 20 s: SGLang\'s /health runs a generation '
                             'and SGLang itself waits up to 20 s for it (got %s)' % p['request_timeout'])
    if p['interval'] <= 0 or p['round_seconds'] < 0 or p['budget'] <= 0:
        module.fail_json(msg='interval and budget must be positive and round_seconds not negative')
    gate = Gate(module)
    result = gate.run()
    gate.save_progress()
    result['progress'] = _health.progress_line(result, p['budget'])
    result['lock'] = give_back(module, result['state'], p['give_back_lock'])
    if result['state'] == 'failed':
        module.fail_json(msg='SGLang on port %d is not healthy: %s' % (p['port'], result['reason']),
                         changed=False, **result)
    module.exit_json(changed=False, **result)


if __name__ == '__main__':
    main()
