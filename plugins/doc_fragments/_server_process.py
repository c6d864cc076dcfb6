# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this doc fragment is private to the inferops.sglang collection; it can change at any time.

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


class ModuleDocFragment(object):

    # The options inferops.sglang.server_process and server_process_info share (one argument spec:
    # module_utils/_server_process/module.py SHARED_ARGUMENT_SPEC). Both find servers the same way.
    DOCUMENTATION = r'''
options:
  port:
    description:
      - Only servers listening on this port count (from their C(--port), C(--port=N) or C(--config) file;
        SGLang's default is 30000). M(inferops.sglang.server_process_info) reports only those and
        M(inferops.sglang.server_process) stops only those.
      - Orphaned entries have no known port and always count - a group of orphans cannot serve anything and
        holds GPU memory any new server needs; use O(exclude_pids) to spare them. An orphan group attached to
        a server follows that server.
    type: int
  unit:
    description:
      - The systemd unit that runs the server for good. Processes in this unit's cgroup are managed - never
        stray, never stopped.
      - A server run by the collection's supervisord (where PID 1 is not systemd) is managed whatever this
        option says; how it is recognised is in the description of M(inferops.sglang.server_process_info).
      - A name without a unit type suffix gets C(.service).
      - Only processes of this module's own container count - a unit of that name inside another container (its
        own PID namespace, or another container's cgroup) makes its processes foreign, not managed.
    type: str
    default: sglang.service
  exclude_pids:
    description:
      - Processes to leave alone, with their descendants - never reported as stray, never signalled. A server
        whose main process is excluded is left alone entirely (it is listed in RV(ignored)).
    type: list
    elements: int
    default: []
  include_gpu_holders:
    description:
      - Scan the open files of every process for O(gpu_device_glob) to find the GPU holders related to a stray
        server - those that share its cgroup or its process group. They belong to that server (and are stopped
        with it by M(inferops.sglang.server_process)); the other holders are reported in
        RV(gpu_holders_unrelated) and never stopped.
      - Descendants of a stray server belong to it either way, and the devices its processes hold are
        reported either way.
      - The open files of orphaned SGLang workers and of other containers' SGLang processes are read either way -
        a GPU device open is the evidence an orphan needs beyond its title.
      - Both modules have the same default, so that both report the same strays.
    type: bool
    default: true
  gpu_device_glob:
    description:
      - Shell pattern of the device files that mean "uses a GPU" when a process has one open; C(*) also
        matches C(/), so the default covers C(/dev/nvidia-caps/*) too.
      - Only files whose name is C(nvidia<N>), C(renderD<N>) or C(card<N>) identify one GPU (used to attach
        orphans to the server on the same GPU); C(/dev/nvidiactl) and C(/dev/nvidia-uvm) do not.
      - Any matching file open is evidence that an orphaned C(sglang::) worker with a Python interpreter is
        SGLang's (a title alone is not).
    type: str
    default: /dev/nvidia*
'''
