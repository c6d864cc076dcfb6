#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: server_process
short_description: Stop stray (hand-started) SGLang inference servers and wait until their GPUs and port are free
version_added: 0.1.0
description:
  - Finds SGLang servers exactly as M(inferops.sglang.server_process_info) does (same options, same rules; read
    its description for what is and is not a server, orphans, GPU holders and secret redaction), and stops the
    B(stray) ones - those run neither by O(unit) nor by the collection's supervisord. Managed servers, unrelated GPU holders, clients, the
    sglang-router, PID 1 and this module's own process tree are never signalled.
  - Only a process proven to be an SGLang server is stopped - its C(/proc/<pid>/exe) is a Python interpreter (a
    C(sleep) titled C(sglang::scheduler_TP0) or a shell whose argv[0] reads like SGLang's is left alone), and an
    orphaned worker also holds a GPU, the server's port or its former tree's interpreter. A process whose
    executable cannot be read is RV(unproven) and never stopped. SGLang processes of other containers (another
    PID namespace, another container's cgroup) are RV(foreign) and never stopped.
  - B(Stopping) - SIGTERM to the main process of every stray server and to the top process of every orphaned
    subtree (which no surviving parent would stop); SGLang drains in-flight requests and stops its children.
    Then it waits up to O(grace_period) seconds for B(all) member processes to exit, sends SIGKILL to every
    member still there (orphans and processes that ignore SIGTERM included) and waits up to O(kill_timeout)
    seconds for them to be gone (a zombie counts as gone). When every main process is already gone by the
    time of the stop, each remaining member gets a SIGTERM of its own first.
  - B(Identity) - a process is signalled only if its start time (C(/proc/<pid>/stat) field 22) is the one seen
    by the scan, so a pid reused by another process in the meantime is never hit. Where the kernel and Python
    allow it (Linux 5.3, Python 3.9), the process is pinned with a pidfd before the check and signalled
    through it, which closes the last race window.
  - B(Release) - with O(wait_gpu_release), waits until C(nvidia-smi --query-compute-apps=pid,used_gpu_memory,gpu_uuid
    --format=csv,noheader,nounits) lists none of the stopped pids and every GPU of C(nvidia-smi
    --query-gpu=index,memory.used,uuid --format=csv,noheader,nounits) uses less than O(gpu_memory_threshold_mib), not
    counting the memory of the processes left alone on it (a managed server keeps its GPU memory).
    Without C(nvidia-smi), it waits until no process holds a file matching O(gpu_device_glob), apart from
    those that already held one before the stop and were left alone. With O(wait_port_free), it then waits
    until each stopped server's port can be bound on its host. O(release_timeout) bounds each wait.
  - After the stop it scans again. SGLang's shutdown can orphan a worker it was just spawning; such orphans
    are stopped too (at most two more rounds). A stray server seen again - restarted by a shell loop or a
    supervisor that is its parent - is a failure that names the parent; so is one seen by a last scan
    after the release waits.
  - B(Stuck processes) - a process still there O(kill_timeout) seconds after SIGKILL is stuck in a kernel call
    (typically the GPU driver, state C(D) in C(/proc/<pid>/stat)); the task fails and lists it in RV(stuck). When
    such a process holds a file matching O(gpu_device_glob), RV(reboot_required) is true and the message starts
    with the words a process stuck in the driver holds the GPUs, and says that a reboot is needed (nothing can use
    those GPUs until then).
  - B(Contract) - check mode reports exactly what would be stopped (RV(target_pids)) and changes nothing;
    diff mode shows the stray processes before and after, one line per process (C(<pid> [<role>] <title>));
    C(changed) is true only when a signal was delivered (in check mode - when one would be); a second run
    finds nothing and reports C(changed=false); every failure (a timeout, a process that could not be
    signalled) is a task failure whose message names what still holds the GPU or the port.
  - Facts about SGLang used here come from sgl-project/sglang 0.5.23 (see
    M(inferops.sglang.server_process_info)); its C(python/sglang/cli/killall.py) waits for GPU memory the same
    way, through C(nvidia-smi --query-gpu) and C(--query-compute-apps).
author:
  - inferops.sglang developers (@inferops)
options:
  state:
    description:
      - C(absent) stops the stray servers. It is the only state.
    type: str
    choices: [absent]
    default: absent
  grace_period:
    description:
      - Seconds to wait after SIGTERM for all the processes to exit before SIGKILL.
      - SGLang drains in-flight requests on SIGTERM; give it the time a long request takes.
    type: float
    default: 60
  kill_timeout:
    description:
      - Seconds to wait after SIGKILL for the processes to be gone. A process still there is stuck in the
        kernel (a driver call) and makes the task fail (see RV(stuck) and RV(reboot_required)).
    type: float
    default: 30
  wait_gpu_release:
    description:
      - After the processes are gone, wait until the GPUs are released (see the description).
    type: bool
    default: true
  release_timeout:
    description:
      - Seconds to wait until the stopped tree's GPUs and port are free. It bounds the GPU release wait
        (O(wait_gpu_release)) and then, again, the port wait (O(wait_port_free)).
      - The driver frees the memory of a large model some seconds after its process ended.
    type: float
    default: 120
  gpu_memory_threshold_mib:
    description:
      - A GPU counts as released when its C(memory.used), less the memory of the compute processes C(nvidia-smi)
        lists on it that were not stopped (a managed server on the same GPU, another job), is below this many MiB
        (the driver keeps some memory in use).
      - It applies to every GPU C(nvidia-smi) lists. Where C(nvidia-smi) cannot list processes (some containers
        show C([N/A]) or no processes), nothing is subtracted; raise it, or turn O(wait_gpu_release) off, on such
        a host when other jobs use its GPUs.
    type: int
    default: 1024
  nvidia_smi:
    description:
      - Name or path of C(nvidia-smi), looked up in E(PATH) and the C(sbin) directories.
      - Optional. When it is not found, GPU release means that no process is left holding a file matching
        O(gpu_device_glob) (apart from those left alone on purpose), and a warning says so when a value other
        than the default was given.
    type: str
    default: nvidia-smi
  wait_port_free:
    description:
      - After the GPUs are released, wait until the port of every stopped server can be bound on its host
        (C(SO_REUSEADDR), as the server binds it).
    type: bool
    default: true
extends_documentation_fragment:
  - inferops.sglang._server_process
  - inferops.sglang._attributes
  - inferops.sglang._attributes.platform_linux_proc
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
notes:
  - Run it as root (C(become)); a process of another user cannot be signalled otherwise, and that is a failure.
  - Discovery takes a fraction of a second even with thousands of processes; the stop itself takes as long as
    the servers need to drain, at most O(grace_period) plus O(kill_timeout), plus the release waits.
seealso:
  - module: inferops.sglang.server_process_info
'''

EXAMPLES = r'''
- name: Stop the hand-started SGLang server before its systemd unit starts
  become: true
  inferops.sglang.server_process:
    state: absent
    unit: sglang.service
    port: 30000
  register: stray_stop

- name: Show how each process ended
  ansible.builtin.debug:
    msg: "{{ stray_stop.stopped | map(attribute='signal') | list }}"

- name: What would be stopped (check mode, with the process list as a diff)
  become: true
  inferops.sglang.server_process:
    state: absent
  check_mode: true
  diff: true

- name: A host whose other GPUs run unrelated jobs - do not wait for all GPUs to be empty
  become: true
  inferops.sglang.server_process:
    state: absent
    grace_period: 120
    gpu_memory_threshold_mib: 8192
'''

RETURN = r'''
msg:
  description: What was done (or would be done in check mode).
  returned: always
  type: str
  sample: "stopped 1 stray SGLang server(s), 5 process(es): 4242, 4301, 4302, 4303, 4304"
strays:
  description:
    - The stray servers found before stopping, in the shape of RV(inferops.sglang.server_process_info#module:servers)
      (main_pid, pids, members, argv, executable, module, args, env, cwd, user, uid, host, port, tp, dp, pp,
      cgroup, managed, managed_by, orphaned, gpu_devices, start_time, uptime_seconds, ppid, parent, redacted_args,
      redacted_env; secrets redacted).
  returned: always
  type: list
  elements: dict
  sample: []
managed:
  description: The managed servers found, left alone (same shape as RV(strays)).
  returned: always
  type: list
  elements: dict
  sample: []
target_pids:
  description: Every pid stopped, or that would be stopped in check mode, sorted.
  returned: always
  type: list
  elements: int
  sample: [4242, 4301, 4302, 4303, 4304]
stopped:
  description: How each target ended. Empty in check mode.
  returned: always
  type: list
  elements: dict
  contains:
    pid:
      description: Process id.
      type: int
    main_pid:
      description: Main pid of its server.
      type: int
    role:
      description: Its role (see RV(inferops.sglang.server_process_info#module:servers[].members[].role)).
      type: str
    signal:
      description:
        - C(SIGTERM) when it exited during the grace period (its own SIGTERM or its server's shutdown),
          C(SIGKILL) when SIGKILL ended it, C(already gone) when it had exited before any signal was sent.
      type: str
      sample: SIGTERM
    seconds:
      description: Seconds from the first SIGTERM until it was seen gone (polled every 50 ms).
      type: float
      sample: 1.35
  sample: [{"pid": 4242, "main_pid": 4242, "role": "server", "signal": "SIGTERM", "seconds": 1.35}]
gpu_holders_unrelated:
  description: GPU device holders with no relation to a stray server; never stopped (see server_process_info).
  returned: always
  type: list
  elements: dict
  sample: []
ignored:
  description: Processes mentioning SGLang that are deliberately not stopped, with the reason.
  returned: always
  type: list
  elements: dict
  sample: [{"pid": 900, "title": "sglang::router", "reason": "sglang-router load balancer (sglang::router), never a server"}]
unproven:
  description: SGLang-looking processes whose C(/proc/<pid>/exe) cannot be read (C(pid), C(title), C(reason)), as
    M(inferops.sglang.server_process_info) returns them; never stopped.
  returned: always
  type: list
  elements: dict
foreign:
  description: SGLang servers and workers of other containers, as M(inferops.sglang.server_process_info) returns
    them (C(pid), C(pids), C(port), C(holds_port), C(container_id), C(runtime), C(gpus), ...); never stopped.
  returned: always
  type: list
  elements: dict
gpu_release:
  description: The GPU release wait.
  returned: always
  type: dict
  contains:
    waited:
      description: Whether it waited (false in check mode, with nothing to stop, or O(wait_gpu_release=false)).
      type: bool
    method:
      description: C(nvidia-smi), C(device-files) (no nvidia-smi), or null.
      type: str
    seconds:
      description: Seconds waited.
      type: float
    gpus:
      description: Last C(nvidia-smi) reading per GPU, as C(index) and C(memory_used_mib).
      type: list
      elements: dict
    compute_apps:
      description: Last C(nvidia-smi) compute processes, as C(pid) and C(used_memory_mib).
      type: list
      elements: dict
    holders:
      description: With C(device-files), the processes still holding a device at the last check (C(pid),
        C(gpu_devices)).
      type: list
      elements: dict
    memory_figures:
      description: With C(nvidia-smi), whether it gave a C(memory.used) figure for any GPU; when not (C([N/A]) in
        some containers and vGPU guests) the wait followed only the stopped pids and a warning says so. Null
        otherwise.
      type: bool
  sample: {"waited": true, "method": "nvidia-smi", "seconds": 2.1, "gpus": [{"index": 0, "memory_used_mib": 0}],
           "compute_apps": [], "holders": [], "memory_figures": true}
stuck:
  description:
    - The processes SIGKILL could not end (still there O(kill_timeout) seconds after it), read after that wait;
      empty otherwise. The task fails when there is one.
  returned: always
  type: list
  elements: dict
  contains:
    pid:
      description: Process id.
      type: int
    state:
      description: Its state, C(/proc/<pid>/stat) field 3 (C(D) - uninterruptible sleep in a kernel call).
      type: str
    title:
      description: Its command line, secrets redacted, at most 160 characters.
      type: str
    devices:
      description: The files matching O(gpu_device_glob) it holds open, sorted.
      type: list
      elements: str
  sample: [{"pid": 4302, "state": "D", "title": "sglang::scheduler_TP0", "devices": ["/dev/nvidia0", "/dev/nvidiactl"]}]
reboot_required:
  description:
    - True when a process in RV(stuck) holds GPU devices; only a reboot frees them (the role inferops.sglang.cutover
      then starts nothing on them).
  returned: always
  type: bool
  sample: false
port_release:
  description: The port wait.
  returned: always
  type: dict
  contains:
    waited:
      description: Whether it waited.
      type: bool
    seconds:
      description: Seconds waited.
      type: float
    endpoints:
      description: The C(host) and C(port) of each stopped server.
      type: list
      elements: dict
  sample: {"waited": true, "seconds": 0.0, "endpoints": [{"host": "127.0.0.1", "port": 30000}]}
'''

import traceback

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inferops.sglang.plugins.module_utils._server_process.module import (
    NON_NEGATIVE_OPTIONS,
    NVIDIA_SMI_DEFAULT,
    ModuleFailure,
    absent,
    stop_argument_spec,
)


def argument_spec():
    return stop_argument_spec()


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    params = module.params
    for name in NON_NEGATIVE_OPTIONS:
        if params[name] < 0:
            module.fail_json(msg='%s must not be negative (got %s)' % (name, params[name]))

    nvidia_smi = None
    if params['wait_gpu_release'] and not module.check_mode:
        nvidia_smi = module.get_bin_path(params['nvidia_smi'])
        if nvidia_smi is None and params['nvidia_smi'] != NVIDIA_SMI_DEFAULT:
            module.warn('nvidia_smi=%s not found; GPU release is judged from open device files (%s)'
                        % (params['nvidia_smi'], params['gpu_device_glob']))

    def run_command(argv):
        return module.run_command(argv, environ_update={'LANG': 'C', 'LC_ALL': 'C'})

    try:
        result = absent(params, run_command=run_command, nvidia_smi=nvidia_smi, check_mode=module.check_mode,
                        want_diff=module._diff)
    except ModuleFailure as failure:
        partial = dict(failure.result)
        partial.pop('msg', None)   # the partial result's own msg ('' until the end) gives way to the failure's
        module.fail_json(msg=failure.msg, **partial)
    except Exception as exc:  # every failure goes through fail_json, never a traceback to the user
        module.fail_json(msg='stopping stray SGLang servers failed: %s' % exc, exception=traceback.format_exc())
    module.exit_json(**result)


if __name__ == '__main__':
    main()
