#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: host_lock
short_description: One run per host at a time - take or give back the host's lock of inferops.sglang
version_added: 0.1.0
description:
  - Two runs of the collection's playbooks on one host at the same time would both cut over, and the known-good
    store and the deployment record would end up describing a configuration that is not the one running. The
    playbooks take this lock on each host before they read or change it and give it back at the end of the host's
    run, on success and on failure alike.
  - O(state=present) takes the lock for O(run_id) - an C(fcntl.flock) on O(path), held by a small detached process
    (its own session) that ends by itself after O(timeout) seconds, so a crashed or unreachable controller frees the
    host at the latest then. The lock file holds the owner record (run id, controller, playbook, holder pid, start).
  - When another run holds the lock, the module polls every second for up to O(wait) seconds and then fails, naming
    the holder - its run id, controller, playbook, since when, and the holder's pid.
  - A lock whose holder has ended without giving it back (a crash, a kill, a reboot, or a run longer than
    O(timeout)) is free, since the kernel drops an C(flock) with its last holder; the module takes it over and
    returns the stale record in RV(stale).
  - When the lock is this run's already, O(state=present) changes nothing.
  - O(state=absent) ends the holder and clears the owner record, only when the record is O(run_id)'s and the process
    is that run's holder (by its command line in C(/proc)); another run's lock is left alone.
author:
  - inferops.sglang developers (@inferops)
options:
  state:
    description: Take the lock (V(present)) or give it back (V(absent)).
    type: str
    choices: [present, absent]
    default: present
  run_id:
    description:
      - The run the lock is taken for or given back by; unique per run (the playbooks use the fleet plan's run id and
        a random suffix, since two runs may start within the same second).
    type: str
    required: true
  controller:
    description: Who runs it, C(user@host) of the controller; recorded for the failure message of another run.
    type: str
    default: ''
  playbook:
    description: The playbook that runs (for example C(inferops.sglang.site)); recorded likewise.
    type: str
    default: ''
  wait:
    description:
      - Seconds to wait for another run's lock before failing; V(0) fails at once.
    type: int
    default: 0
  timeout:
    description:
      - The lock's maximum lifetime in seconds - the holder ends by itself then, so that a controller that crashed
        frees the host. Longer than the longest run on one host (facts, pre-flight, cutover with its gate and a
        rollback).
    type: int
    default: 7200
  path:
    description:
      - The lock file on the host; its directory is created when missing. It is created with mode 0600 (another user
        who could open it could C(flock) it and stop every run), a file of looser mode is made 0600, and a symbolic
        link or a file that another user made (C(/run/lock) is writable by every local user) fails the task.
    type: path
    default: /run/lock/inferops-sglang.lock
extends_documentation_fragment:
  - inferops.sglang._attributes
attributes:
  check_mode:
    support: full
    details:
      - Takes no lock; says whether it would be taken, or which run holds it.
  diff_mode:
    support: full
  platform:
    platforms: posix
    details:
      - Linux; the holder is found through C(/proc).
notes:
  - The holder is a Python process of the interpreter the module ran with
    (C(python -c ... inferops-sglang-host-lock RUN_ID TIMEOUT)); it holds no file other than the lock file and reads
    nothing.
  - Where systemd-logind kills the processes of an ended login session (C(KillUserProcesses=yes)), the lock ends with
    the SSH session; every run still takes it first.
'''

EXAMPLES = r'''
- name: Take the lock of this host (wait up to 10 minutes for another run)
  inferops.sglang.host_lock:
    run_id: 20261204T130000Z-5f3a9c21
    controller: ops@bastion
    playbook: inferops.sglang.site
    wait: 600

- name: Give it back
  inferops.sglang.host_lock:
    state: absent
    run_id: 20261204T130000Z-5f3a9c21
'''

RETURN = r'''
lock:
  description:
    - The owner record of the lock - C(run_id), C(controller), C(playbook), C(holder_pid), C(started) (UTC, ISO 8601),
      C(started_ts) and C(expires_ts) (epoch seconds); for O(state=absent) the record that was given back; empty when
      there was none.
  returned: always
  type: dict
  sample: {run_id: 20261204T130000Z-5f3a9c21, controller: ops@bastion, playbook: inferops.sglang.site,
           holder_pid: 41234, started: "2026-12-04T13:00:02Z", started_ts: 1796389202.1, expires_ts: 1796396402.1}
stale:
  description:
    - The record of a run that ended without giving the lock back, taken over now, with C(reason) - C(expired) (it
      outlived its O(timeout)) or C(holder gone) (a crash, a kill, a reboot); null when there was none.
  returned: state is present
  type: dict
waited:
  description: Seconds spent waiting for another run's lock.
  returned: state is present
  type: float
msg:
  description: What was done, in words.
  returned: always
  type: str
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inferops.sglang.plugins.module_utils import _host_lock


def argument_spec():
    return dict(state=dict(type='str', choices=['present', 'absent'], default='present'), **_host_lock.lock_options())


def _diff(before, after):
    return {'before': before + '\n', 'after': after + '\n'}


def _present(module, params):
    out = _host_lock.take_or_fail(module, params)
    if out['diff'] is None:
        out.pop('diff')
    module.exit_json(**out)


def _absent(module, params):
    if module.check_mode:
        state = _host_lock.peek(params['path'])
        ours = state['owner'].get('run_id') == params['run_id']
        module.exit_json(changed=ours, lock=state['owner'] if ours else {},
                         msg='Would give the lock back.' if ours else 'This run holds no lock here.')
    result = _host_lock.release(params['path'], params['run_id'])
    owner = result['owner']
    if result['result'] == 'other':
        module.exit_json(changed=False, lock={}, msg='The lock is held by %s, not by this run: left alone.'
                         % _host_lock.describe_owner(owner, _host_lock.time.time()))
    if result['result'] == 'not_held':
        module.exit_json(changed=False, lock={}, msg='This run holds no lock here.')
    if result['result'] == 'expired':
        module.warn(_host_lock.expired_warning(params['run_id'], owner))
    module.exit_json(changed=True, lock=owner, msg='Gave the lock back.' if result['result'] == 'released'
                     else 'Cleared the record of an ended lock.',
                     diff=_diff('locked by run %s' % params['run_id'], 'unlocked'))


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    params = module.params
    if params['wait'] < 0 or params['timeout'] <= 0:
        module.fail_json(msg='wait must be 0 or more and timeout more than 0 seconds (got wait=%s, timeout=%s)'
                         % (params['wait'], params['timeout']))
    try:
        if params['state'] == 'present':
            _present(module, params)
        else:
            _absent(module, params)
    except (IOError, OSError) as exc:
        module.fail_json(msg='The lock %s could not be %s (%s): run as root (become).'
                         % (params['path'], 'taken' if params['state'] == 'present' else 'given back', exc))


if __name__ == '__main__':
    main()
