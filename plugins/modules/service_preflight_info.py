#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: service_preflight_info
short_description: Read what the SGLang service pre-flight needs from the host, and check it, in one call
version_added: 0.1.0
description:
  - The remote half of the pre-flight of the role C(inferops.sglang.service), in one round trip. It reads the
    SGLang C(--config) files (O(config), O(adopted_config)), looks at each model directory's C(config.json)
    (O(model_paths)), looks up the service user (O(user); its passwd entry and groups, as C(getent passwd) and
    C(id -Gn) print them), tries as that user whether it can read the interpreter and the models (C(runuser -u USER --
    test -r PATH), as C(nobody) for a user that does not exist yet), lists the GPU device nodes (C(/dev/nvidia*)) when
    O(devices) is set, and measures the free space of the working directory's file system.
  - It also reads each model's C(config.json) (O(model_refs), a local directory or a Hugging Face id through the hub
    cache O(hub_cache)) and looks up its architectures in the installed SGLang's model registry and Transformers'
    auto classes (O(sglang_site)), reading their source files without importing them; the role's plan checks them
    (tp against the heads, architecture, quantization).
  - Every failed check is returned at once in RV(failures); the module itself does not fail on them, so that the
    role can report them together with its own checks, before anything on the host changes.
  - Read-only; never reports a change. The content of the C(--config) files may hold secrets (C(api-key)), so run the
    task with C(no_log).
author:
  - inferops.sglang developers (@inferops)
options:
  host:
    description: The host's name as the messages print it (the inventory name).
    type: str
    default: this host
  config:
    description:
      - Absolute path of the server's SGLang C(--config) file (C(service_server_args.config)); empty for none.
      - A file that cannot be read is a failure (SGLang would refuse to start).
    type: str
    default: ''
  adopted_config:
    description:
      - Absolute path of the C(--config) file of the hand-started server being adopted; empty for none.
      - Only read; a file that cannot be read is not a failure here (C(readable) is false in RV(adopted_config)).
    type: str
    default: ''
  model_paths:
    description: Absolute paths of the model directories (C(model-path), C(speculative-draft-model-path)).
    type: list
    elements: str
    default: []
  model_refs:
    description:
      - C(model-path) and C(speculative-draft-model-path) as given, whose C(config.json) is read into
        RV(model_configs). An absolute path is read as it is, a relative one from O(working_directory); a Hugging Face
        id that is no local directory is looked up in O(hub_cache), else skipped with a note.
    type: list
    elements: str
    default: []
  model_revision:
    description: The C(--revision) of the model, looked up in the hub cache (C(refs/REVISION)); empty for C(main).
    type: str
    default: ''
  hub_cache:
    description: The server's Hugging Face hub cache directory (C(HF_HUB_CACHE), C(HF_HOME)/hub, C(~/.cache/huggingface/hub)); empty for none.
    type: str
    default: ''
  sglang_site:
    description:
      - The site-packages directories (glob patterns allowed) of the server's interpreter, where C(sglang/srt/models)
        and C(transformers/models/auto/modeling_auto.py) are looked for (RV(registry)).
    type: list
    elements: str
    default: []
  interpreter:
    description: The service's interpreter (the first word of its command line), which the service user must read.
    type: str
    default: ''
  user:
    description:
      - The service user. C(root) is not looked up, and nothing is tried as root (it reads everything).
    type: str
    default: root
  user_create:
    description: Whether the role creates the service user when it is missing (then a missing user is no failure).
    type: bool
    default: false
  cache_dir:
    description:
      - The service's cache directory (C(service_cache_dir)). A missing working directory that is this directory is
        no failure (the role creates it); the message on a missing user names it as the home the role would give.
    type: str
    default: ''
  working_directory:
    description: The server's working directory; it must exist unless it is O(cache_dir).
    type: str
    required: true
  min_free_disk_gib:
    description:
      - Free space (GiB, 1024^3 bytes) that the working directory's file system must have for caches (what an
        unprivileged user may use, C(df -Pk)'s Available). For a directory not created yet, its nearest existing parent
        is measured.
    type: float
    default: 0
  devices:
    description: List the GPU device nodes (C(/dev/nvidia*)) in RV(gpu_devices).
    type: bool
    default: false
  paths:
    description:
      - The files and directories the role renders (its unit or program, environment file, logging configuration,
        directories), read into RV(paths) so that the role can tell, with the filter
        P(inferops.sglang.rendered_current#filter), that a converged host needs neither a verify nor a write.
      - Each is expanded (C(~), C($VAR)) as M(inferops.sglang.service_files) expands it; RV(paths) is keyed by the
        expanded path, so a path given unexpanded counts as not read (not current).
    type: list
    elements: path
    default: []
  unit:
    description:
      - The systemd unit of the service (C(sglang.service)); empty where PID 1 is not systemd. Read into RV(unit) -
        C(systemctl is-enabled UNIT) and C(systemd-analyze security UNIT).
    type: str
    default: ''
  known_good_dir:
    description:
      - The known-good store to read as M(inferops.sglang.known_good_info) reads it (manifest; live files compared with
        the copies kept, by checksum), into RV(known_good); empty reads none.
    type: path
    default: ''
  args_check:
    description:
      - The command-line check the role would run next (M(inferops.sglang.server_args_check) with the role's options),
        looked up in that module's memo on the host (issue 26), see RV(args_check). The lookup runs the interpreter once
        without importing SGLang (the memo key's inputs - the C(sglang) distribution's C(RECORD), the installed
        distributions, the environment's names) and reads one file; it never runs the parser and never writes the memo.
    type: dict
    suboptions:
      python:
        description: The interpreter that runs the server (absolute path).
        type: path
        required: true
      args:
        description: The server arguments, in order (they may hold secrets - masked in the result, which holds their digest only).
        type: list
        elements: str
        default: []
      env_names:
        description: The C(SGLANG_*) names of the server's environment (O(inferops.sglang.server_args_check#module:env_names)).
        type: list
        elements: str
        default: []
attributes:
  check_mode:
    support: full
    description: Reads the same in check mode; it never changes anything.
  diff_mode:
    support: none
    description: Nothing is changed, so there is no diff.
notes:
  - The service user's access is tried with C(runuser) (util-linux), which needs root; without it every path counts
    as unreadable.
seealso:
  - name: The role's troubleshooting page
    description: One entry for each check name in RV(failures).
    link: https://github.com/inferops/sglang/blob/main/docs/docsite/rst/troubleshooting.rst
'''

EXAMPLES = r'''
- name: Look at the host for the service (every stat and check in one call)
  inferops.sglang.service_preflight_info:
    host: "{{ inventory_hostname }}"
    config: /etc/sglang/server.yaml
    model_paths: [/models/llama]
    interpreter: /opt/sglang/bin/python3
    user: sglang
    cache_dir: /var/cache/sglang
    working_directory: /var/cache/sglang
    min_free_disk_gib: 10
    devices: true
  register: __preflight
  no_log: true

- name: Stop on every failure at once
  ansible.builtin.assert:
    that: __preflight.failures | length == 0
    fail_msg: "{% for item in __preflight.failures %}[{{ item.check }}] {{ item.message }} {% endfor %}"
'''

RETURN = r'''
failures:
  description:
    - Every failed check, in a fixed order; empty when all pass. C(check) is the check's name (one troubleshooting
      entry each), C(message) names the cause and the fix.
  returned: always
  type: list
  elements: dict
  contains:
    check:
      description: The check's name, as the pre-flight prints it in brackets in front of the message.
      type: str
      sample: Check the model directories
    message:
      description: What failed, its cause and the fix.
      type: str
      sample: "/models/x/config.json does not exist or cannot be read: /models/x is not a model directory. ..."
  sample: [{"check": "Check the model directories",
            "message": "/models/x/config.json does not exist or cannot be read: /models/x is not a model directory. ..."}]
config:
  description:
    - The O(config) file. C(content) is its text (UTF-8; undecodable bytes replaced), V(null) when it cannot be read;
      C(error) the OS error then. C(path) is empty when O(config) is.
  returned: always
  type: dict
  sample: {"path": "/etc/sglang/server.yaml", "readable": true, "content": "port: 8000\n", "error": null}
adopted_config:
  description: The O(adopted_config) file, as RV(config).
  returned: always
  type: dict
  sample: {"path": "", "readable": false, "content": null, "error": null}
models:
  description: Each of O(model_paths) with whether its C(config.json) exists and is readable by the module's user.
  returned: always
  type: list
  elements: dict
  sample: [{"path": "/models/llama", "exists": true, "readable": true}]
model_configs:
  description:
    - Each of O(model_refs) with the C(config.json) read (C(path), V(null) when none), the keys the checks use of it
      (C(config), with architectures, heads, KV heads, C(kv_lora_rank), the C(quant_method) of C(quantization_config) and
      C(compression_config), the same of C(text_config); V(null) when not read) and C(note), why it was not read.
  returned: always
  type: list
  elements: dict
  sample: [{"ref": "/models/llama", "path": "/models/llama/config.json", "note": "",
            "config": {"architectures": ["LlamaForCausalLM"], "num_attention_heads": 64, "num_key_value_heads": 8}}]
registry:
  description:
    - Whether the installed SGLang's model registry (C(sglang), the C(EntryClass) names of C(sglang/srt/models/*.py)) and
      Transformers' auto classes (C(transformers)) name each architecture of RV(model_configs); V(null) where the
      package was not found (then nothing is checked against it). C(sglang_models) and C(transformers_auto) are the
      paths read.
  returned: always
  type: dict
  sample: {"sglang_models": "/opt/env/lib/python3.12/site-packages/sglang/srt/models",
           "sglang": {"LlamaForCausalLM": true}, "transformers_auto": null, "transformers": null}
user:
  description:
    - The service user's passwd entry (C(uid), C(gid), C(home), C(shell)) and C(groups), group names with the primary
      group first (as C(id -Gn) prints them). C(exists) false for a missing user (the other fields V(null), no groups).
    - root is not looked up (C(exists) true, C(groups) empty).
  returned: always
  type: dict
  sample: {"name": "sglang", "exists": true, "uid": 998, "gid": 998, "home": "/var/cache/sglang",
           "shell": "/usr/sbin/nologin", "groups": ["sglang", "video"]}
reader:
  description: The account the reads were tried as (the user, C(nobody) for one not created yet); V(null) for root.
  returned: always
  type: str
  sample: sglang
unreadable:
  description: The interpreter and model C(config.json) paths that RV(reader) cannot read (a model found in the Hugging
    Face cache O(hub_cache) by the C(config.json) of its snapshot).
  returned: always
  type: list
  elements: str
  sample: [/root/venv/bin/python3]
gpu_devices:
  description:
    - The GPU device nodes, directories left out, links not followed, sorted by path; empty unless O(devices).
      C(mode) as C(0666), C(pw_name)/C(gr_name) the owner and group (numbers when they have no name).
  returned: always
  type: list
  elements: dict
  sample: [{"path": "/dev/nvidia0", "mode": "0666", "pw_name": "root", "gr_name": "root"}]
working_directory:
  description: O(working_directory) and whether it exists.
  returned: always
  type: dict
  sample: {"path": "/root", "exists": true}
paths:
  description:
    - Each of O(paths) as it is now (C(inferops.sglang) C(_managed_files.path_state)) - C(exists), C(kind) (C(file),
      C(directory), C(other)), C(owner), C(group) (names; C(uid), C(gid) the numbers), C(mode) (C(0644)) and, for a
      regular file, C(checksum) (SHA-1 of its content, V(null) when it cannot be read).
  returned: always
  type: dict
  sample: {"/etc/sglang/sglang.env": {"exists": true, "kind": "file", "owner": "root", "uid": "0", "group": "root",
           "gid": "0", "mode": "0600", "checksum": "da39a3ee5e6b4b0d3255bfef95601890afd80709"}}
unit:
  description:
    - The O(unit) as systemd has it now - C(enabled_now), what C(systemctl is-enabled) printed (empty when it printed
      nothing); C(enabled), whether that counts as enabled (as for M(inferops.sglang.service_files)); C(exposure), the
      output of C(systemd-analyze security --no-pager) (empty without systemd-analyze); C(status), the unit's
      C(LoadState), C(ActiveState), C(SubState), C(MainPID) and C(NRestarts) as C(systemctl show) prints them (text,
      the names M(ansible.builtin.systemd_service) returns in its C(status)), empty when systemctl fails, the unit is
      not loaded or a property is missing (C(NRestarts) before systemd 235). Empty without O(unit) or C(systemctl).
  returned: always
  type: dict
  sample: {"name": "sglang.service", "enabled_now": "enabled", "enabled": true, "exposure": "...Overall exposure level for sglang.service: 4.2 OK",
           "status": {"LoadState": "loaded", "ActiveState": "active", "SubState": "running", "MainPID": "4242", "NRestarts": "0"}}
known_good:
  description:
    - With O(known_good_dir), the store as M(inferops.sglang.known_good_info) returns it - C(exists), C(manifest),
      C(differ) (C(_known_good.read_store)); empty without O(known_good_dir), or when the manifest cannot be read or
      parsed (that module then reads it again and fails with the reason).
  returned: always
  type: dict
  sample: {"exists": true, "manifest": {"schema": 1, "source": "cutover", "unit": "sglang.service"}, "differ": []}
args_check:
  description:
    - With O(args_check) - C(request), the SHA-256 of the interpreter, arguments and names asked (so that the role can
      tell the lookup is of the check it would run; C(_args_check_cache.request_digest)), and C(result), the memo's
      result as M(inferops.sglang.server_args_check) would return it (C(cached) true), or V(null) when the memo holds
      no verdict for it that settles the check (none stored, a rejection, an abbreviation or deprecation to warn
      about, an interpreter that cannot be keyed); C(duration_seconds), the lookup's time. Empty without
      O(args_check).
  returned: always
  type: dict
  sample: {"request": "5d41402abc4b2a76b9719d911017c592ae1f0b5f5fcb1f7c8bd1c2a3f07a3b4e",
           "result": {"checked": true, "valid": true, "sglang_version": "0.5.9", "cached": true, "env_names_unread": []},
           "duration_seconds": 0.108}
disk:
  description:
    - The directory measured (O(working_directory) or its nearest existing parent) and its free space in KiB
      (V(null) when it cannot be measured).
  returned: always
  type: dict
  sample: {"path": "/root", "free_kib": 52428800}
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inferops.sglang.plugins.module_utils import _args_check_cache as memo
from ansible_collections.inferops.sglang.plugins.module_utils import _known_good, _rendered_files, _service_preflight
from ansible_collections.inferops.sglang.plugins.module_utils._secrets import secret_values


def read_unit(module, unit):
    """RV(unit): what systemctl and systemd-analyze say of UNIT now ({} without UNIT or systemctl)."""
    systemctl = module.get_bin_path('systemctl') if unit else None
    if not systemctl:
        return {}
    rc, out, dummy_err = module.run_command([systemctl, 'is-enabled', unit], check_rc=False)
    analyze = module.get_bin_path('systemd-analyze')
    exposure = module.run_command([analyze, 'security', '--no-pager', unit], check_rc=False)[1] if analyze else ''
    shown = module.run_command([systemctl, 'show', '--property=' + ','.join(STATUS_PROPERTIES), unit], check_rc=False)
    return {'name': unit, 'enabled_now': (out or '').strip(), 'enabled': _rendered_files.is_enabled(rc, out),
            'exposure': exposure or '', 'status': unit_status(shown[0], shown[1])}


# The properties of RV(unit.status), as ansible.builtin.systemd_service's status names them.
STATUS_PROPERTIES = ('LoadState', 'ActiveState', 'SubState', 'MainPID', 'NRestarts')


def unit_status(rc, out):
    """RV(unit.status) from C(systemctl show --property=...)'s exit status RC and output OUT (NAME=VALUE lines): the
    properties of STATUS_PROPERTIES, as text; {} when systemctl failed, a property is missing, or the unit is not loaded
    (a unit systemd does not know has no status to keep)."""
    if rc != 0:
        return {}
    status = dict(line.split('=', 1) for line in (out or '').splitlines() if '=' in line)
    if any(name not in status for name in STATUS_PROPERTIES) or status['LoadState'] != 'loaded':
        return {}
    return dict((name, status[name]) for name in STATUS_PROPERTIES)


def read_known_good(module, directory):
    """RV(known_good): the store as known_good_info reads it; {} without DIRECTORY or when it cannot be read."""
    if not directory:
        return {}
    try:
        return _known_good.read_store(directory, module.sha1)
    except (IOError, OSError, ValueError):
        return {}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            host=dict(type='str', default='this host'),
            config=dict(type='str', default=''),
            adopted_config=dict(type='str', default=''),
            model_paths=dict(type='list', elements='str', default=[]),
            model_refs=dict(type='list', elements='str', default=[]),
            model_revision=dict(type='str', default=''),
            hub_cache=dict(type='str', default=''),
            sglang_site=dict(type='list', elements='str', default=[]),
            interpreter=dict(type='str', default=''),
            user=dict(type='str', default='root'),
            user_create=dict(type='bool', default=False),
            cache_dir=dict(type='str', default=''),
            working_directory=dict(type='str', required=True),
            min_free_disk_gib=dict(type='float', default=0),
            devices=dict(type='bool', default=False),
            paths=dict(type='list', elements='path', default=[]),
            unit=dict(type='str', default=''),
            known_good_dir=dict(type='path', default=''),
            args_check=dict(type='dict', options=dict(
                python=dict(type='path', required=True),
                args=dict(type='list', elements='str', default=[]),
                env_names=dict(type='list', elements='str', default=[]),
            )),
        ),
        supports_check_mode=True,
    )

    def run(argv):
        # Without runuser nothing can be tried as the user: every path counts as unreadable (as a failed runuser).
        if module.get_bin_path(argv[0]) is None:
            return 127
        rc, dummy_out, dummy_err = module.run_command(argv, check_rc=False)
        return rc

    seen = _service_preflight.observe(module.params, run)
    check = module.params['args_check']
    args_check = {}
    if check:
        # Secret values among the arguments (--api-key) are masked in what the module returns, its invocation included.
        module.no_log_values.update(secret_values(check['args']))
        args_check = memo.lookup(lambda argv, **kwargs: module.run_command(argv, handle_exceptions=False, **kwargs),
                                 check['python'], check['args'], check['env_names'])
    module.exit_json(changed=False, failures=_service_preflight.failures(seen, module.params),
                     unit=read_unit(module, module.params['unit']), args_check=args_check,
                     known_good=read_known_good(module, module.params['known_good_dir']), **seen)


if __name__ == '__main__':
    main()
