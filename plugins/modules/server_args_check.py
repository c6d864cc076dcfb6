#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: server_args_check
short_description: Check an SGLang server command line with the target's own SGLang argument parser
version_added: 0.1.0
description:
  - Runs a short Python program in the interpreter that the SGLang service will run (O(python)) and
    parses the server arguments (O(args)) with the argument parser of the SGLang installed there,
    C(argparse.ArgumentParser(prog="sglang serve")) filled by
    C(sglang.srt.server_args.ServerArgs.add_cli_args), as C(prepare_server_args) builds it for
    C(python -m sglang.launch_server) and C(sglang serve). When O(args) holds C(--config FILE),
    the YAML file on the target is merged first, by SGLang's own C(ConfigArgumentMerger), as SGLang does.
  - The check is parse-only. It loads no model, reads no model files (model paths need not exist),
    does not construct or resolve C(ServerArgs) (in SGLang 0.5.23 C(ServerArgs.__post_init__) does nothing and
    the validation beyond argparse lives in C(ServerArgs.resolve_once), which detects the platform and reads the
    model configuration), and, with O(hide_gpus), does not initialise CUDA. Importing C(sglang.srt.server_args)
    imports torch, which takes seconds - how many depends on the host (its disks, its CPUs, its load).
  - Meant to run before a running server is stopped, so that a command line the installed SGLang rejects
    is found while the old server still serves. For example SGLang 0.5.23 rejects C(--cuda-graph-max-bs)
    as ambiguous (it could match C(--cuda-graph-max-bs-decode) and C(--cuda-graph-max-bs-prefill)); which
    release introduced that is not known here, only that 0.5.23 rejects it.
  - When the parser rejects the command line the module fails, naming the offending flag and quoting the
    parser's message verbatim.
  - The values of secret flags (C(--api-key), C(--admin-api-key), C(--ssl-keyfile-password), an inline JSON
    C(--watermark-config), any flag named with key, token, secret or password, any prefix of a secret flag
    such as C(--api); the rule of the P(inferops.sglang.secret_flags#filter) filter), of every flag that the
    installed SGLang's parser resolves to such a flag (argparse abbreviations, aliases; the values a C(--config)
    file adds included), and the passwords of URLs (C(http://user:password@host)) are never echoed in messages
    or return values. The module does not log its
    invocation to the target's syslog, because O(args) may hold such values.
  - Read-only; never reports a change.
author:
  - inferops.sglang developers (@inferops)
options:
  python:
    description:
      - Absolute path of the Python interpreter that the service will run, for example C(/root/ml-env/bin/python3).
      - The check must use the same interpreter, and so the same SGLang, as the service.
    type: path
    required: true
  args:
    description:
      - The server arguments, one argv token per item, as they follow C(-m sglang.launch_server) or
        C(sglang serve) on the command line (without the interpreter and without C(-m sglang.launch_server)).
      - Passed to the interpreter as JSON on standard input, never on its command line.
      - C(sglang serve)'s own C(--model-type) selector is not a server argument and is rejected.
    type: list
    elements: str
    default: []
  fallback:
    description:
      - What to do when the check cannot run because C(sglang.srt.server_args) does not import in O(python)
        (SGLang missing or broken) or O(python) does not exist.
      - V(fail) fails the task.
      - V(skip) returns RV(checked=false) and a warning.
      - A command line that the parser rejects always fails; O(fallback) does not apply to it.
    type: str
    choices: [fail, skip]
    default: fail
  environment:
    description:
      - Environment variables to set for the check, normally the service's own environment.
      - Some of SGLang's choices depend on the environment (for example C(SGLANG_KV_CANARY_ENABLE_TOKEN_ORACLE)
        adds a C(--sampling-backend) choice in 0.5.23).
    type: dict
    default: {}
  load_plugins:
    description:
      - Call C(sglang.srt.plugins.load_plugins()) before building the parser, as C(sglang.launch_server) does.
        Plugins may register parser choices (for example reasoning parsers).
      - Off by default because plugins run arbitrary code, and platform plugins may touch devices.
    type: bool
    default: false
  hide_gpus:
    description:
      - Run the check with C(CUDA_VISIBLE_DEVICES) set to the empty string, after O(environment), so that it
        cannot touch a GPU that the running server is using.
      - Importing C(sglang.srt.server_args) of SGLang 0.5.23 on a CUDA host initialises CUDA on every visible
        GPU (C(sglang.srt.platforms) calls C(torch.cuda.get_device_name()) while resolving the platform),
        opening the C(/dev/nvidia*) devices. With no visible GPU it does not, and the parser was found to be
        the same (561 option strings, same actions, choices and nargs) on an H200 host with a CUDA 13 torch.
      - Set to V(false) only if a future SGLang builds its parser differently without GPUs.
    type: bool
    default: true
  timeout:
    description:
      - Seconds the check may take, import of SGLang and torch included. On expiry the module fails.
    type: int
    default: 300
  env_names:
    description:
      - Environment variable names (for example the C(SGLANG_*) names of the service's environment) to look up in
        the installed SGLang; those that no C(.py) source of the installed C(sglang) package mentions are returned
        in RV(env_names_unread). A name removed from SGLang is gone from its sources, so such a name is one this
        version does not read.
      - Decided from the package on disk, not from a table kept by hand, and only when SGLang imports.
    type: list
    elements: str
    default: []
  cache:
    description:
      - Memoize the check on the target (issue 26). Its result is stored under a SHA-256 digest of every input it
        reads - the C(RECORD) of the C(sglang) distribution that O(python) imports (the installed files and their
        hashes), the names and versions of the other installed distributions, O(args), the environment's names (and
        the values of C(PYTHON*), C(SGLANG*), C(SGL_*), C(CUDA_VISIBLE_DEVICES), C(LD_LIBRARY_PATH), C(LD_PRELOAD)),
        O(python) (path, resolved path, version), the content of a C(--config) file O(args) names, O(hide_gpus),
        O(env_names) and the check program itself - and a later call with the same digest returns it
        (RV(cached=true)) without importing SGLang; finding the digest's inputs takes one short interpreter run.
      - Only definite verdicts of the parser (accepted, or rejected with its message) are stored; a check that could
        not run (no interpreter, SGLang does not import, timeout) is not, nor one with O(load_plugins), nor one
        whose C(sglang) has no C(RECORD), nor one with a C(--config=FILE) token.
      - A file of the installed C(sglang) edited in place after installation is not seen (its C(RECORD) is
        unchanged); remove O(cache_dir) after such an edit.
      - In check mode the memo is read, never written.
    type: bool
    default: true
  cache_dir:
    description:
      - Directory of the memo, one JSON file (mode 0600) per digest, at most 64 (the least recently used go).
        Created with mode 0700; not used when another user owns it or group or others may read or write it.
      - The files hold the module's result (secret values already masked), never O(args) or O(environment).
    type: path
    default: /var/cache/inferops-sglang/server-args-check
attributes:
  check_mode:
    support: full
    description: Runs the same read-only check in check mode.
  diff_mode:
    support: none
    description: Nothing is changed, so there is no diff.
notes:
  - A flag accepted only as an abbreviation (argparse's prefix matching, for example C(--tp) for C(--tp-size) in
    SGLang 0.5.23) is reported in RV(abbreviations) with a warning; a later SGLang that adds another flag with
    the same prefix turns it into an ambiguity error, which is what happened to C(--cuda-graph-max-bs).
  - Deprecation messages that the parser logs while parsing, and flags whose help text says they are
    deprecated, are returned in RV(parser_warnings) and RV(deprecated).
seealso:
  - name: SGLang server arguments
    description: SGLang's documentation of its server arguments.
    link: https://docs.sglang.ai/advanced_features/server_arguments.html
'''

EXAMPLES = r'''
- name: Check the new command line with the target's own SGLang before stopping anything
  inferops.sglang.server_args_check:
    python: /root/ml-env/bin/python3
    args:
      - --model-path
      - /shared/kimi-k2.5-int4
      - --tp
      - "8"
      - --cuda-graph-max-bs-decode
      - "128"
  register: __sglang_args_check

- name: Check a command line rendered from a mapping, with the unit's environment
  inferops.sglang.server_args_check:
    python: "{{ sglang_python }}"
    args: "{{ _sglang_argv }}"
    environment: "{{ sglang_environment }}"

- name: On hosts that may not have SGLang yet, skip the check instead of failing
  inferops.sglang.server_args_check:
    python: /opt/sglang/bin/python3
    args: [--model-path, /models/llama]
    fallback: skip
  register: __sglang_args_check

- name: Say when the check could not run
  ansible.builtin.debug:
    msg: "not checked: {{ __sglang_args_check.message }}"
  when: not __sglang_args_check.checked
'''

RETURN = r'''
checked:
  description: Whether the command line was parsed by SGLang's parser. V(false) only with O(fallback=skip).
  returned: always
  type: bool
  sample: true
valid:
  description:
    - Whether SGLang's parser accepted the command line. V(null) when RV(checked) is V(false).
    - When V(false) the task fails; the value is then in the failed result.
  returned: always
  type: bool
  sample: true
sglang_version:
  description: Version of the C(sglang) distribution installed for O(python) (from its metadata), V(null) when none is.
  returned: always
  type: str
  sample: 0.5.23
python_version:
  description: Version of O(python). V(null) when it did not run.
  returned: always
  type: str
  sample: 3.11.2
parser:
  description: The parser that was used.
  returned: always
  type: str
  sample: sglang.srt.server_args.ServerArgs.add_cli_args
flag:
  description:
    - The offending flag as written in O(args) (without any C(=value)), when it can be told from the parser's
      message; for an argument error on an abbreviation, the abbreviation written.
    - V(null) when the command line is valid, not checked, or the message names no flag.
  returned: always
  type: str
  sample: --cuda-graph-max-bs
message:
  description:
    - The parser's error message, verbatim (values of secret flags replaced by C(********)).
    - When RV(checked) is V(false), why the check could not run. V(null) when valid.
  returned: always
  type: str
  sample: "ambiguous option: --cuda-graph-max-bs could match --cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill"
abbreviations:
  description: Flags in O(args) that are not SGLang option names but unambiguous prefixes of one, mapped to it.
  returned: always
  type: dict
  sample: {"--tp": "--tp-size"}
deprecated:
  description: Flags in O(args) whose help text in this SGLang says they are deprecated, mapped to that help text.
  returned: always
  type: dict
  sample:
    "--enable-flashinfer-allreduce-fusion": >-
      (Deprecated: use --flashinfer-allreduce-fusion-backend=auto) Enable FlashInfer allreduce fusion with Residual RMSNorm.
parser_warnings:
  description: Warnings that SGLang logged or raised while parsing (for example for deprecated flags).
  returned: always
  type: list
  elements: str
  sample: []
env_names_unread:
  description:
    - The names of O(env_names) that appear in no C(.py) file of the installed C(sglang) package (the directories of
      C(sglang.__path__)), in the order given; V([]) when every name appears or none was given.
    - V(null) when RV(checked) is V(false).
  returned: always
  type: list
  elements: str
  sample: [SGLANG_ENABLE_SPEC_V2]
duration_seconds:
  description: Wall-clock seconds the check took, interpreter start and SGLang import included.
  returned: always
  type: float
  sample: 4.213
cached:
  description:
    - Whether the result was read from the memo in O(cache_dir) (the check program did not run; RV(duration_seconds)
      is then the time taken to digest its inputs).
  returned: always
  type: bool
  sample: false
rc:
  description: Exit status of the check program (negative for a signal, -14 when O(timeout) expired).
  returned: when the check program gave no result
  type: int
  sample: -14
stderr_tail:
  description: The last 15 lines the check program wrote on standard error.
  returned: when the check program gave no result
  type: str
  sample: "Segmentation fault"
'''

import itertools
import json
import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.inferops.sglang.plugins.module_utils import _args_check_cache as memo
from ansible_collections.inferops.sglang.plugins.module_utils._args_check_program import CHECK_PROGRAM, PARSER_NAME, RESULT_MARK
from ansible_collections.inferops.sglang.plugins.module_utils._secrets import mask_values, secret_values
from ansible_collections.inferops.sglang.plugins.module_utils._server_args import flag_from_parser_message
from ansible_collections.inferops.sglang.plugins.module_utils._sglang_venvs import names_absent_from_texts, package_sources


def _result_base():
    return dict(
        changed=False,
        checked=False,
        valid=None,
        sglang_version=None,
        python_version=None,
        parser=PARSER_NAME,
        flag=None,
        message=None,
        abbreviations={},
        deprecated={},
        parser_warnings=[],
        env_names_unread=None,
        duration_seconds=0.0,
        cached=False,
    )


# What the memo stores of a result (the verdict and what was returned with it, not this call's time).
STORED = memo.STORED


def _memo_key(module, python, args, environ):
    """The memo's digest of this check's inputs (see _args_check_cache), or None when it is not memoized."""
    params = module.params
    if not params['cache'] or params['load_plugins']:
        return None
    return memo.memo_key(module.run_command, python, args, environ, CHECK_PROGRAM, params['hide_gpus'],
                         params['env_names'])


def _finish(module, result):
    """Fails on a rejected command line, else warns about abbreviations and deprecations and exits."""
    version = result['sglang_version']
    who = "SGLang %s's own argument parser" % version if version else "The installed SGLang's own argument parser"
    if not result['valid']:
        target = result['flag'] or 'the command line'
        module.fail_json(msg='%s rejects %s: %s' % (who, target, result['message'] or ''), **result)
    for token, option in sorted(result['abbreviations'].items()):
        module.warn('%s is accepted only as an abbreviation of %s by %s; write %s, since a later SGLang '
                    'that adds another flag starting with %s makes it ambiguous' % (token, option, who, option, token))
    for option, help_text in sorted(result['deprecated'].items()):
        module.warn('%s is deprecated in SGLang %s: %s' % (option, version or '(unknown version)', help_text))
    module.exit_json(**result)


def _cannot_check(module, result, why):
    result['message'] = why
    if module.params['fallback'] == 'skip':
        module.warn('SGLang server arguments not checked: %s' % why)
        module.exit_json(**result)
    module.fail_json(msg='Cannot check the SGLang server arguments: %s' % why, **result)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            python=dict(type='path', required=True),
            args=dict(type='list', elements='str', default=[]),
            fallback=dict(type='str', choices=['fail', 'skip'], default='fail'),
            environment=dict(type='dict', default={}),
            load_plugins=dict(type='bool', default=False),
            hide_gpus=dict(type='bool', default=True),
            timeout=dict(type='int', default=300),
            env_names=dict(type='list', elements='str', default=[]),
            cache=dict(type='bool', default=True),
            cache_dir=dict(type='path', default=memo.CACHE_DIR),
        ),
        supports_check_mode=True,
        # args may hold --api-key values: do not write the invocation to the target's syslog.
        no_log=True,
    )
    args = [str(a) for a in module.params['args']]
    hidden = secret_values(args)
    module.no_log_values.update(hidden)

    python = module.params['python']
    result = _result_base()

    if not os.path.isabs(python):
        module.fail_json(msg='python must be an absolute path, got %s' % python, **result)
    if not os.path.exists(python):
        _cannot_check(module, result, 'interpreter %s does not exist' % python)
    if not os.access(python, os.X_OK) or os.path.isdir(python):
        _cannot_check(module, result, 'interpreter %s is not executable' % python)

    request = dict(
        args=args,
        load_plugins=module.params['load_plugins'],
        timeout=module.params['timeout'],
    )
    environ = memo.check_environ(module.params['environment'], module.params['hide_gpus'])

    started = time.monotonic()
    key = _memo_key(module, python, args, environ)
    cache_dir = module.params['cache_dir']
    stored = memo.read_entry(cache_dir, key) if key else None
    if stored is not None:
        result.update((name, stored[name]) for name in STORED if name in stored)
        result['cached'] = True
        result['duration_seconds'] = round(time.monotonic() - started, 3)
        if not module.check_mode:
            memo.touch_entry(cache_dir, key)
        _finish(module, result)

    rc, stdout, stderr = module.run_command(
        [python, '-c', CHECK_PROGRAM],
        data=json.dumps(request),
        environ_update=environ,
        cwd='/',
    )
    result['duration_seconds'] = round(time.monotonic() - started, 3)

    reply = None
    for line in (stdout or '').splitlines():
        if line.startswith(RESULT_MARK):
            try:
                reply = json.loads(line[len(RESULT_MARK):])
            except ValueError:
                reply = None
    if reply is None:
        tail = '\n'.join((stderr or '').strip().splitlines()[-15:])
        if rc in (-14, 142):
            why = 'the check did not finish within the timeout of %s s' % module.params['timeout']
        else:
            why = 'the check program exited with status %s and no result' % rc
        module.fail_json(msg='Cannot check the SGLang server arguments with %s: %s' % (python, why),
                         rc=rc, stderr_tail=tail, **result)

    resolved = reply.get('resolved') or []
    dests = dict((item.get('token'), item.get('dest')) for item in resolved if item.get('dest'))
    merged = [str(a) for a in (reply.get('argv') or args)]
    hidden = sorted(set(secret_values(args, resolve=dests.get) + secret_values(merged, resolve=dests.get)), key=len, reverse=True)
    module.no_log_values.update(hidden)
    reply['message'] = mask_values(reply.get('message'), hidden)
    reply['parser_warnings'] = [mask_values(w, hidden) for w in (reply.get('parser_warnings') or [])]

    result['python_version'] = reply.get('python_version')
    result['sglang_version'] = reply.get('sglang_version')
    if reply.get('import_error'):
        _cannot_check(
            module, result,
            'sglang.srt.server_args does not import in %s (%s)' % (python, reply['import_error']))

    result['checked'] = True
    dirs = reply.get('package_dirs') or []
    result['env_names_unread'] = names_absent_from_texts(
        module.params['env_names'], itertools.chain.from_iterable(package_sources(d) for d in dirs))
    result['valid'] = bool(reply.get('valid'))
    result['deprecated'] = reply.get('deprecated') or {}
    result['parser_warnings'] = reply['parser_warnings']
    result['abbreviations'] = dict(
        (item['token'], item['option']) for item in resolved
        if item.get('option') and item['option'] != item['token'])

    if not result['valid']:
        result['message'] = reply.get('message') or ''
        result['flag'] = flag_from_parser_message(result['message'], resolved)
    # A definite verdict of the parser: memoized (never in check mode).
    if key and not module.check_mode:
        memo.write_entry(cache_dir, key, dict((name, result[name]) for name in STORED))
    _finish(module, result)


if __name__ == '__main__':
    main()
