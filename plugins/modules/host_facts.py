#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: host_facts
short_description: Gather the facts an SGLang deployment needs from a GPU host
version_added: 0.1.0
description:
  - Reads, without changing anything, what turning a hand-started SGLang server into a service depends
    on, and returns it as the fact C(inferops_sglang).
  - B(Init system) as it really is. C(systemd) only when C(/run/systemd/system) exists (what
    C(sd_booted) checks) B(and) PID 1 is systemd. A container with systemd installed whose PID 1 is
    C(sleep) or C(bash) is C(other), where Ansible's own C(ansible_service_mgr) fact has said
    C(systemd).
  - B(Container) kind, whether a B(cron) daemon runs, and the B(systemd) version.
  - B(The Python interpreter) that will run the server (O(python)), asked directly by running one small
    snippet in it. It reports its version, prefixes, site-packages, which C(sitecustomize.py) it really
    imports at startup (and where that file's symlink leads), and the installed SGLang and torch versions and
    the CUDA runtime torch was built with, read from the package metadata and C(torch/version.py) without
    importing C(sglang) or C(torch).
  - B(GPUs) from C(nvidia-smi --query-gpu), the driver's CUDA version from the C(nvidia-smi) header,
    the B(interconnect) from C(nvidia-smi topo -m), and the processes holding GPU memory.
  - B(GPU faults) as data, for the pre-flights to decide on (filter P(inferops.sglang.gpu_blockers#filter)) - the
    B(MIG) mode of each GPU and its MIG devices, B(lost) GPUs (named by C(nvidia-smi) as unreachable, or known to
    the kernel driver but not listed), and a structured B(error) when C(nvidia-smi) cannot start NVML (for example
    a driver/library version mismatch after a driver update without a reboot), and each GPU's B(health) from
    C(nvidia-smi -q -x) - the NVSwitch B(fabric) state, the driver's B(recovery action), pending or failed row
    remaps, uncorrectable ECC errors, persistence mode - and B(Fabric Manager)'s version and unit state.
  - B(CUDA toolkits) under O(cuda_roots) and the one C(CUDA_HOME) should name.
  - B(Listening TCP sockets) with the process that owns each, from C(/proc/net/tcp) and C(/proc/net/tcp6).
  - Existing systemd B(unit files) matching O(unit_glob), and B(supervisord) programs.
  - B(SGLang servers) running now, found as M(inferops.sglang.server_process_info) finds them
    (exact argv, interpreter, environment with secret-looking values masked, cwd, user, port, tp/dp,
    cgroup), split into C(servers) and C(strays) (managed neither by O(unit) nor by the collection's supervisord);
    only Python processes count (their C(/proc/PID/exe)). SGLang processes of other containers (another PID
    namespace, or another container's cgroup) are C(foreign) - listed apart, with their container, port and GPUs.
  - Whether the B(endpoint) O(host):O(port) accepts TCP connections and what C(GET /health) answers.
  - No GPU, no C(nvidia-smi), or an C(nvidia-smi) that fails (for example C(NVIDIA-SMI has failed
    because it couldn't communicate with the NVIDIA driver)) is a normal result, not a failure; the GPU
    facts are then empty and the reason is given as a warning. The same holds for an interpreter that does
    not exist or cannot be run.
  - All commands run with C(LANG=C) and C(LC_ALL=C), so their output does not depend on the locale.
  - Run it as root (C(become)) to see the owner of every listening socket; otherwise sockets of other
    users' processes have no C(pid).
options:
  python:
    description:
      - Path of the Python interpreter that will run the SGLang server, for example
        C(/root/ml-env/bin/python3) (a virtual environment's interpreter).
      - Reported as given, B(not) symlink-resolved; a venv's C(bin/python3) usually links to the system
        interpreter, and resolving it would lose the venv.
      - A bare name is looked up in E(PATH).
      - When omitted, the C(python) fact has C(exists=false) and null values.
    type: path
    required: false
  pythonpath:
    description:
      - The E(PYTHONPATH) the server runs with. The interpreter is probed with it, since a C(sitecustomize.py) on
        E(PYTHONPATH) shadows the distribution's.
      - When omitted, the E(PYTHONPATH) of the running SGLang server that uses O(python) (managed or stray), if
        any. An empty string probes without one.
    type: str
    required: false
  nvidia_smi:
    description:
      - Name or path of the C(nvidia-smi) executable. A name is looked up in E(PATH) and the C(sbin)
        directories.
      - When it cannot be found, the GPU facts are empty and a warning says so.
    type: str
    required: false
    default: nvidia-smi
  nvidia_driver_dir:
    description:
      - Where the NVIDIA kernel driver publishes its state; C(<dir>/version) names the loaded kernel module's version
        (reported with an NVML failure) and C(<dir>/gpus/<PCI bus id>) the GPUs the driver knows (one that
        C(nvidia-smi) does not list is reported as lost).
      - Default C(/proc/driver/nvidia). Change it only to test with a stand-in tree.
    type: path
    required: false
  cuda_roots:
    description:
      - Glob patterns of CUDA toolkit directories to inspect.
      - A match that is not a directory is skipped; a symlink (C(/usr/local/cuda)) is inspected and
        reported with its resolved path.
    type: list
    elements: str
    required: false
    default: ['/usr/local/cuda', '/usr/local/cuda-*']
  unit_glob:
    description:
      - Shell pattern of systemd unit file names to report, searched in C(/etc/systemd/system) and
        C(/lib/systemd/system) (and C(/usr/lib/systemd/system) when that is another directory).
      - Units are only reported when the init system is systemd.
      - The same pattern without its C(.service) suffix selects supervisord programs.
    type: str
    required: false
    default: 'sglang*.service'
  unit:
    description:
      - The systemd unit that manages the server. SGLang processes in its cgroup are reported with
        C(managed=true), and so are those the collection's supervisord runs (recognised without an option, see
        M(inferops.sglang.server_process_info)); all others are strays.
    type: str
    required: false
    default: sglang.service
  host:
    description:
      - Address of the endpoint probed with C(GET /health). C(0.0.0.0) and C(::) are probed on loopback.
    type: str
    required: false
    default: 127.0.0.1
  port:
    description:
      - Port of the endpoint probed with C(GET /health) (SGLang's default C(--port) is 30000).
    type: int
    required: false
    default: 30000
  probe_timeout:
    description:
      - Seconds the C(/health) probe may take. SGLang's C(/health) runs a one-token generation, so a
        loaded server can take over a second.
    type: float
    required: false
    default: 10
  lock:
    description:
      - Take this host's lock of inferops.sglang first (as M(inferops.sglang.host_lock) with O(ignore:state=present)
        takes it, same lock file and owner record), then gather - one round trip where the playbooks took two. When
        another run holds it after O(lock.wait) seconds the task fails naming the holder, before anything is read.
      - Given back with M(inferops.sglang.host_lock) O(ignore:state=absent) at the end of the host's run.
      - In check mode no lock is taken (see RV(lock)).
    type: dict
    required: false
    suboptions:
      run_id:
        description: The run the lock is taken for (see M(inferops.sglang.host_lock)).
        type: str
        required: true
      controller:
        description: C(user@host) of the controller, recorded for another run's failure message.
        type: str
        default: ''
      playbook:
        description: The playbook that runs, recorded likewise.
        type: str
        default: ''
      wait:
        description: Seconds to wait for another run's lock before failing; V(0) fails at once.
        type: int
        default: 0
      timeout:
        description: The lock's maximum lifetime in seconds (its holder ends by itself then).
        type: int
        default: 7200
      path:
        description: The lock file on the host.
        type: path
        default: /run/lock/inferops-sglang.lock
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.facts
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  facts:
    support: full
  platform:
    platforms: posix
notes:
  - Linux only in practice; C(/proc) is read directly.
  - The interpreter probe runs C(<python> -c <snippet>) with the working directory C(/). It imports
    C(json), C(os), C(sys), C(site), C(sysconfig) and C(importlib.metadata) only; whatever that
    interpreter's C(sitecustomize.py) does at startup happens, exactly as it will for the server.
  - Commands that may hang on a broken driver (C(nvidia-smi)) or a broken interpreter are run under
    C(timeout 120) when the C(timeout) command exists.
seealso:
  - name: nvidia-smi documentation
    description: Query fields, the topo -m legend.
    link: https://docs.nvidia.com/deploy/nvidia-smi/index.html
  - name: sd_booted(3)
    description: How to tell whether the system was booted with systemd.
    link: https://www.freedesktop.org/software/systemd/man/latest/sd_booted.html
author:
  - inferops.sglang developers (@inferops)
'''

EXAMPLES = r'''
- name: Gather SGLang host facts for the server's venv interpreter
  inferops.sglang.host_facts:
    python: /root/ml-env/bin/python3
  become: true

- name: Stop where there is nothing to run the server on
  ansible.builtin.assert:
    that:
      - ansible_facts.inferops_sglang.gpu_count > 0
      - ansible_facts.inferops_sglang.python.exists
      - ansible_facts.inferops_sglang.python.sglang_version is not none
    fail_msg: "No GPU, or no SGLang in {{ ansible_facts.inferops_sglang.python.executable }}"

- name: PCIe-only GPUs get the PCIe NCCL profile
  ansible.builtin.set_fact:
    sglang_pcie_profile: "{{ ansible_facts.inferops_sglang.interconnect in ['pcie', 'mixed'] }}"

- name: Use supervisord where PID 1 is not systemd
  ansible.builtin.debug:
    msg: >-
      {{ 'systemd unit' if ansible_facts.inferops_sglang.init.system == 'systemd'
         else 'supervisord program' }}

- name: A custom nvidia-smi location and CUDA roots
  inferops.sglang.host_facts:
    python: /opt/venvs/sglang/bin/python
    nvidia_smi: /usr/local/nvidia/bin/nvidia-smi
    cuda_roots:
      - /usr/local/cuda
      - /usr/local/cuda-*
      - /opt/nvidia/cuda-*
'''

RETURN = r'''
lock:
  description:
    - With O(lock), what taking it did - C(changed) (taken now, or would be in check mode), C(lock) (the owner record,
      this run's or, in check mode, the holder's), C(stale) (an ended run's record taken over, with C(reason), or
      null), C(waited) (seconds) and C(msg); the same values M(inferops.sglang.host_lock) returns.
  returned: when O(lock) is given
  type: dict
  sample: {changed: true, lock: {run_id: 20261204T130000Z-5f3a9c21, holder_pid: 41234}, stale: null, waited: 0.0,
           msg: "Took the lock (holder pid 41234, for at most 7200 s)."}
ansible_facts:
  description: Facts to add to the host's C(ansible_facts).
  returned: always
  type: dict
  contains:
    inferops_sglang:
      description: Everything this module found.
      returned: always
      type: dict
      contains:
        init:
          description: The init system and its surroundings.
          returned: always
          type: dict
          contains:
            system:
              description:
                - V(systemd) only when C(/run/systemd/system) exists and PID 1 is systemd (its
                  C(/proc/1/comm), C(argv[0]) or C(/proc/1/exe)); V(other) otherwise, also when PID 1
                  cannot be read.
              type: str
              returned: always
              sample: systemd
            pid1:
              description: Name of PID 1 from C(/proc/1/comm); null when unreadable.
              type: str
              returned: always
              sample: systemd
            pid1_cmdline:
              description: Command line of PID 1 from C(/proc/1/cmdline).
              type: list
              elements: str
              returned: always
              sample: ['/sbin/init']
            systemd_booted:
              description: Whether C(/run/systemd/system) exists.
              type: bool
              returned: always
            systemd_version:
              description: Version from the first line of C(systemctl --version); null without C(systemctl).
              type: int
              returned: always
              sample: 255
            container:
              description:
                - V(docker), V(podman), V(lxc), V(containerd), V(other) or V(none).
                - From C(/run/systemd/container), C(container=) in C(/proc/1/environ), C(/.dockerenv),
                  C(/run/.containerenv), then C(/proc/1/cgroup), the most explicit first.
              type: str
              returned: always
              sample: lxc
            cron_running:
              description: Whether a cron daemon runs (C(cron), C(crond), C(cronie), C(fcron), busybox C(crond)).
              type: bool
              returned: always
            cron:
              description:
                - The cron daemon that runs, and whether its C(@reboot) jobs will run at the next start of the host or
                  container (a boot hook for the supervisord fallback).
              type: dict
              returned: always
              contains:
                daemon:
                  description:
                    - V(cron) (Debian and Ubuntu), V(busybox) (busybox C(crond), also behind an Alpine C(crond) link,
                      told by C(/proc/<pid>/exe)), V(cronie), V(fcron), or null when no cron daemon runs.
                  type: str
                  returned: always
                  sample: cron
                reads_cron_d:
                  description: Whether the daemon reads C(/etc/cron.d) (V(cron), V(cronie); busybox C(crond) does not).
                  type: bool
                  returned: always
                crontabs_dir:
                  description:
                    - busybox only, the directory of its per-user crontab files (C(<dir>/root)); from its C(-c) option,
                      else C(/var/spool/cron/crontabs). Null for other daemons.
                  type: str
                  returned: always
                  sample: /var/spool/cron/crontabs
                reboot_marker:
                  description:
                    - The file the daemon creates when it runs its C(@reboot) jobs; if it exists when the daemon starts,
                      the daemon skips them (C(/run/crond.reboot) for Debian's cron, C(/var/run/crond.reboot) for
                      busybox, C(/var/run/cron.reboot) for cronie). Null for fcron or without a daemon.
                  type: str
                  returned: always
                  sample: /run/crond.reboot
                reboot_marker_exists:
                  description: Whether that file exists now.
                  type: bool
                  returned: always
                reboot_marker_persists:
                  description:
                    - Whether that file survives a restart, so that C(@reboot) jobs are skipped at the next start
                      unless it is removed first; true when the mount that holds it (from C(/proc/self/mounts),
                      symlinks such as C(/var/run) resolved) is not a C(tmpfs) or C(ramfs), or when C(/proc/self/mounts)
                      cannot be read.
                  type: bool
                  returned: always
        python:
          description: The interpreter of O(python), as it reports itself.
          returned: always
          type: dict
          contains:
            executable:
              description: O(python) as given, not symlink-resolved; null when not given.
              type: str
              returned: always
              sample: /root/ml-env/bin/python3
            exists:
              description: Whether it exists and is executable.
              type: bool
              returned: always
            version:
              description: C(major.minor.micro); null when it could not be run.
              type: str
              returned: always
              sample: 3.12.3
            prefix:
              description: C(sys.prefix).
              type: str
              returned: always
              sample: /root/ml-env
            base_prefix:
              description: C(sys.base_prefix).
              type: str
              returned: always
              sample: /usr
            is_venv:
              description: Whether C(prefix) differs from C(base_prefix); null when it could not be run.
              type: bool
              returned: always
            bin_dir:
              description: Directory of O(python) as given (a venv's C(bin)).
              type: str
              returned: always
              sample: /root/ml-env/bin
            site_packages:
              description: C(site.getsitepackages()) plus the C(purelib) and C(platlib) paths, without duplicates.
              type: list
              elements: str
              returned: always
              sample: ['/root/ml-env/lib/python3.12/site-packages']
            sitecustomize:
              description: The C(sitecustomize) module this interpreter actually imported at startup.
              type: dict
              returned: always
              contains:
                imported:
                  description: Whether C(sitecustomize) is in C(sys.modules) after startup.
                  type: bool
                  returned: always
                path:
                  description: Its C(__file__); where importing it failed (C(error)), the file the import tried (the
                    first C(sitecustomize.py) on C(sys.path)); null when there is none.
                  type: str
                  returned: always
                  sample: /usr/lib/python3.12/sitecustomize.py
                realpath:
                  description: C(path) with symlinks resolved (Debian and Ubuntu ship a link to the packaged
                    C(/etc/python3.X/sitecustomize.py)); null when none was imported.
                  type: str
                  returned: always
                  sample: /etc/python3.12/sitecustomize.py
                is_link:
                  description: Whether C(path) is a symlink.
                  type: bool
                  returned: always
                candidate:
                  description: Where a new C(sitecustomize.py) is imported from when none is imported now
                    (a pyenv, uv or python.org build, or a venv on one). C(site.py) imports C(sitecustomize) once
                    the site-packages are on C(sys.path), so this is the first of the interpreter's C(purelib),
                    C(platlib) and C(site.getsitepackages()) directories that is on C(sys.path) (a venv's own
                    C(site-packages)), else its standard library directory. A full file path, ending in
                    C(/sitecustomize.py); null when the interpreter could not be run.
                  type: str
                  returned: always
                  sample: /root/ml-env/lib/python3.12/site-packages/sitecustomize.py
                error:
                  description: Why importing it failed (then C(imported) is false and nothing it sets reaches the
                    server) - its file, the line of a syntax error (found by compiling the file, never running it)
                    and site.py's C(Error in sitecustomize) report; null otherwise.
                  sample: "/usr/lib/python3.11/sitecustomize.py line 18: SyntaxError: invalid syntax (Error in
                    sitecustomize; set PYTHONVERBOSE for traceback: SyntaxError: invalid syntax (sitecustomize.py,
                    line 18))"
                  type: str
                  returned: always
            pythonpath:
              description: The E(PYTHONPATH) the interpreter was probed with (O(pythonpath), else the running
                server's); null when none.
              type: str
              returned: always
              sample: /opt/patches
            pythonpath_from:
              description: Where C(pythonpath) came from, C(parameter) or C(server pid N); null when none.
              type: str
              returned: always
              sample: server pid 4242
            sglang_version:
              description: Version of the installed C(sglang) distribution from its metadata
                (C(importlib.metadata)); null when not installed. C(sglang) itself is not imported.
              type: str
              returned: always
              sample: 0.5.9
            torch_version:
              description:
                - Version of the installed C(torch) distribution from its metadata (C(importlib.metadata)), with
                  its local label (C(+cu130), C(+cpu)) as pip installed it; what C(torch.__version__) says.
                - Null when torch is not installed in the interpreter. C(torch) itself is not imported (that
                  takes seconds and can initialise the GPU).
              type: str
              returned: always
              sample: 2.9.1+cu130
            torch_cuda_version:
              description:
                - >-
                  The CUDA runtime torch was built with (C(torch.version.cuda)), major.minor as torch reports it,
                  read as a literal from the module-level C(cuda) assignment in the text of C(torch/version.py)
                  next to the distribution (C(cuda = '11.7') in torch 1.x, C(cuda: Optional[str] = '13.0') in 2.x);
                  the file is not executed.
                - Null for a CPU or ROCm build of torch, when torch is not installed, or when that file is missing
                  or unreadable. Compare with C(cuda_driver_version), the newest CUDA the driver supports.
              type: str
              returned: always
              sample: '13.0'
        gpus:
          description: One entry per GPU, from C(nvidia-smi --query-gpu=index,name,uuid,memory.total,memory.used,
            compute_cap,driver_version,pci.bus_id --format=csv,noheader,nounits); empty without GPUs.
          type: list
          elements: dict
          returned: always
          contains:
            index:
              description: The GPU index nvidia-smi uses (not necessarily the C(CUDA_VISIBLE_DEVICES) order).
              type: int
            name:
              description: Product name.
              type: str
              sample: NVIDIA H200
            uuid:
              description: GPU UUID.
              type: str
              sample: GPU-264e02ee-af98-d893-82ae-4ec1afc463e1
            memory_total_mib:
              description: Total memory in MiB.
              type: int
              sample: 143771
            memory_used_mib:
              description: Used memory in MiB at the time of the query.
              type: int
              sample: 0
            compute_cap:
              description: Compute capability; null with drivers that do not know the field.
              type: str
              sample: '9.0'
            driver_version:
              description: Driver version.
              type: str
              sample: 580.159.04
            pci_bus_id:
              description: PCI bus id.
              type: str
              sample: 00000000:00:06.0
            mig_mode:
              description: The GPU's current MIG mode from C(nvidia-smi --query-gpu=index,mig.mode.current
                --format=csv,noheader,nounits); null for a GPU without MIG (C([N/A])) or when the query fails.
              type: str
              choices: [Enabled, Disabled]
              sample: Enabled
            mig_devices:
              description: The MIG devices of this GPU, from the indented C(MIG <profile> Device <n>) lines of
                C(nvidia-smi -L) (asked only when a GPU is in MIG mode); empty otherwise.
              type: list
              elements: dict
              contains:
                profile:
                  description: The MIG profile.
                  type: str
                  sample: 3g.71gb
                device:
                  description: The MIG device number on this GPU.
                  type: int
                uuid:
                  description: The MIG device's UUID (what C(CUDA_VISIBLE_DEVICES) takes).
                  type: str
            persistence_mode:
              description: C(persistence_mode) of C(nvidia-smi -q -x); null where not reported (as for each key below).
              type: str
              sample: Enabled
            recovery_action:
              description: The driver's verdict, C(gpu_recovery_action) of C(nvidia-smi -q -x) (drivers R550 and later);
                anything but V(None) blocks a start (filter P(inferops.sglang.gpu_blockers#filter)).
              type: str
              sample: None
            remapped_rows_pending:
              description: A row remap waits for a GPU reset (C(remapped_rows/remapped_row_pending); Ampere and later).
              type: bool
            remapped_rows_failure:
              description: A row remap failed (C(remapped_rows/remapped_row_failure)); the GPU needs replacing.
              type: bool
            retired_pages_pending:
              description: A page retirement waits for a GPU reset (C(retired_pages/pending_retirement); before Ampere).
              type: bool
            ecc_uncorrectable_volatile:
              description: Uncorrectable ECC errors since the driver loaded, every volatile counter the driver prints
                summed (C(sram_uncorrectable_*), C(dram_uncorrectable), or C(double_bit/total) on older drivers).
              type: int
              sample: 0
            fabric_state:
              description: The NVSwitch fabric's state for this GPU (C(fabric/state); R525 and later); null without
                NVSwitch.
              type: str
              choices: [Not Started, In Progress, Completed]
            fabric_status:
              description: The fabric set-up's result (C(fabric/status)), V(Success) or the error.
              type: str
        fabric:
          description: The host's NVSwitch fabric, from the GPUs' C(fabric_state) and C(fabric_status).
          type: dict
          returned: always
          contains:
            state:
              description: V(none) (no GPU reports a fabric), V(ready) (all Completed/Success), V(not_ready),
                V(failed).
              type: str
            gpus:
              description: Indexes of the GPUs whose fabric is not ready or failed.
              type: list
              elements: str
        xid_events:
          description:
            - The NVIDIA driver's Xid reports in the kernel log (C(/dev/kmsg), read without waiting), oldest first, the
              last 20; V([]) without GPUs; null when the kernel log is unreadable (a container without C(CAP_SYSLOG)).
            - Facts, not blockers - the log keeps them until the host reboots, also after a GPU reset cleared the
              fault; the GPU's own C(recovery_action) says what it needs now.
          type: list
          elements: dict
          returned: always
          contains:
            pci_bus_id:
              description: The GPU, as in C(gpus).
              type: str
            xid:
              description: The Xid number (NVIDIA's Xid catalog, for example 79 - fallen off the bus, 48 - double bit
                ECC error, 94/95 - contained/uncontained ECC error).
              type: int
            seconds:
              description: Seconds since boot when the driver reported it.
              type: float
            text:
              description: The report after the number (at most 200 characters).
              type: str
            needs_recovery:
              description: The Xid is one that calls for a GPU reset or a reboot.
              type: bool
        fabric_manager:
          description: NVIDIA Fabric Manager (C(nv-fabricmanager --version)) and the units
            C(nvidia-fabricmanager.service) and C(nvidia-persistenced.service) (C(systemctl show); null states
            where PID 1 is not systemd).
          type: dict
          returned: always
          contains:
            installed:
              description: C(nv-fabricmanager) is on the host or its unit is loaded.
              type: bool
            version:
              description: Fabric Manager's version; it must equal the driver's.
              type: str
              sample: 580.159.04
            load_state:
              description: C(LoadState) of C(nvidia-fabricmanager.service) (V(not-found) where it is not installed).
              type: str
            active_state:
              description: C(ActiveState) of C(nvidia-fabricmanager.service).
              type: str
            persistenced_load_state:
              description: C(LoadState) of C(nvidia-persistenced.service).
              type: str
            persistenced_active_state:
              description: C(ActiveState) of C(nvidia-persistenced.service).
              type: str
        lost_gpus:
          description:
            - GPUs that are lost (fallen off the bus, Xid 79) - those C(nvidia-smi) names in a line
              C(Unable to determine the device handle for GPU <bus id>) (it then exits 0 or 15 and prints rows for
              the others), then those the kernel driver lists under C(/proc/driver/nvidia/gpus/)
              (O(nvidia_driver_dir)) that C(nvidia-smi) has no row for. They are not in C(gpus) or C(gpu_count).
          type: list
          elements: dict
          returned: always
          contains:
            pci_bus_id:
              description: PCI bus id, 4-digit domain, upper-case hex.
              type: str
              sample: 0000:BA:00.0
            error:
              description: What C(nvidia-smi) said about it, or why it counts as lost.
              type: str
              sample: Unknown Error
            source:
              description: V(nvidia-smi) (named in its output) or V(driver) (only the kernel driver lists it).
              type: str
        gpu_error:
          description:
            - Why C(nvidia-smi) failed without listing a GPU; null when it answered (or is not installed, or says
              C(No devices were found)).
          type: dict
          returned: always
          contains:
            kind:
              description: V(driver_library_mismatch) (C(Failed to initialize NVML - Driver/library version mismatch)),
                V(nvml_init_failed) (another C(Failed to initialize NVML)), V(driver_unreachable) (C(couldn't
                communicate with the NVIDIA driver)) or V(failed).
              type: str
            message:
              description: The line of C(nvidia-smi)'s output that says it.
              type: str
              sample: 'Failed to initialize NVML: Driver/library version mismatch'
            rc:
              description: The exit status of C(nvidia-smi).
              type: int
            nvml_library_version:
              description: The user-space NVML library's version as C(nvidia-smi) prints it (C(NVML library version)); null if it does not.
              type: str
              sample: '570.195'
            kernel_module_version:
              description: The loaded kernel module's version from C(/proc/driver/nvidia/version) (O(nvidia_driver_dir)); null when unreadable.
              type: str
              sample: 570.172.08
        gpu_count:
          description: Number of entries in C(gpus).
          type: int
          returned: always
          sample: 8
        driver_version:
          description: NVIDIA driver version; null without GPUs.
          type: str
          returned: always
          sample: 580.159.04
        cuda_driver_version:
          description: The highest CUDA version the driver supports (C(cuda_version) of C(nvidia-smi -q -x), else
            C(CUDA Version) in the plain C(nvidia-smi) header, else from C(nvidia-smi -q)); not the toolkit version.
            Null without GPUs.
          type: str
          returned: always
          sample: '13.0'
        interconnect:
          description:
            - How the GPUs talk to each other, from C(nvidia-smi topo -m) (legend C(NV#) = a bonded set of
              C(#) NVLinks; C(PIX), C(PXB), C(PHB), C(NODE), C(SYS) = paths over PCIe).
            - V(nvlink) every GPU pair is C(NV#); V(pcie) no pair is; V(mixed) some pairs are; V(single) one
              GPU; V(none) no GPU.
            - When C(topo -m) fails with several GPUs, C(nvidia-smi nvlink -s) decides between V(pcie) (no
              active link) and V(mixed) (links that cannot be matched to pairs; two linked GPUs are V(nvlink)),
              with a warning; V(pcie) with a warning when that fails too.
          type: str
          returned: always
          sample: pcie
        topology:
          description: The GPU part of the C(topo -m) matrix, each GPU mapped to its link to every other GPU
            (the C(X) self cell, NIC rows and columns and the affinity columns left out); empty without GPUs.
          type: dict
          returned: always
          sample: {"GPU0": {"GPU1": "NV18"}, "GPU1": {"GPU0": "NV18"}}
        gpu_processes:
          description: Processes holding GPU memory, from C(nvidia-smi --query-compute-apps=gpu_uuid,pid,
            process_name,used_gpu_memory --format=csv,noheader,nounits). A process on several GPUs is listed once per GPU.
          type: list
          elements: dict
          returned: always
          contains:
            gpu_uuid:
              description: UUID of the GPU.
              type: str
            pid:
              description: Process id (in the host's PID namespace; may not exist in a container's).
              type: int
            process_name:
              description: Process name as nvidia-smi reports it.
              type: str
            used_memory_mib:
              description: GPU memory held, in MiB; null when the driver does not say.
              type: int
        nvidia_smi:
          description: Path of the C(nvidia-smi) used; null when not found.
          type: str
          returned: always
          sample: /usr/bin/nvidia-smi
        cuda:
          description: CUDA toolkits found under O(cuda_roots).
          type: dict
          returned: always
          contains:
            toolkits:
              description: One entry per matched directory.
              type: list
              elements: dict
              returned: always
              contains:
                path:
                  description: The directory as matched.
                  type: str
                  sample: /usr/local/cuda
                realpath:
                  description: The directory with symlinks resolved.
                  type: str
                  sample: /usr/local/cuda-13.0
                version:
                  description: From C(version.json), else C(version.txt), else C(bin/nvcc --version)
                    (the compiler's C(V) version); null when none says.
                  type: str
                  sample: 13.0.1
                nvcc:
                  description: Whether C(bin/nvcc) is an executable file.
                  type: bool
                ptxas:
                  description: Whether C(bin/ptxas) is an executable file.
                  type: bool
            home:
              description: What C(CUDA_HOME) should be, symlinks resolved; the highest version having both
                C(nvcc) and C(ptxas), else the highest having C(nvcc); null when no toolkit has C(nvcc).
              type: str
              returned: always
              sample: /usr/local/cuda-13.0
        network:
          description:
            - The host's network as a multi-node replica's Gloo and NCCL see it (the service role names the interface
              of a replica node's address in C(GLOO_SOCKET_IFNAME) and C(NCCL_SOCKET_IFNAME), and refuses a node whose
              hostname resolves to loopback, as a stock Debian or Ubuntu C(/etc/hosts) has it, with no interface named).
          type: dict
          returned: always
          contains:
            hostname:
              description: C(gethostname()).
              type: str
              sample: gpu-01
            hostname_addresses:
              description: What the hostname resolves to (C(getaddrinfo), C(/etc/hosts) first as glibc reads it), in
                order; empty when it does not resolve.
              type: list
              elements: str
              sample: [127.0.1.1]
            interfaces:
              description: Interface name to its addresses (IPv4 from C(SIOCGIFADDR), one per interface; IPv6 from
                C(/proc/net/if_inet6)).
              type: dict
              sample: {lo: [127.0.0.1, '::1'], ens5: [10.0.0.11]}
        listeners:
          description: Listening TCP sockets (state C(0A)) from C(/proc/net/tcp) and C(/proc/net/tcp6).
          type: list
          elements: dict
          returned: always
          contains:
            proto:
              description: V(tcp) or V(tcp6).
              type: str
            host:
              description: Local address (C(0.0.0.0) and C(::) mean all addresses).
              type: str
              sample: 127.0.0.1
            port:
              description: Local port.
              type: int
              sample: 30000
            inode:
              description: Socket inode.
              type: int
            pid:
              description: Lowest pid holding the socket (its C(socket:[inode]) in C(/proc/<pid>/fd));
                null when not visible (not root, or another PID namespace).
              type: int
            process:
              description: C(/proc/<pid>/comm) of that process; null with C(pid).
              type: str
              sample: python3
            uid:
              description: The socket's owner (C(/proc/net/tcp) column C(uid), readable by anyone, also when C(pid)
                is null because the owning process's C(/proc/<pid>/fd) cannot be read).
              type: int
              sample: 1000
            user:
              description: The passwd name of C(uid) (its number as text when it has none).
              type: str
              sample: sglang
        units:
          description: Unit files matching O(unit_glob) (only when C(init.system) is V(systemd), else empty).
          type: list
          elements: dict
          returned: always
          contains:
            name:
              description: Unit file name.
              type: str
              sample: sglang.service
            path:
              description: Path of the file (a link to C(/dev/null) is a masked unit).
              type: str
              sample: /etc/systemd/system/sglang.service
            active_state:
              description: C(ActiveState) from C(systemctl show); absent for template units or when
                C(systemctl) could not tell.
              type: str
              returned: when known
              sample: active
        supervisor:
          description: supervisord and its programs.
          type: dict
          returned: always
          contains:
            installed:
              description: Whether C(supervisord) is in E(PATH) or a main supervisord config file exists.
              type: bool
            running:
              description: Whether a C(supervisord) process runs.
              type: bool
            config_files:
              description: Config files read (C(/etc/supervisord.conf), C(/etc/supervisor/supervisord.conf),
                C(/etc/supervisor/conf.d/*.conf), C(/etc/supervisord.d/*.conf), C(/etc/supervisord.d/*.ini)).
              type: list
              elements: str
            programs:
              description: Names of C([program:NAME]) sections matching O(unit_glob) less its C(.service) suffix.
              type: list
              elements: str
              sample: ['sglang']
        servers:
          description:
            - Every SGLang server running now, one entry per server (main process, its children, orphans).
            - Each entry has the keys M(inferops.sglang.server_process_info) returns for C(servers), among them
              C(main_pid), C(pids), C(argv), C(executable), C(module), C(args), C(env) (secret-looking values
              masked as C(********)), C(env_readable), C(cwd), C(user), C(host), C(port), C(tp), C(dp), C(pp),
              C(cgroup), C(managed), C(managed_by).
          type: list
          elements: dict
          returned: always
        strays:
          description: The entries of C(servers) not managed (neither in O(unit) nor under the collection's
            supervisord; for example started by hand with nohup).
          type: list
          elements: dict
          returned: always
        lock_run_id:
          description:
            - The run (O(lock.run_id)) whose host lock this call took, or found it already held, before it read
              anything; empty without O(lock) and in check mode (which takes no lock).
            - While that run holds the lock, no other run of the collection changes the host - the cutover uses this
              to know the facts are its own run's (filter P(inferops.sglang.cutover_strays_ruled_out#filter)).
          type: str
          returned: always
          sample: 20261204T130000Z-5f3a9c21
        read_as_root:
          description:
            - Whether the call ran as root (effective uid 0) - it could read every process of the host; another user
              sees other users' processes as unproven or not at all (C(hidepid)), so its C(strays) may miss some.
          type: bool
          returned: always
        foreign:
          description:
            - SGLang processes of other containers (another PID namespace than this module's, or a cgroup of
              another container - docker, containerd, CRI-O, podman, kubepods), as
              M(inferops.sglang.server_process_info) returns them in its C(foreign) list.
              Never in C(servers) or C(strays); nothing here stops them.
            - Each entry has C(pid), C(pids), C(title), C(argv), C(port) and C(host) (from its command line; null for
              an orphaned worker), C(holds_port), C(container_id), C(runtime), C(pod), C(reason), C(cgroup),
              C(gpu_devices), C(gpus) and C(fds_readable).
          type: list
          elements: dict
          returned: always
        endpoint:
          description: What O(host):O(port) answered.
          type: dict
          returned: always
          contains:
            host:
              description: The address asked about (O(host)).
              type: str
            port:
              description: The port asked about (O(port)).
              type: int
            listening:
              description: Whether a TCP connection succeeded.
              type: bool
            health_status:
              description: HTTP status of C(GET /health), or null without an HTTP answer.
              type: int
              sample: 200
            seconds:
              description: Seconds C(GET /health) took.
              type: float
            error:
              description: Why there was no TCP connection or no HTTP answer, else null.
              type: str
'''

import errno
import os
import socket

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native
from ansible_collections.inferops.sglang.plugins.module_utils import _concurrent
from ansible_collections.inferops.sglang.plugins.module_utils import _host_lock
from ansible_collections.inferops.sglang.plugins.module_utils import _http
from ansible_collections.inferops.sglang.plugins.module_utils import (
    _cuda_toolkit,
    _host_init,
    _gpu_health,
    _network,
    _nvidia_smi,
    _procfs,
    _python_probe,
    _supervisors,
)
from ansible_collections.inferops.sglang.plugins.module_utils._server_process.discovery import discover

C_ENV = {'LANG': 'C', 'LC_ALL': 'C'}
COMMAND_TIMEOUT = 120
UNIT_DIRS = ('/etc/systemd/system', '/lib/systemd/system', '/usr/lib/systemd/system')
PROC = '/proc'
RUN = '/run'
ETC = '/etc'


class HostFacts(object):

    def __init__(self, module):
        self.module = module
        self.timeout_bin = module.get_bin_path('timeout')
        self._processes = None

    def run(self, args, cwd=None, env=None):
        """rc, stdout, stderr of args (a list), under `timeout` where available, in the C locale (plus env)."""
        cmd = list(args)
        if self.timeout_bin:
            cmd = [self.timeout_bin, str(COMMAND_TIMEOUT)] + cmd
        kwargs = dict(check_rc=False, environ_update=dict(C_ENV, **(env or {})))
        if cwd:
            kwargs['cwd'] = cwd
        try:
            rc, out, err = self.module.run_command(cmd, **kwargs)
        except OSError as e:
            return 127, '', str(e)
        if self.timeout_bin and rc == 124:
            err = (err or '') + '\ntimed out after %d s' % COMMAND_TIMEOUT
        return rc, out or '', err or ''

    @property
    def processes(self):
        if self._processes is None:
            self._processes = _procfs.list_processes(PROC)
        return self._processes

    # ---- init -------------------------------------------------------------------------------
    def init_facts(self):
        init = _host_init.detect_init(PROC, RUN)
        if init['pid1'] is None:
            self.module.warn('Cannot read /proc/1/comm; init.system is reported as "other".')
        version = None
        systemctl = self.module.get_bin_path('systemctl')
        if systemctl:
            rc, out, dummy = self.run([systemctl, '--version'])
            if rc == 0:
                version = _host_init.parse_systemctl_version(out)
        init['systemd_version'] = version
        init['container'] = _host_init.detect_container(PROC, RUN, '/')
        init['cron_running'] = _host_init.cron_running(self.processes, PROC)
        init['cron'] = _host_init.detect_cron(self.processes, PROC, '/')
        return init

    # ---- python -----------------------------------------------------------------------------
    def python_facts(self, python, pythonpath=None, pythonpath_from=None):
        """The interpreter's facts, probed with the server's PYTHONPATH (which decides which sitecustomize.py it
        imports: a file on PYTHONPATH shadows the distribution's)."""
        facts = {
            'executable': python,
            'exists': False,
            'version': None,
            'prefix': None,
            'base_prefix': None,
            'is_venv': None,
            'bin_dir': os.path.dirname(python) if python else None,
            'site_packages': [],
            'sitecustomize': {
                'imported': False,
                'path': None,
                'realpath': None,
                'is_link': False,
                'candidate': None,
                'error': None,
            },
            'sglang_version': None,
            'torch_version': None,
            'torch_cuda_version': None,
            'pythonpath': pythonpath or None,
            'pythonpath_from': pythonpath_from if pythonpath else None,
        }
        if not python:
            return facts
        path = python
        if os.sep not in python:
            path = self.module.get_bin_path(python)
            if path:
                facts['bin_dir'] = os.path.dirname(path)
        if not path or not os.path.isfile(path) or not os.access(path, os.X_OK):
            self.module.warn('Python interpreter %s does not exist or is not executable.' % python)
            return facts
        facts['exists'] = True
        rc, out, err = self.run([path, '-c', _python_probe.PYTHON_PROBE], cwd='/', env={'PYTHONPATH': pythonpath or ''})
        probe = _python_probe.parse_python_probe(out)
        if probe is None:
            self.module.warn('Running %s failed (rc=%s): %s' % (python, rc, (err or out).strip()[-500:]))
            return facts
        if probe.get('error'):
            self.module.warn('The probe in %s reported: %s' % (python, probe['error']))
        facts['version'] = probe.get('version')
        facts['prefix'] = probe.get('prefix')
        facts['base_prefix'] = probe.get('base_prefix')
        if facts['prefix'] is not None and facts['base_prefix'] is not None:
            facts['is_venv'] = facts['prefix'] != facts['base_prefix']
        facts['site_packages'] = probe.get('site_packages') or []
        facts['sglang_version'] = probe.get('sglang_version')
        facts['torch_version'] = probe.get('torch_version')
        facts['torch_cuda_version'] = _python_probe.torch_cuda_version(probe.get('torch_version_py'))
        sc = facts['sitecustomize']
        sc['imported'] = bool(probe.get('sitecustomize_imported'))
        sc_path = probe.get('sitecustomize_path')
        if sc_path:
            sc['path'] = sc_path
            sc['realpath'] = os.path.realpath(sc_path)
            sc['is_link'] = os.path.islink(sc_path)
        sc['candidate'] = _python_probe.sitecustomize_candidate(probe)
        sc['error'] = _python_probe.sitecustomize_error(err, probe)
        failed = probe.get('sitecustomize_failed_path')
        if sc['error'] and not sc_path and failed:
            # the file the interpreter tries to import at start-up and fails on: the one to fix (and to manage)
            sc['path'] = failed
            sc['realpath'] = os.path.realpath(failed)
            sc['is_link'] = os.path.islink(failed)
        if sc['error']:
            self.module.warn('%s cannot import its sitecustomize: %s' % (python, sc['error']))
        return facts

    # ---- GPUs -------------------------------------------------------------------------------
    def gpu_facts(self, nvidia_smi, driver_dir=None):
        facts = {
            'gpus': [],
            'gpu_count': 0,
            'driver_version': None,
            'cuda_driver_version': None,
            'interconnect': 'none',
            'topology': {},
            'gpu_processes': [],
            'nvidia_smi': None,
            'lost_gpus': [],
            'gpu_error': None,
            'fabric': {'state': 'none', 'gpus': []},
        }
        driver_dir = driver_dir or os.path.join(PROC, 'driver', 'nvidia')
        smi = self.module.get_bin_path(nvidia_smi, opt_dirs=['/usr/local/nvidia/bin'])
        if not smi:
            self.module.warn('%s not found: no GPU facts (gpus is empty, interconnect is "none").' % nvidia_smi)
            return facts
        facts['nvidia_smi'] = smi

        fields = list(_nvidia_smi.QUERY_GPU_FIELDS)
        rc, out, err = self.run([smi] + _nvidia_smi.query_gpu_args(fields))
        if rc != 0 and 'compute_cap' in (out + err):
            # drivers older than ~510 do not know compute_cap
            fields.remove('compute_cap')
            rc, out, err = self.run([smi] + _nvidia_smi.query_gpu_args(fields))
        text = out + '\n' + err
        gpus = _nvidia_smi.parse_query_gpu(out, fields)
        # a GPU that fell off the bus is a line instead of a row, and nvidia-smi exits 0 or 15 (GPU inaccessible)
        reported = _nvidia_smi.parse_lost_gpus(text)
        if not gpus and not reported:
            if rc != 0:
                facts['gpu_error'] = _nvidia_smi.parse_gpu_error(text, rc, self.kernel_module_version(driver_dir))
                self.module.warn('%s failed (rc=%s): %s; no GPU facts.'
                                 % (smi, rc, _nvidia_smi.smi_failure_message(text)))
            else:
                self.module.warn('%s lists no GPU: %s' % (smi, _nvidia_smi.smi_failure_message(text)))
            return facts
        facts['lost_gpus'] = _nvidia_smi.lost_gpus([g['pci_bus_id'] for g in gpus], reported,
                                                   self.driver_bus_ids(driver_dir))
        if facts['lost_gpus']:
            self.module.warn('%s: GPU %s lost (%s lists %d GPU(s), rc=%s).'
                             % (smi, ', '.join(g['pci_bus_id'] for g in facts['lost_gpus']), smi, len(gpus), rc))
        self.mig(smi, gpus)
        facts['gpus'] = gpus
        facts['gpu_count'] = len(gpus)
        if not gpus:
            return facts
        facts['driver_version'] = gpus[0].get('driver_version')

        # The full query as XML: the GPUs' health (fabric, recovery action, row remaps, ECC, persistence) and the
        # driver's CUDA version; drivers whose XML lacks an element leave its key None.
        rc, out, err = self.run([smi] + _gpu_health.query_xml_args())
        health = _gpu_health.parse_query_xml(out) if rc == 0 else None
        if health is None:
            self.module.warn('%s -q -x failed (rc=%s): %s; the GPUs\' health (fabric, recovery action, ECC) is unknown.'
                             % (smi, rc, _nvidia_smi.smi_failure_message(out + '\n' + err)))
        _gpu_health.add_gpu_health(gpus, health)
        facts['fabric'] = _gpu_health.fabric_summary(gpus)
        cuda = (health or {}).get('cuda_version')
        if facts['driver_version'] is None:
            facts['driver_version'] = (health or {}).get('driver_version')
        if cuda is None:
            rc, out, err = self.run([smi])
            cuda = _nvidia_smi.parse_cuda_version_from_smi(out) if rc == 0 else None
            if facts['driver_version'] is None and rc == 0:
                facts['driver_version'] = _nvidia_smi.parse_driver_version_from_smi(out)
        if cuda is None:
            rc, out, err = self.run([smi, '-q'])
            if rc == 0:
                cuda = _nvidia_smi.parse_cuda_version_from_smi(out)
                if facts['driver_version'] is None:
                    facts['driver_version'] = _nvidia_smi.parse_driver_version_from_smi(out)
        facts['cuda_driver_version'] = cuda

        facts['topology'], facts['interconnect'] = self.topology(smi, len(gpus))

        rc, out, err = self.run([smi] + _nvidia_smi.compute_apps_args())
        if rc == 0:
            facts['gpu_processes'] = _nvidia_smi.parse_compute_apps(out)
        else:
            self.module.warn('%s --query-compute-apps failed: %s' % (smi, _nvidia_smi.smi_failure_message(out + '\n' + err)))
        return facts

    def mig(self, smi, gpus):
        """Set mig_mode and mig_devices of each GPU entry (nvidia-smi --query-gpu=index,mig.mode.current; -L
        only when a GPU is in MIG mode)."""
        for gpu in gpus:
            gpu['mig_mode'] = None
            gpu['mig_devices'] = []
        rc, out, err = self.run([smi] + _nvidia_smi.query_gpu_args(_nvidia_smi.QUERY_MIG_FIELDS))
        modes = _nvidia_smi.parse_mig_modes(out)
        if not modes:
            if rc != 0:
                self.module.warn('%s --query-gpu=%s failed (rc=%s): %s; mig_mode is unknown.'
                                 % (smi, ','.join(_nvidia_smi.QUERY_MIG_FIELDS), rc,
                                    _nvidia_smi.smi_failure_message(out + '\n' + err)))
            return
        for gpu in gpus:
            gpu['mig_mode'] = modes.get(gpu['index'])
        if not any(gpu['mig_mode'] == 'Enabled' for gpu in gpus):
            return
        rc, out, err = self.run([smi, '-L'])
        devices = _nvidia_smi.parse_gpu_list(out)
        if not devices:
            self.module.warn('%s -L failed (rc=%s): %s; mig_devices are unknown.'
                             % (smi, rc, _nvidia_smi.smi_failure_message(out + '\n' + err)))
        for gpu in gpus:
            gpu['mig_devices'] = devices.get(gpu['index'], [])

    @staticmethod
    def driver_bus_ids(driver_dir):
        """The PCI bus ids of the GPUs the NVIDIA kernel driver knows (<driver_dir>/gpus/<bus id>); [] when unreadable."""
        try:
            return sorted(os.listdir(os.path.join(driver_dir, 'gpus')))
        except OSError:
            return []

    @staticmethod
    def kernel_module_version(driver_dir):
        """The loaded NVIDIA kernel module's version (<driver_dir>/version), or None."""
        return _nvidia_smi.parse_kernel_module_version(_procfs.read_text(os.path.join(driver_dir, 'version'), ''))

    def topology(self, smi, gpu_count):
        rc, out, err = self.run([smi, 'topo', '-m'])
        matrix, interconnect = ({}, 'none')
        if rc == 0:
            matrix, interconnect = _nvidia_smi.parse_topology(out)
        if gpu_count == 1:
            return matrix, 'single'
        if rc == 0 and len(matrix) == gpu_count:
            return matrix, interconnect
        reason = ('rc=%s: %s' % (rc, _nvidia_smi.smi_failure_message(out + '\n' + err)) if rc != 0
                  else 'it lists %d GPUs, --query-gpu %d' % (len(matrix), gpu_count))
        rc2, out2, dummy = self.run([smi, 'nvlink', '-s'])
        if rc2 == 0:
            guess = _nvidia_smi.interconnect_from_nvlink_status(_nvidia_smi.parse_nvlink_status(out2), gpu_count)
            self.module.warn('%s topo -m is unusable (%s); interconnect "%s" comes from nvlink -s.'
                             % (smi, reason, guess))
            return matrix, guess
        self.module.warn('%s topo -m and nvlink -s are unusable (%s); interconnect is assumed "pcie".'
                         % (smi, reason))
        return matrix, 'pcie'

    # ---- CUDA -------------------------------------------------------------------------------
    def cuda_facts(self, roots):
        def nvcc_version(nvcc):
            rc, out, dummy = self.run([nvcc, '--version'])
            return out if rc == 0 else ''
        toolkits = _cuda_toolkit.inspect_cuda_toolkits(roots, nvcc_version)
        return {'toolkits': toolkits, 'home': _cuda_toolkit.choose_cuda_home(toolkits)}

    # ---- sockets ----------------------------------------------------------------------------
    def listeners(self):
        listeners = []
        for name, ipv6 in (('tcp', False), ('tcp6', True)):
            text = _procfs.read_text(os.path.join(PROC, 'net', name))
            if text is not None:
                listeners.extend(_procfs.parse_proc_net_tcp(text, ipv6))
        wanted = set(entry['inode'] for entry in listeners if entry['inode'])
        owners = _procfs.map_socket_inodes(PROC, wanted)
        comms = dict((p['pid'], p['comm']) for p in self.processes)
        for entry in listeners:
            entry['pid'] = owners.get(entry['inode'])
            entry['process'] = comms.get(entry['pid']) if entry['pid'] is not None else None
            entry['user'] = _procfs.user_name(entry.get('uid'))
        listeners.sort(key=lambda e: (e['port'], e['proto'], e['host']))
        return listeners

    # ---- the kernel log's Xid reports ----------------------------------------------------------
    def xid_events(self, kmsg=None):
        """The NVIDIA Xid reports of the kernel log (/dev/kmsg, read without waiting); None when it is unreadable
        (not root, a container without CAP_SYSLOG or with dmesg_restrict)."""
        path = kmsg or os.path.join('/dev', 'kmsg')
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            return None
        records = []
        readable = False
        try:
            for dummy in range(100000):
                try:
                    chunk = os.read(fd, 8192)
                except OSError as exc:
                    if exc.errno == errno.EPIPE:     # a record was overwritten while reading: go on
                        continue
                    readable = readable or exc.errno == errno.EAGAIN   # EAGAIN: the end of the log
                    break                             # EPERM (dmesg_restrict), EINVAL (a record too long): stop
                if not chunk:
                    break
                readable = True
                records.append(_gpu_health.parse_kmsg_record(chunk.decode('utf-8', 'replace')))
        finally:
            os.close(fd)
        return _gpu_health.parse_xid_events(records) if readable else None

    # ---- NVSwitch: Fabric Manager and the persistence daemon ---------------------------------
    def fabric_manager(self, init_system):
        """Fabric Manager's unit state and version, and the persistence daemon's unit (NVIDIA's unit names)."""
        facts = {'installed': False, 'version': None, 'load_state': None, 'active_state': None,
                 'persistenced_load_state': None, 'persistenced_active_state': None}
        binary = self.module.get_bin_path('nv-fabricmanager', opt_dirs=['/usr/bin', '/usr/sbin'])
        if binary:
            facts['installed'] = True
            rc, out, err = self.run([binary, '--version'])
            facts['version'] = _gpu_health.parse_fabric_manager_version(out + '\n' + err) if rc == 0 else None
        systemctl = self.module.get_bin_path('systemctl')
        if init_system != 'systemd' or not systemctl:
            return facts
        names = [_gpu_health.FABRIC_MANAGER_UNIT, _gpu_health.PERSISTENCED_UNIT]
        rc, out, dummy = self.run([systemctl, 'show', '--property=Id,LoadState,ActiveState'] + names)
        blocks = _supervisors.parse_systemctl_show_units(out) if rc == 0 else []
        if len(blocks) == len(names):
            fabric, persistenced = blocks
            facts['load_state'], facts['active_state'] = fabric.get('LoadState'), fabric.get('ActiveState')
            facts['persistenced_load_state'] = persistenced.get('LoadState')
            facts['persistenced_active_state'] = persistenced.get('ActiveState')
            facts['installed'] = facts['installed'] or facts['load_state'] == 'loaded'
        return facts

    # ---- units and supervisord --------------------------------------------------------------
    def units(self, init_system, pattern):
        if init_system != 'systemd':
            return []
        units = _supervisors.find_unit_files(UNIT_DIRS, pattern)
        names = []
        for unit in units:
            if '@.' not in unit['name'] and unit['name'] not in names:
                names.append(unit['name'])
        systemctl = self.module.get_bin_path('systemctl')
        if systemctl and names:
            rc, out, dummy = self.run([systemctl, 'show', '--property=Id,ActiveState'] + names)
            blocks = _supervisors.parse_systemctl_show_units(out) if rc == 0 else []
            if len(blocks) == len(names):
                states = dict(zip(names, (b.get('ActiveState') for b in blocks)))
                for unit in units:
                    if states.get(unit['name']):
                        unit['active_state'] = states[unit['name']]
        return units

    def supervisor(self, unit_glob):
        pattern = unit_glob[:-len('.service')] if unit_glob.endswith('.service') else unit_glob
        configs = _supervisors.find_supervisor_configs(ETC)
        programs = []
        for path in configs:
            for name in _supervisors.parse_supervisor_programs(_procfs.read_text(path, ''), pattern):
                if name not in programs:
                    programs.append(name)
        main_files = (os.path.join(ETC, 'supervisord.conf'), os.path.join(ETC, 'supervisor', 'supervisord.conf'))
        main_conf = any(os.path.isfile(path) for path in main_files)
        return {
            'installed': bool(self.module.get_bin_path('supervisord')) or main_conf,
            'running': _host_init.supervisord_running(self.processes),
            'config_files': configs,
            'programs': programs,
        }


def server_facts(module, unit):
    """The SGLang servers running now (see module_utils._server_process.discovery.discover)."""
    try:
        found = discover(unit=unit, include_gpu_holders=False)
    except Exception as exc:  # pylint: disable=broad-except
        module.warn('Could not list SGLang server processes: %s' % to_native(exc))
        return {'servers': [], 'strays': [], 'foreign': []}
    return {'servers': found.servers, 'strays': found.strays, 'foreign': found.foreign}


def server_pythonpath(servers, python):
    """The ``PYTHONPATH`` of the running SGLang server that uses the interpreter ``python``.

    :param servers: the discovered servers (dicts with ``main_pid``, ``executable`` and ``env``), managed ones and
        strays.
    :param python: the interpreter path the facts probe (as given).
    :returns: ``(pythonpath, 'server pid N')`` of the first such server whose environment sets a non-empty
        ``PYTHONPATH``, else ``(None, None)``. Interpreters are compared as given, not symlink-resolved: every venv on
        one base interpreter resolves to the same file, and another venv's server says nothing about this one.
    """
    if not python:
        return None, None
    for server in servers or []:
        if server.get('executable') != python:
            continue
        value = (server.get('env') or {}).get('PYTHONPATH')
        if value:
            return value, 'server pid %s' % server.get('main_pid')
    return None, None


def probe_endpoint(host, port, timeout, scheme='http', validate_certs=True, ca_path=None):
    """TCP connect to host:port, then GET /health (a wildcard host is probed on loopback, see _http.probe_host).

    :param scheme: ``http`` or ``https`` (a server with ``--ssl-certfile``); the URL is ``_http.base_url``'s.
    :param validate_certs: verify the server's certificate (https).
    :param ca_path: CA bundle to verify it against instead of the system's.
    :returns: dict with ``host``, ``port``, ``listening`` (bool), ``health_status`` (HTTP status, or
        None when there was no HTTP answer), ``seconds`` (float, how long /health took) and ``error``.
        A local host is probed without a proxy (``_http.request``).
    """
    result = {'host': host, 'port': port, 'listening': False, 'health_status': None,
              'seconds': None, 'error': None}
    try:
        sock = socket.create_connection((_http.probe_host(host), port), timeout=min(timeout, 5))
        sock.close()
        result['listening'] = True
    except (OSError, socket.error) as exc:
        result['error'] = to_native(exc)
        return result
    answer = _http.request(_http.base_url(host, port, scheme) + '/health', timeout=timeout,
                           validate_certs=validate_certs, ca_path=ca_path)
    result['health_status'] = answer.status
    result['error'] = answer.error
    result['seconds'] = round(answer.elapsed, 3)
    return result


def _take_lock(module, lock):
    """Takes the host's lock (``_host_lock.take``) or fails the module naming the holder; returns what taking it did
    (RETURN ``lock``). The task reports no change: the lock is given back at the end of the host's run."""
    if lock['wait'] < 0 or lock['timeout'] <= 0:
        module.fail_json(msg='lock.wait must be 0 or more and lock.timeout more than 0 seconds (got wait=%s, timeout=%s)'
                         % (lock['wait'], lock['timeout']))
    try:
        out = _host_lock.take_or_fail(module, lock)
    except (IOError, OSError) as exc:
        module.fail_json(msg='The lock %s could not be taken (%s): run as root (become).' % (lock['path'], exc))
    out.pop('diff')
    return out


def main():
    module = AnsibleModule(
        argument_spec=dict(
            python=dict(type='path', required=False),
            pythonpath=dict(type='str', required=False),
            nvidia_smi=dict(type='str', required=False, default='nvidia-smi'),
            nvidia_driver_dir=dict(type='path', required=False),
            cuda_roots=dict(type='list', elements='str', required=False,
                            default=['/usr/local/cuda', '/usr/local/cuda-*']),
            unit_glob=dict(type='str', required=False, default='sglang*.service'),
            unit=dict(type='str', required=False, default='sglang.service'),
            host=dict(type='str', required=False, default='127.0.0.1'),
            port=dict(type='int', required=False, default=30000),
            probe_timeout=dict(type='float', required=False, default=10),
            lock=dict(type='dict', required=False, options=_host_lock.lock_options()),
        ),
        supports_check_mode=True,
    )
    p = module.params
    # The host's lock first (the playbooks pass it): nothing is read while another run holds the host.
    taken = _take_lock(module, p['lock']) if p['lock'] else None
    host = HostFacts(module)

    # The reads that need nothing from the others run side by side with them (each nvidia-smi call takes a few
    # hundred milliseconds on an 8-GPU host; the endpoint probe waits for the server's answer).
    gpus = _concurrent.Background(host.gpu_facts, p['nvidia_smi'], p['nvidia_driver_dir'] or os.path.join(PROC, 'driver', 'nvidia'))
    cuda = _concurrent.Background(host.cuda_facts, p['cuda_roots'])
    endpoint = _concurrent.Background(probe_endpoint, p['host'], p['port'], p['probe_timeout'])
    facts = {}
    facts['init'] = host.init_facts()
    found = server_facts(module, p['unit'])
    if p['pythonpath'] is not None:
        pythonpath, pythonpath_from = p['pythonpath'], 'parameter'
    else:
        pythonpath, pythonpath_from = server_pythonpath(found['servers'], p['python'])
    facts['python'] = host.python_facts(p['python'], pythonpath, pythonpath_from)
    facts.update(gpus.result())
    facts['cuda'] = cuda.result()
    facts['listeners'] = host.listeners()
    facts['network'] = _network.read_network(PROC)
    facts['units'] = host.units(facts['init']['system'], p['unit_glob'])
    facts['fabric_manager'] = host.fabric_manager(facts['init']['system'])
    facts['xid_events'] = host.xid_events() if facts['gpus'] or facts['lost_gpus'] else []
    facts['supervisor'] = host.supervisor(p['unit_glob'])

    facts.update(found)
    facts['endpoint'] = endpoint.result()
    facts['lock_run_id'] = p['lock']['run_id'] if taken is not None and not module.check_mode else ''
    facts['read_as_root'] = os.geteuid() == 0

    result = dict(changed=False, ansible_facts={'inferops_sglang': facts})
    if taken is not None:
        result['lock'] = taken
    module.exit_json(**result)


if __name__ == '__main__':
    main()
