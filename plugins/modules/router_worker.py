#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: router_worker
short_description: Register an SGLang worker with the SGLang router, or take it out and drain it
version_added: 0.1.0
description:
  - Adds a worker to, or removes it from, a running C(sglang-router) (SGLang Model Gateway, the Rust
    router on PyPI) through its worker API, and waits until the router's own list shows the result.
  - Facts from sglang-router 0.3.2 - C(GET /workers) lists the workers with their C(id), C(url) and C(is_healthy);
    C(POST /workers) with the body a JSON object with the key C(url) and C(DELETE /workers/<id>) both answer 202 and act
    in the background.
  - With O(state=present) the worker must end up listed and healthy (the router checks its C(/health) and
    reads its model info first); behind a C(--dp-aware) smg every data-parallel rank (C(http://h:p@0), C(@1), ...,
    as many as their C(dp_size)) must be listed healthy, a rank smg lists as C(failed) ends the wait at once. With
    O(state=absent) every rank is removed and the module waits until none is listed (field case C43).
  - With O(state=absent) and O(drain=true), once the router no longer lists the worker, the module polls
    the worker's own C(GET /v1/loads) (SGLang 0.5.9 on, the only one in 0.5.23 - C(sglang/srt/entrypoints/v1_loads.py);
    one entry per data-parallel rank with C(num_running_reqs) and C(num_waiting_reqs)), else, when that answers 404,
    C(GET /get_load) (0.5.9, deprecated; C(num_reqs) running and C(num_waiting_reqs) queued), until both are 0 or
    O(drain_timeout) passes. A worker that does not
    answer at all counts as drained (nothing can be in flight on it). A worker whose C(/v1/loads) answers
    anything but a load is not waited for - 401 or 403 (it runs with C(--api-key) and O(drain_api_key) is
    missing or wrong; the reason says C(the server requires an API key) or C(the key was refused), and the
    module warns), 404 on a build without either, or a failed TLS handshake (C(TLS failed ...)). None of these nor
    a passed deadline is an error; RV(drain) says which (C(drained), C(reason)), and SGLang's own SIGTERM drain
    still finishes the requests in flight.
  - The router's worker API is authenticated with O(api_key), sent in the header C(Authorization) as
    C(Bearer <key>) (sglang-router 0.3.2). A 401 or 403 answer from the router fails the module at once with
    C(the server requires an API key) (no O(api_key) given) or C(the key was refused) (a key was given),
    followed by the request, the status and the router's text in parentheses.
  - Requests to a local address (loopback C(127.0.0.0/8), C(::1), C(localhost), or a wildcard host) never go
    through a proxy, whatever C(http_proxy)/C(https_proxy) say in the environment - the drain of a worker on
    the same host reaches it directly. Other hosts (a remote router) honour the environment's proxy settings
    and C(no_proxy).
  - Runs wherever it can reach both URLs (usually the worker host itself).
extends_documentation_fragment:
  - inferops.sglang._attributes
attributes:
  check_mode:
    support: full
    details:
      - Reads the router's list and reports the action it would take; sends nothing that changes it.
  diff_mode:
    support: full
    details:
      - The router's worker URLs before and after.
  platform:
    platforms: posix
options:
  router_url:
    description:
      - Base URL of the router, for example C(http://router1:30080); without a scheme (C(router1:30080))
        O(scheme) is put in front.
      - A wildcard host (the router's bind address) is reached on loopback - C(0.0.0.0) on C(127.0.0.1),
        C([::]) on C([::1]).
    type: str
    required: true
  url:
    description:
      - The worker's URL exactly as the router reaches it, for example C(http://gpu1:30000), or
        C(https://gpu1:30000) for a worker that serves TLS (the router then needs C(--ca-cert-paths) for a CA
        the system does not trust). Without a scheme O(scheme) is put in front.
    type: str
    required: true
  scheme:
    description:
      - Scheme put in front of O(router_url), O(url) and O(drain_url) when they are given as C(host:port); a URL
        with its own C(http://) or C(https://) keeps it.
    type: str
    choices: [http, https]
    default: http
  validate_certs:
    description:
      - Verify the certificates of the router and the worker for C(https) URLs. C(false) accepts any certificate.
      - A certificate that fails the check fails the module with C(TLS failed (<method> <url>)) and the error
        after it (for the router), or ends the drain at once with C(TLS failed (GET /get_load)) (for the worker).
      - The certificate must name the host of the URL (C(127.0.0.1) for a wildcard host).
    type: bool
    default: true
  ca_path:
    description:
      - PEM file of the CA certificate(s) to verify C(https) certificates against instead of the system's store.
    type: path
  state:
    description: C(present) registers the worker and waits until it is listed healthy; C(absent) removes it.
    type: str
    choices: [present, absent]
    default: present
  wait:
    description: Wait until the router's list shows the result (healthy for C(present), gone for C(absent)).
    type: bool
    default: true
  timeout:
    description: Seconds to wait for the router's list (registration includes the router's own health check).
    type: float
    default: 120
  drain:
    description: With O(state=absent), wait until the worker has no running or queued requests.
    type: bool
    default: true
  drain_url:
    description:
      - Base URL where the worker's C(/get_load) is read; default O(url).
      - A wildcard host is reached on loopback, as for O(router_url).
    type: str
  drain_timeout:
    description: Seconds to wait for the drain before going on (see RV(drain)).
    type: float
    default: 120
  interval:
    description:
      - Seconds between polls of the router's list and of the worker's load, at most. Each wait polls at once, then
        0.05 s later, then each wait twice the one before, up to this, since the router usually acts within a fraction
        of a second.
      - The drain's first reading of C(/get_load) comes no sooner than this after the removal was sent, so that a
        request the router forwarded just before it has reached the worker's scheduler.
      - Must be positive.
    type: float
    default: 0.5
  request_timeout:
    description: Timeout of each HTTP request in seconds.
    type: float
    default: 10
  api_key:
    description:
      - Key of the router's control plane (C(GET)/C(POST /workers), C(DELETE /workers/<id>)), sent in
        the header C(Authorization) as C(Bearer <key>).
      - In sglang-router 0.3.2 that is the router's C(--api-key) when it has no C(--control-plane-api-keys);
        with C(--control-plane-api-keys 'id:name:role:key'), the C(key) of one with the role C(admin) (the
        router answers 403 C(Admin role required for control plane access) to a C(user) key, and 401 to its
        C(--api-key)).
      - Never logged; masked in the result, the diff and every message.
    type: str
  drain_api_key:
    description:
      - The worker's C(--api-key), sent in the header C(Authorization) as C(Bearer <key>) to its C(GET /get_load)
        during the drain (SGLang requires it on every path but C(/health) and C(/metrics)).
      - Never logged; masked in the result and every message.
    type: str
  worker_api_key:
    description:
      - The worker's C(--api-key) for the router - put into the registration body as C(api_key) (C(POST /workers)
        takes a JSON object with the keys C(url) and C(api_key), sglang-router 0.3.2's C(WorkerConfigRequest)), so
        the router sends it on its requests to the worker (model info, generation). Without it the router
        reaches a worker that has a key with its own C(--api-key), if any.
      - Sent only when the worker is added; the router does not show it, so a changed key of a listed worker is
        not detected (take the worker out and back in).
      - Never logged; masked in the result, the diff and every message.
    type: str
notes:
  - Requests already routed to the worker before its removal finish on the worker; that is what the drain waits for.
seealso:
  - module: inferops.sglang.server_health
author:
  - inferops.sglang developers (@inferops)
'''

EXAMPLES = r'''
- name: Take this worker out of the router and let it drain
  inferops.sglang.router_worker:
    router_url: http://router1:30080
    url: "http://{{ inventory_hostname }}:30000"
    state: absent
    drain_timeout: 300

- name: Put it back once its gate passed
  inferops.sglang.router_worker:
    router_url: http://router1:30080
    url: "http://{{ inventory_hostname }}:30000"
    state: present

- name: The same with a secured router and a TLS worker that requires an API key
  inferops.sglang.router_worker:
    router_url: https://router1:30080
    url: "https://{{ inventory_hostname }}:30000"
    drain_url: https://127.0.0.1:30000
    ca_path: /etc/sglang/tls/ca.pem
    api_key: "{{ router_admin_key }}"
    worker_api_key: "{{ sglang_api_key }}"
    drain_api_key: "{{ sglang_api_key }}"
    state: present
'''

RETURN = r'''
operation:
  description: What was done (or, in check mode, would be done).
  returned: always
  type: str
  sample: remove
  choices: [add, remove, none]
worker_id:
  description: The router's id of the worker (before removal, or after registration); null when unknown. For the
    data-parallel ranks of a C(--dp-aware) smg (C(http://h:p@0), C(@1), ...) the id of the first rank.
  returned: always
  type: str
  sample: 06477e36-319c-4d0d-a49e-d548b55a0dfb
worker_ids:
  description: The router's ids of every rank of the worker (one without C(--dp-aware)); all are removed by
    O(state=absent) (field case C43).
  returned: always
  type: list
  elements: str
  sample: [06477e36-319c-4d0d-a49e-d548b55a0dfb]
workers:
  description: The router's worker URLs at the end (normalized, sorted).
  returned: always
  type: list
  elements: str
  sample: [http://gpu1:30000, http://gpu2:30000]
healthy:
  description: Whether the router lists the worker healthy at the end (false when not listed).
  returned: always
  type: bool
drain:
  description:
    - The drain after the removal. C(seconds) waited, the last C(running) and C(queued) counts (summed over dp
      ranks; null when unknown), C(drained) (no request running or queued, or nothing listening),
      C(deadline_passed), and C(reason) - C(idle), C(not listening), C(deadline), or why the load is unknown
      (C(the server requires an API key (GET /get_load answered 401)),
      C(the key was refused (GET /get_load answered 401)), C(GET /get_load answered 404),
      C(TLS failed (GET /get_load)) and the error after it).
  returned: when state=absent and drain=true and the worker was listed
  type: dict
  sample: {seconds: 2.1, running: 0, queued: 0, drained: true, deadline_passed: false, reason: idle}
elapsed:
  description: Seconds the module ran.
  returned: always
  type: float
'''

import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native
from ansible_collections.inferops.sglang.plugins.module_utils import _http, _router
from ansible_collections.inferops.sglang.plugins.module_utils._secrets import url_passwords


class RouterError(Exception):
    pass


class RouterWorker(object):
    def __init__(self, module):
        self.module = module
        self.p = module.params
        try:
            # The URLs this module connects to: a wildcard host (a bind address) is reached on loopback.
            self.router = _http.probe_url_of(_router.normalize_url(self.with_scheme(self.p['router_url'])))
            self.url = _router.normalize_url(self.with_scheme(self.p['url']))
            self.drain_url = _http.probe_url_of(_router.normalize_url(
                self.with_scheme(self.p['drain_url'] or self.p['url'])))
        except ValueError as exc:
            module.fail_json(msg=to_native(exc))

    def with_scheme(self, url):
        """``url`` with O(scheme) in front when it has no scheme of its own."""
        text = (url or '').strip()
        return text if not text or '://' in text else '%s://%s' % (self.p['scheme'], text)

    def request(self, method, url, body=None, token=None):
        """The _http.Response of one request."""
        return _http.request(url, method=method, body=body, timeout=self.p['request_timeout'], bearer_token=token,
                             validate_certs=self.p['validate_certs'], ca_path=self.p['ca_path'])

    def http(self, method, url, body=None):
        """(status, parsed JSON or text) of one request to the router's control plane (with O(api_key)).

        RouterError when the host cannot be reached or refuses the key (401, 403).
        """
        answer = self.request(method, url, body=body, token=self.p['api_key'])
        if answer.status is None:
            if answer.tls:
                raise RouterError('TLS failed (%s %s): %s' % (method, url, answer.error))
            raise RouterError('%s %s: %s' % (method, url, answer.error))
        refusal = _http.auth_refusal(answer.status, bool(self.p['api_key']))
        if refusal:
            text = to_native(answer.body).strip()[:200]
            raise RouterError('%s (%s %s answered %d%s)' % (refusal, method, url, answer.status,
                                                            (': ' + text) if text else ''))
        try:
            return answer.status, answer.json()
        except ValueError:
            return answer.status, answer.body

    def workers(self):
        status, body = self.http('GET', self.router + '/workers')
        if status != 200:
            raise RouterError('GET %s/workers answered %s: %s' % (self.router, status, to_native(body)[:300]))
        try:
            return _router.parse_workers(body)
        except ValueError as exc:
            raise RouterError(to_native(exc))

    def load(self):
        """(parse_load of the worker or None, reason): reason is None for a load, 'not listening' when nothing
        answers (nothing can be in flight), else why the load is unknown. Reads GET /v1/loads (SGLang 0.5.9 on, the
        only one in 0.5.23), and GET /get_load (deprecated in 0.5.9) when the first answers 404."""
        for path in ('/v1/loads', '/get_load'):
            answer = self.request('GET', self.drain_url + path, token=self.p['drain_api_key'])
            if answer.status == 404 and path == '/v1/loads':
                continue
            if answer.status is None:
                if answer.tls:
                    return None, 'TLS failed (GET %s): %s' % (path, answer.error)
                return None, 'not listening'
            refusal = _http.auth_refusal(answer.status, bool(self.p['drain_api_key']))
            if refusal:
                return None, '%s (GET %s answered %d)' % (refusal, path, answer.status)
            if answer.status != 200:
                return None, 'GET %s answered %s' % (path, answer.status)
            try:
                return _router.parse_load(answer.json()), None
            except ValueError:
                return None, 'GET %s answered no load' % path
        return None, 'GET /get_load answered 404'

    def wait_settled(self, state, deadline):
        """Poll GET /workers until every rank of the worker is gone (absent) or listed healthy (present, as many
        ranks as their dp_size says); returns the ranks. A rank smg lists as failed ends the wait at once."""
        delays = _router.poll_delays(self.p['interval'])
        while True:
            listed = _router.find_workers(self.workers(), self.url)
            if _router.settled(state, listed):
                return listed
            failed = _router.failed_ranks(listed) if state == 'present' else []
            if failed:
                raise RouterError('the router at %s lists %s as failed (it does not retry a failed worker): '
                                  'check the server, then run again' % (self.router, ', '.join(failed)))
            if time.time() >= deadline:
                raise RouterError('the router at %s did not %s %s within %.0f s (last seen: %s)' % (
                    self.router, 'list as healthy' if state == 'present' else 'drop', self.url,
                    self.p['timeout'], listed if listed else 'not listed'))
            time.sleep(next(delays))

    def drain(self, removed_at):
        """Poll the worker's /get_load until it is idle, or why not (RV drain). The first reading comes no sooner than
        ``interval`` after the removal was sent (``removed_at``, epoch s): a request the router forwarded just before
        it has reached the worker's scheduler by then, and counts as running."""
        began = time.time()
        deadline = began + self.p['drain_timeout']
        settle = removed_at + self.p['interval'] - began
        if settle > 0:
            time.sleep(settle)
        delays = _router.poll_delays(self.p['interval'])
        while True:
            load, unknown = self.load()
            done = unknown == 'not listening' or (load is not None and _router.drained(load))
            late = not done and time.time() >= deadline
            if done or late or (load is None and unknown):
                if unknown and unknown.startswith((_http.AUTH_REQUIRED, _http.AUTH_REFUSED)):
                    self.module.warn('the drain of %s did not wait: %s; give drain_api_key the worker\'s --api-key'
                                     % (self.url, unknown))
                return {
                    'seconds': round(time.time() - began, 3),
                    'running': None if load is None else load['running'],
                    'queued': None if load is None else load['queued'],
                    'drained': done,
                    'deadline_passed': late,
                    'reason': 'idle' if done and load is not None else ('deadline' if late else unknown),
                }
            time.sleep(next(delays))

    def run(self):
        began = time.time()
        removed_at = began
        state = self.p['state']
        before = self.workers()
        ranks = _router.find_workers(before, self.url)
        listed = ranks[0] if ranks else None
        action = _router.worker_action(state, listed)
        if state == 'present' and ranks and not _router.settled('present', ranks):
            action = 'none'   # listed but not yet healthy (or not every rank yet): only wait
        result = dict(changed=action != 'none', operation=action,
                      worker_id=listed['id'] if listed else None, worker_ids=[w['id'] for w in ranks])
        before_urls = sorted(w['url'] for w in before)
        after_urls = list(before_urls)
        if action == 'add':
            after_urls = sorted(before_urls + [self.url])
        elif action == 'remove':
            gone = set(w['url'] for w in ranks)
            after_urls = [u for u in before_urls if u not in gone]
        if self.module._diff:
            result['diff'] = dict(before='\n'.join(before_urls) + '\n', after='\n'.join(after_urls) + '\n',
                                  before_header='%s/workers' % self.router, after_header='%s/workers' % self.router)
        if self.module.check_mode:
            result.update(workers=after_urls, healthy=bool(ranks) and _router.settled('present', ranks)
                          and state == 'present', elapsed=round(time.time() - began, 3))
            return result

        if action == 'add':
            registration = {'url': self.url}
            if self.p['worker_api_key']:
                registration['api_key'] = self.p['worker_api_key']
            status, body = self.http('POST', self.router + '/workers', body=registration)
            if status not in (200, 201, 202):
                raise RouterError('POST %s/workers for %s answered %s: %s' % (
                    self.router, self.url, status, to_native(body)[:300]))
            if isinstance(body, dict) and body.get('worker_id'):
                result['worker_id'] = body['worker_id']
        elif action == 'remove':
            # C43: every data-parallel rank (url@0, url@1, ... of a --dp-aware smg) is its own worker.
            removed_at = time.time()
            for rank in ranks:
                status, body = self.http('DELETE', '%s/workers/%s' % (self.router, rank['id']))
                if status not in (200, 202, 204, 404):
                    raise RouterError('DELETE %s/workers/%s (%s) answered %s: %s' % (
                        self.router, rank['id'], rank['url'], status, to_native(body)[:300]))

        final = ranks
        if self.p['wait']:
            final = self.wait_settled(state, time.time() + self.p['timeout'])
            if final:
                result['worker_id'] = final[0].get('id')
                result['worker_ids'] = [w['id'] for w in final]
        if state == 'absent' and self.p['drain'] and ranks:
            result['drain'] = self.drain(removed_at)
        result['workers'] = sorted(w['url'] for w in self.workers())
        result['healthy'] = bool(final) and _router.settled('present', final) and state == 'present'
        result['elapsed'] = round(time.time() - began, 3)
        return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            router_url=dict(type='str', required=True),
            url=dict(type='str', required=True),
            state=dict(type='str', default='present', choices=['present', 'absent']),
            wait=dict(type='bool', default=True),
            timeout=dict(type='float', default=120),
            drain=dict(type='bool', default=True),
            drain_url=dict(type='str'),
            drain_timeout=dict(type='float', default=120),
            interval=dict(type='float', default=0.5),
            request_timeout=dict(type='float', default=10),
            scheme=dict(type='str', default='http', choices=list(_http.SCHEMES)),
            validate_certs=dict(type='bool', default=True),
            ca_path=dict(type='path'),
            api_key=dict(type='str', no_log=True),
            drain_api_key=dict(type='str', no_log=True),
            worker_api_key=dict(type='str', no_log=True),
        ),
        supports_check_mode=True,
        # A URL may carry user:password@: the invocation is not written to the target's journal.
        no_log=True,
    )
    for name in ('router_url', 'url', 'drain_url'):
        module.no_log_values.update(url_passwords(module.params[name]))
    if not module.params['interval'] > 0:   # NaN too
        module.fail_json(msg='interval must be positive, not %s' % module.params['interval'])
    try:
        result = RouterWorker(module).run()
    except RouterError as exc:
        module.fail_json(msg=to_native(exc), router_url=module.params['router_url'], url=module.params['url'])
    module.exit_json(**result)


if __name__ == '__main__':
    main()
