#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: server_process_info
short_description: Find SGLang inference server processes and tell stray from managed
version_added: 0.1.0
description:
  - Reads C(/proc) (no psutil) and returns every SGLang server on the host, one entry per server with all
    of its processes, split into RV(strays) (hand-started, not run by O(unit)) and RV(managed).
  - Read-only. It reports exactly what M(inferops.sglang.server_process) with the same options would stop.
  - B(Server main processes) are matched by parsing their argv the way the Python interpreter does, not by
    a substring; C(python -m sglang.launch_server ...), C(sglang serve ...) (the console script, argv
    C(/venv/bin/python3 /venv/bin/sglang serve ...)), C(python .../sglang/launch_server.py ...). A
    C(python -m sglang.srt.*) or C(python -m sglang.data_parallel*) module counts only when it runs an
    engine (it has C(sglang::) titled descendants); the other C(sglang.srt) modules are tools.
  - B(Never) a server - C(python -m sglang.bench_*) (benchmark clients; the server that
    C(sglang.bench_one_batch_server) launches is matched by its own argv), C(python -m sglang.test.*),
    the sglang-router (title C(sglang::router), C(python -m sglang_router.*)), the PD load balancers
    C(sglang.srt.disaggregation.launch_lb)/C(mini_lb), C(grep)/C(tail -f)/editors/C(pip install sglang)
    and any process that only mentions sglang in its arguments, C(python -c ...) programs, and shell
    wrappers (C(bash -c "python -m sglang.launch_server ...")); a wrapper is not the server, its server
    child is, and the wrapper ends by itself when its child does. This module's own process, its
    ancestors and descendants are never reported as servers.
  - B(Proof of identity) - a title or an argv[0] is free text (C(exec -a sglang::scheduler_TP0 sleep 1000), a
    C(bash) whose argv[0] reads C(/usr/bin/python3 -m sglang.launch_server)), so a main process or an orphan
    counts only when its C(/proc/<pid>/exe) (the real file, symlinks resolved by the kernel) is a Python
    interpreter - a file name such as C(python), C(python3), C(python3.12), C(python3.12d) (the C(sglang)
    console script runs under its interpreter too). Another executable is listed in RV(ignored) with the reason.
    Where root may not read another user's C(/proc/<pid>/exe) (no C(CAP_SYS_PTRACE), a docker container's
    default), a child process that takes that user's uid and gid reads it. Where even that fails (no C(CAP_SETUID),
    ids that differ), the process is B(unproven) - listed in RV(unproven) with the reason, never stopped.
  - B(Foreign) - a process in another PID namespace than this module's (C(/proc/<pid>/ns/pid)), or whose cgroup
    names another container than this module's own (docker C(/docker/<id>) or C(docker-<id>.scope), containerd
    C(cri-containerd-<id>.scope), CRI-O C(crio-<id>.scope), podman C(libpod-<id>), kubelet C(/kubepods...)), is
    never a stray and never managed, whatever runs in it (even a unit named O(unit) inside that container) - each
    SGLang server (or orphaned worker) of another container is listed in RV(foreign) with its container, its
    port and the GPUs it holds, and nothing stops it. Its GPU-holding processes never join a server of this host.
  - B(Members) of a server are the main process and all its descendants whatever their titles
    (C(sglang::scheduler_TP0), C(sglang::detokenizer), spawn children not yet retitled, the
    multiprocessing resource tracker), except a C(sglang::router).
  - B(Orphans) are processes still titled C(sglang::*) or C(sgl_diffusion::*) (not the router) that no
    server claims and that were re-parented (their parent is PID 1, or a subreaper - a spawn child keeps
    its launcher's process group, a subreaper has its own) - for example the data-parallel schedulers left
    behind when the launcher and its controller were killed. A title and a Python interpreter are not enough for an
    orphan - it also needs evidence - it holds a GPU device file (O(gpu_device_glob)) or a socket listening on the
    server's port (O(port), or the port of the live server it joins), or it runs the same interpreter as its former
    tree (the live server it joins, or an orphan of its process group with evidence); one without is listed in
    RV(ignored) and left alone. Orphans of one process group
    form one group; it is attached to a live server sharing a GPU device with it, else its process group,
    else its (specific) cgroup, when exactly one server qualifies; otherwise it is its own server entry
    with RV(servers[].orphaned=true) and RV(servers[].main_pid) its lowest pid. A C(sglang::) process whose
    live parent shares its process group and is not a server (the in-process engine of a benchmark client,
    say) is left alone and listed in RV(ignored).
  - B(GPU holders) (O(include_gpu_holders)) are found by reading the C(/proc/<pid>/fd) links of every
    process against O(gpu_device_glob) - for example a child of a stray server that is not titled
    C(sglang::) but holds a GPU. A holder outside every server joins a B(stray)
    server when it shares the server's cgroup (not a shared one such as the root cgroup, a slice,
    C(init.scope) or a login C(session-N.scope)) or its process group (one led by a server member, or
    whose leader is gone). A holder inside a client's or the router's process tree never joins. Any other
    holder is reported in RV(gpu_holders_unrelated) and never stopped.
  - B(Listeners) - with O(port), RV(listeners) lists every process listening on that TCP port in this network
    namespace, with the server it belongs to, so that a program that is not SGLang listening on the port is
    found before a server is started there.
  - B(Managed) means run by a service manager this collection installs. B(systemd) - some process of the server
    runs in O(unit)'s cgroup, read from C(/proc/<pid>/cgroup) (the unified C(0::) line or the cgroup v1
    C(name=systemd) line, where the unit is one component of the path, also behind a container prefix such as
    C(/docker/<id>/system.slice/sglang.service)). B(supervisord) (the fallback where PID 1 is not systemd, with
    no option to set) - walking up the parent chain of a process of the server, the first process named
    C(supervisord) (its command name, C(argv[0]) or the C(argv[1]) of a Python entry point) is the parent of a
    process whose environment (C(/proc/<pid>/environ)) has C(SUPERVISOR_ENABLED=1) and
    C(SUPERVISOR_SERVER_URL=unix:///run/inferops-sglang-supervisor.sock) - supervisord gives every program it
    starts the URL of its own socket, and that socket is the collection's (role inferops.sglang.service). A worker
    re-parented to PID 1 is judged by the leader of its process group, as supervisord makes every program the
    leader of its own process group; workers of a program instance that is gone are strays. Another supervisord,
    or a copied environment without a supervisord parent, does not make a server managed.
  - B(Secrets never reach the output). In RV(servers[].env) the values of variables whose name matches
    C(KEY), C(TOKEN), C(SECRET), C(PASSWORD) or C(CREDENTIAL) (any case) are replaced by C(********); in
    every argv the value of a secret flag is replaced too - the credentials of SGLang and the sglang-router
    (C(--api-key), C(--admin-api-key), C(--ssl-keyfile-password), C(--control-plane-api-keys),
    C(--oracle-password), C(--postgres-db-url), C(--redis-url), an inline JSON C(--watermark-config)),
    abbreviations of them argparse would accept (C(--api-k)), and any flag with one of the words key, token,
    secret, password, passwd, credential(s) in its name (C(--hf-token=...)) except SGLang flags such as
    C(--ssl-keyfile) and C(--speculative-token-map). The same rule is the P(inferops.sglang.secret_flags#filter)
    filter. The names hidden are listed in RV(servers[].redacted_env) and RV(servers[].redacted_args).
  - Facts about SGLang used here come from sgl-project/sglang 0.5.23 - C(python/sglang/launch_server.py),
    C(python/sglang/cli/main.py) and C(cli/serve.py) (C(sglang serve)),
    C(python/sglang/srt/managers/scheduler.py), C(detokenizer_manager.py),
    C(data_parallel_controller.py) and C(multi_tokenizer_mixin.py) (process titles),
    C(python/sglang/srt/arg_groups/fields/serving.py) and C(parallel.py) (flags and defaults),
    C(scripts/killall_sglang.sh) and C(python/sglang/cli/killall.py) (SGLang's own, much broader, match).
author:
  - inferops.sglang developers (@inferops)
options: {}
extends_documentation_fragment:
  - inferops.sglang._server_process
  - inferops.sglang._attributes
  - inferops.sglang._attributes.info_module
  - inferops.sglang._attributes.platform_linux_proc
notes:
  - Run it as root (C(become)) - without it the environment, cwd, cgroup and open files of other users'
    processes cannot be read, so managed servers may be missed and GPU holders are not seen.
  - A scan reads C(/proc/<pid>/stat) and C(/proc/<pid>/cmdline) of every process, and the open files of
    every process when O(include_gpu_holders) or O(port) is set; on a host with 5000 processes that takes
    a fraction of a second (C(benchmarks/bench_discovery.py)).
  - Processes that exit during the scan are skipped; nothing is locked.
seealso:
  - module: inferops.sglang.server_process
'''

EXAMPLES = r'''
- name: Find SGLang servers
  become: true
  inferops.sglang.server_process_info:
  register: sglang_procs

- name: Stop here if a hand-started server is found
  ansible.builtin.assert:
    that: sglang_procs.strays | length == 0
    fail_msg: >-
      Stray SGLang server(s): {{ sglang_procs.strays | map(attribute='main_pid') | list }}

- name: The command line of the hand-started server on port 30000, to turn into a unit
  become: true
  inferops.sglang.server_process_info:
    port: 30000
    unit: sglang.service
  register: hand_started

- name: Pre-flight - a program that is not SGLang must not listen on the port
  ansible.builtin.assert:
    that: hand_started.listeners | selectattr('server_main_pid', 'none') | list | length == 0
    fail_msg: >-
      Port 30000 is held by {{ hand_started.listeners | selectattr('server_main_pid', 'none')
      | map(attribute='title') | list }}, which is not an SGLang server.
'''

RETURN = r'''
servers:
  description:
    - Every SGLang server found (managed and stray), one entry per server, sorted by RV(servers[].main_pid).
  returned: always
  type: list
  elements: dict
  contains:
    main_pid:
      description: The server's main process (the launcher); for an orphaned entry, its lowest pid.
      type: int
      sample: 4242
    pids:
      description: All pids of the server, sorted.
      type: list
      elements: int
      sample: [4242, 4301, 4302, 4303, 4304]
    members:
      description: One entry per process.
      type: list
      elements: dict
      contains:
        pid:
          description: Process id.
          type: int
        ppid:
          description: Parent process id.
          type: int
        role:
          description:
            - C(server) (the main process), the role from an C(sglang::) title (C(scheduler),
              C(detokenizer), C(data_parallel_controller), C(tokenizer_worker), ...), C(spawn_child) (a
              multiprocessing spawn child not retitled yet), C(resource_tracker), C(forkserver),
              C(gpu_holder) (a related GPU holder outside the tree) or C(child).
          type: str
        title:
          description: The process title (argv joined by spaces; for a retitled process its title).
          type: str
        argv:
          description: The command line, secrets redacted.
          type: list
          elements: str
        attached:
          description: How a process outside the main process's tree was attached (C(orphan (same GPU
            device)), C(GPU holder (same cgroup)), ...), else null.
          type: str
    argv:
      description: Command line of the main process, secrets redacted.
      type: list
      elements: str
      sample: ["/root/ml-env/bin/python3", "-m", "sglang.launch_server", "--model-path", "/models/m", "--tp", "8"]
    executable:
      description:
        - Absolute path of the interpreter as started - argv[0] when absolute, else resolved through the
          process's own E(PATH), else the C(/proc/<pid>/exe) target. A venv's python is B(not) resolved to
          the system python it links to.
      type: str
      sample: /root/ml-env/bin/python3
    module:
      description: C(sglang.launch_server), C(sglang serve), the C(sglang.srt...) module, or null (orphaned).
      type: str
      sample: sglang.launch_server
    args:
      description: The server's own arguments (after the module or C(serve)), secrets redacted.
      type: list
      elements: str
      sample: ["--model-path", "/models/m", "--tp", "8"]
    env:
      description: Environment of the main process; secret values replaced by C(********).
      type: dict
      sample: {"CUDA_HOME": "/usr/local/cuda-13.0", "HF_TOKEN": "********"}
    env_readable:
      description: Whether C(/proc/<pid>/environ) of the main process could be read. Root without
        C(CAP_SYS_PTRACE) (a docker container's default) cannot read another user's; RV(servers[].env) is then
        empty, which is not the server's environment.
      type: bool
      sample: true
    redacted_env:
      description: Names of the variables whose values were hidden.
      type: list
      elements: str
      sample: ["HF_TOKEN"]
    redacted_args:
      description: Flags whose values were hidden in RV(servers[].argv), RV(servers[].args) and member argv.
      type: list
      elements: str
      sample: ["--api-key"]
    cwd:
      description: Working directory of the main process (null when it cannot be read).
      type: str
    user:
      description: User name of the main process's real uid.
      type: str
      sample: root
    uid:
      description: Real uid of the main process.
      type: int
      sample: 0
    host:
      description: The C(--host) the server binds (SGLang's default C(127.0.0.1)); null for an orphaned entry.
      type: str
      sample: 127.0.0.1
    port:
      description: The C(--port) (default 30000); null for an orphaned entry or a value that does not parse.
      type: int
      sample: 30000
    tp:
      description: Tensor parallel size (C(--tp-size), C(--tensor-parallel-size), C(--tp); default 1).
      type: int
      sample: 8
    dp:
      description: Data parallel size (C(--dp-size), C(--data-parallel-size), C(--dp); default 1).
      type: int
      sample: 1
    pp:
      description: Pipeline parallel size (C(--pp-size), C(--pipeline-parallel-size), C(--pp); default 1).
      type: int
      sample: 1
    cgroup:
      description: The cgroup of the main process (the C(name=systemd) v1 path or the unified v2 path,
        whichever is more specific).
      type: str
      sample: /user.slice/user-0.slice/session-3.scope
    managed:
      description: Whether this server is run by O(unit) or by the collection's supervisord (see the description).
      type: bool
    managed_by:
      description: What manages this server, or null for a stray.
      type: dict
      contains:
        manager:
          description: C(systemd) (a process in O(unit)'s cgroup) or C(supervisord) (the collection's supervisord).
          type: str
        unit:
          description: With C(systemd), the unit (O(unit) with its C(.service) suffix); else null.
          type: str
        supervisord_pid:
          description: With C(supervisord), the pid of the supervisord process; else null.
          type: int
        program:
          description: With C(supervisord), the program name (C(SUPERVISOR_PROCESS_NAME)); else null.
          type: str
      sample: {"manager": "supervisord", "unit": null, "supervisord_pid": 812, "program": "sglang"}
    orphaned:
      description: Whether this entry is a group of orphans whose launcher is gone.
      type: bool
    gpu_devices:
      description: Device files matching O(gpu_device_glob) that its processes hold open, sorted.
      type: list
      elements: str
      sample: ["/dev/nvidia-uvm", "/dev/nvidia0", "/dev/nvidia1", "/dev/nvidiactl"]
    start_time:
      description: When the main process started, in seconds since the epoch (C(/proc/<pid>/stat) starttime
        plus the boot time).
      type: float
      sample: 1764478800.12
    uptime_seconds:
      description: Seconds since the main process started.
      type: float
      sample: 3600.5
    ppid:
      description: Parent pid of the main process.
      type: int
    parent:
      description: The parent of the main process (a shell wrapper, a restart loop, ...) as C(pid) and
        C(title), or null when it is PID 1 or gone.
      type: dict
  sample: []
strays:
  description: The entries of RV(servers) that are not managed (what M(inferops.sglang.server_process) stops).
  returned: always
  type: list
  elements: dict
  sample: []
managed:
  description: The entries of RV(servers) run by O(unit) or by the collection's supervisord.
  returned: always
  type: list
  elements: dict
  sample: []
gpu_holders_unrelated:
  description:
    - Processes holding a device file matching O(gpu_device_glob) with no relation to a stray server (and not
      in O(unit)); never stopped. Empty unless O(include_gpu_holders).
  returned: always
  type: list
  elements: dict
  contains:
    pid:
      description: Process id.
      type: int
    ppid:
      description: Parent process id.
      type: int
    title:
      description: Title or argv joined, secrets redacted.
      type: str
    argv:
      description: Command line, secrets redacted.
      type: list
      elements: str
    uid:
      description: Real uid.
      type: int
    user:
      description: User name.
      type: str
    cgroup:
      description: Its cgroup.
      type: str
    gpu_devices:
      description: The matching device files it holds.
      type: list
      elements: str
  sample: []
ignored:
  description:
    - Processes that mention SGLang but are deliberately not servers, with the reason (clients, the router,
      shell wrappers, grep, this module's own process tree, excluded pids, servers on another O(port), ...).
  returned: always
  type: list
  elements: dict
  contains:
    pid:
      description: Process id.
      type: int
    title:
      description: Title or argv joined, secrets redacted.
      type: str
    reason:
      description: Why it is left alone.
      type: str
  sample: [{"pid": 812, "title": "python3 -m sglang.bench_serving --port 30000", "reason": "SGLang client (python -m sglang.bench_serving), never a server"}]
unproven:
  description:
    - SGLang-looking processes (a server's argv, or an C(sglang::) title) whose C(/proc/<pid>/exe) cannot be read, so
      that they cannot be shown to be a Python interpreter running SGLang; never stopped. Stop them as their user,
      or run with C(CAP_SYS_PTRACE).
  returned: always
  type: list
  elements: dict
  contains:
    pid:
      description: Process id.
      type: int
    title:
      description: Title or argv joined, secrets redacted.
      type: str
    reason:
      description: Why it is unproven (the errno of the read, C(EACCES) for a missing C(CAP_SYS_PTRACE)).
      type: str
foreign:
  description:
    - SGLang servers and orphaned SGLang workers of other containers (see B(Foreign) above), one entry per server
      (its topmost SGLang process and that process's descendants) or per orphaned worker. Never strays, never
      managed, never stopped.
  returned: always
  type: list
  elements: dict
  contains:
    pid:
      description: The process as this host numbers it (the server's main process, or the worker).
      type: int
    pids:
      description: The pid and its descendants, sorted.
      type: list
      elements: int
    title:
      description: Title or argv joined, secrets redacted.
      type: str
    argv:
      description: The command line, secrets redacted.
      type: list
      elements: str
    port:
      description: The port its command line names (C(--port), SGLang's default 30000); null for a worker.
      type: int
    host:
      description: The address its command line names; null for a worker.
      type: str
    holds_port:
      description:
        - Whether one of its processes holds a socket listening on RV(foreign[].port) in this module's network
          namespace (a container with the host's network), so that a new server cannot bind it. False for a
          container with its own network namespace; null when its open files cannot be read or no port is known.
      type: bool
    container_id:
      description: The container id from its cgroup (hex), or null (a PID namespace of its own, no known runtime).
      type: str
    runtime:
      description: C(docker), C(containerd), C(cri-o), C(podman) or C(kubernetes) (a kubelet cgroup with no runtime
        scope), from its cgroup; null when only its PID namespace differs.
      type: str
    pod:
      description: The kubelet pod uid from its cgroup, or null.
      type: str
    reason:
      description: Why it is foreign (another PID namespace, another container).
      type: str
    cgroup:
      description: Its cgroup path as this host sees it.
      type: str
    gpu_devices:
      description: Device files matching O(gpu_device_glob) its processes hold, where their open files can be read.
      type: list
      elements: str
    gpus:
      description: Of those, the files naming one GPU (C(/dev/nvidia3)).
      type: list
      elements: str
    fds_readable:
      description: Whether the open files of any of its processes could be read (root sees them; else empty lists).
      type: bool
  sample: [{"pid": 73110, "pids": [73110, 73188, 73189], "title": "python3 -m sglang.launch_server --port 31000 --tp 2",
            "argv": ["python3", "-m", "sglang.launch_server", "--port", "31000", "--tp", "2"], "port": 31000,
            "host": "127.0.0.1", "holds_port": false,
            "container_id": "4f1c0e7b9a2d4b6e8f0a1c3e5d7b9f1a2c4e6d8b0a1f3e5c7d9b1a3c5e7f9d1b", "runtime": "docker",
            "pod": null, "reason": "another PID namespace (pid:[4026532401]; this module runs in pid:[4026531836])",
            "cgroup": "/system.slice/docker-4f1c0e7b9a2d4b6e8f0a1c3e5d7b9f1a2c4e6d8b0a1f3e5c7d9b1a3c5e7f9d1b.scope",
            "gpu_devices": ["/dev/nvidia2", "/dev/nvidia3", "/dev/nvidiactl"], "gpus": ["/dev/nvidia2", "/dev/nvidia3"],
            "fds_readable": true}]
listeners:
  description:
    - Processes with a TCP socket listening on O(port) in this network namespace; empty when O(port) is not set.
  returned: always
  type: list
  elements: dict
  contains:
    pid:
      description: Process id.
      type: int
    title:
      description: Title or argv joined, secrets redacted.
      type: str
    argv:
      description: Command line, secrets redacted.
      type: list
      elements: str
    server_main_pid:
      description: RV(servers[].main_pid) of the server it belongs to, null when it is not SGLang.
      type: int
    managed:
      description: Whether that server is managed.
      type: bool
  sample: []
'''

import traceback

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inferops.sglang.plugins.module_utils._server_process.module import (
    info,
    shared_argument_spec,
)


def argument_spec():
    return shared_argument_spec()


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    try:
        result = info(module.params)
    except Exception as exc:  # every failure goes through fail_json, never a traceback to the user
        module.fail_json(msg='finding SGLang processes failed: %s' % exc, exception=traceback.format_exc())
    module.exit_json(**result)


if __name__ == '__main__':
    main()
