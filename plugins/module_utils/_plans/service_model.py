# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The service plan's model checks (part of :func:`_plans.service.service_plan`): what the pre-flight reads for them
(``model_refs``, ``hub_cache``, ``sglang_site``), and the problems, warnings and notes it draws from each model's
``config.json`` and the installed SGLang's model registry (service_preflight_info's ``model_configs`` and
``registry``). The rules themselves are in ``_model_config`` (SGLang 0.5.23 sources named there).

Checks (``CHECKS``, the same ``(inp, plan, facts, seen) -> message`` contract as the service plan's): a prefill/decode
server (not supported yet), a tp the model's heads cannot be split over, an architecture the installed SGLang cannot
load, a ``--quantization`` the checkpoint disagrees with. Warnings (the run goes on): GPUs tp x pp x dp leaves idle, an
architecture only Transformers implements. Notes: what was not checked and why.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.inferops.sglang.plugins.module_utils import _model_config
from ansible_collections.inferops.sglang.plugins.module_utils._plans.values import ran
from ansible_collections.inferops.sglang.plugins.module_utils._server_process import cmdline

CHECK_DISAGG = 'Refuse prefill/decode (disaggregation) servers (not supported yet)'
CHECK_MODEL_TP = "Check the tensor parallel size against the model's config.json"
CHECK_MODEL_ARCH = "Check that the installed SGLang knows the model's architecture"
CHECK_MODEL_QUANT = "Check --quantization against the model's config.json"


def _word(value):
    return '' if value is None else str(value)


def _host_reads(seen):
    """service_preflight_info's result in ``seen`` (``info``), {} when not read."""
    return ran((seen or {}).get('info'))


def server_arg(plan, *names):
    """A server argument (any of ``names``: SGLang's flag spellings without dashes) from the plan's arguments
    (``args_map``), else from its --config file (``config``); None when unset."""
    for key, value in plan['args_map'].items():
        if str(key).lstrip('-').replace('_', '-') in names and value is not None:
            return value
    values = cmdline.config_values(plan['config']) if isinstance(plan['config'], (str, dict)) else {}
    for name in names:
        if values.get('--' + name) is not None:
            return values['--' + name]
    return None


def model_reads(plan, facts):
    """What the host read needs for the model checks: ``model_refs`` (model-path and speculative-draft-model-path as
    given), ``model_revision`` (``--revision``), ``hub_cache`` (the server's Hugging Face hub cache, from its
    environment and the service user's home) and ``sglang_site`` (the server interpreter's site-packages: the facts'
    when the server runs the interpreter the facts probed, else ``VENV/lib/python*/site-packages`` of its venv)."""
    refs = [plan['args_map'].get(key) for key in ('model-path', 'speculative-draft-model-path')]
    home = '/root' if plan['user'] == 'root' else _word(plan['home'])
    python = facts.get('python') or {}
    interpreter = _word(plan['command'][0])
    if interpreter and interpreter == python.get('executable') and python.get('site_packages'):
        site = list(python['site_packages'])
    else:
        site = [os.path.dirname(os.path.dirname(interpreter)) + '/lib/python*/site-packages'] if interpreter.startswith('/') else []
    return {'model_refs': [ref for ref in refs if isinstance(ref, str) and ref],
            'model_revision': _word(server_arg(plan, 'revision')),
            'hub_cache': _model_config.hub_cache_dir(plan['environment'], home if home.startswith('/') else None),
            'sglang_site': site}


def model_configs(seen):
    """(main, draft): the host read's ``config.json`` of the model and of the draft model, each ``{'ref', 'path',
    'config', 'note'}``, or None."""
    read = _host_reads(seen).get('model_configs') or []
    return (read[0] if read else None), (read[1] if len(read) > 1 else None)


def notes_and_warnings(inp, plan, facts, seen):
    """(notes, warnings), lists of str: what the model checks skipped (a model found nowhere, a registry not found),
    why no tp-size was derived from the GPU count (``tp_unusable``, with topology defaults on and no tp-size given or
    adopted), and what works but wastes or slows (GPUs tp x pp x dp leaves idle, an architecture only Transformers
    implements)."""
    info = _host_reads(seen)
    notes = [entry['note'] + '.' for entry in info.get('model_configs') or [] if entry.get('note')]
    if (inp.get('topology_defaults') and not plan.get('adopted') and plan.get('tp_unusable')
            and 'tp-size' not in (plan.get('server_args') or {})):
        tp = plan['settings']['tp']
        notes.append('No tp-size was added from the %s GPU(s) seen: %s. The server runs with tp %s%s.' % (
            facts.get('gpu_count'), plan['tp_unusable'], tp, " (SGLang's default)" if tp == 1 else ''))
    warnings = []
    main, dummy = model_configs(seen)
    if main and main.get('config'):
        if (info.get('registry') or {}).get('sglang') is None:
            notes.append('The model registry of the server\'s SGLang (sglang/srt/models) was not found in %s: the '
                         'architecture was not checked.' % (', '.join(plan['sglang_site']) or 'no directory'))
        warnings.extend(_architecture_read(plan, main, info)[1])
    idle = idle_gpu_indexes(plan, facts)
    if idle:
        settings = plan['settings']
        warnings.append('tp %s x pp %s x dp %s uses %d of the %d GPUs of %s: GPU(s) %s stay idle. Set tp-size (or '
                        'dp-size) so that tp x pp x dp uses them, or run another server on them.'
                        % (settings['tp'], settings['pp'], settings['dp'], plan['gpus_needed'], facts.get('gpu_count'),
                           (inp.get('host') or {}).get('name') or 'this host', ', '.join(str(index) for index in idle)))
    return notes, warnings


def idle_gpu_indexes(plan, facts):
    """The indexes of the host's GPUs the server leaves idle: it takes ``gpus_needed`` GPUs from ``--base-gpu-id`` (0
    by default), in ``CUDA_VISIBLE_DEVICES`` order when its environment sets it; [] on a MIG host or when unknown."""
    gpus = [gpu for gpu in facts.get('gpus') or [] if isinstance(gpu.get('index'), int)]
    if not gpus or _model_config.idle_gpus(facts.get('gpu_count') or len(gpus), plan['gpus_needed']) == 0:
        return []
    if any(_word(gpu.get('mig_mode')).lower() == 'enabled' for gpu in gpus):
        return []
    order = [gpu['index'] for gpu in gpus]
    visible = _word(plan['environment'].get('CUDA_VISIBLE_DEVICES'))
    try:
        if visible:
            order = [int(item) for item in visible.split(',') if item.strip()]
        base = int(server_arg(plan, 'base-gpu-id') or 0)
    except (TypeError, ValueError):
        return []
    used = set(order[base:base + plan['gpus_needed']])
    return [gpu['index'] for gpu in gpus if gpu['index'] not in used]


def _architecture_read(plan, main, info):
    """architecture_problems of the model's config.json; nothing when --json-model-override-args sets its
    architectures or SGLANG_EXTERNAL_MODEL_PACKAGE replaces SGLang's registry."""
    if 'architectures' in _word(server_arg(plan, 'json-model-override-args')):
        return [], []
    if 'SGLANG_EXTERNAL_MODEL_PACKAGE' in plan['environment']:
        return [], []
    return _model_config.architecture_problems(main['config'], info.get('registry'), main['path'],
                                               _word(server_arg(plan, 'model-impl') or 'auto').lower())


def _positive_size(value):
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


def disaggregation_problem(inp, plan, facts, seen):
    mode = _word(server_arg(plan, 'disaggregation-mode')).lower()
    if mode not in ('prefill', 'decode'):
        return ''
    return ("--disaggregation-mode %s: prefill/decode servers are not supported by this collection yet (a %s server "
            "does not answer a completion on its own, so the health gate could never pass). Run the prefill and decode "
            "servers by hand and put them behind the router's PD mode (sglang_router --pd-disaggregation), or remove "
            "disaggregation-mode from service_server_args. Nothing was changed." % (mode, mode))


def tp_problem(inp, plan, facts, seen):
    """The heads of the model and of the draft model (which runs with the same tp) against the attention tp: tp over
    the attention data parallel size (``--attn-dp-size``, or ``--dp-size`` with ``--enable-dp-attention``) times the
    attention context parallel size (``--attn-cp-size``; SGLang 0.5.23 ``runtime_context.py:derive_attn_tp_size``)."""
    attn_dp = _positive_size(server_arg(plan, 'attn-dp-size', 'attention-data-parallel-size'))
    if attn_dp is None:
        attn_dp = plan['settings']['dp'] if server_arg(plan, 'enable-dp-attention') not in (None, False) else 1
    divisor = attn_dp * (_positive_size(server_arg(plan, 'attn-cp-size', 'attention-context-parallel-size')) or 1)
    found = []
    for entry in model_configs(seen):
        if entry and entry.get('config'):
            found.extend(problem for problem in _model_config.tp_problems(
                entry['config'], plan['settings']['tp'], divisor, divisor > 1, entry['path']) if problem not in found)
    if not found:
        return ''
    return '%s. Set tp-size in service_server_args (or the --config file) to a size that divides them.' % '; '.join(found)


def architecture_problem(inp, plan, facts, seen):
    main, dummy = model_configs(seen)
    if not (main and main.get('config')):
        return ''
    return ' '.join(_architecture_read(plan, main, _host_reads(seen))[0])


def quantization_problem(inp, plan, facts, seen):
    main, dummy = model_configs(seen)
    if not (main and main.get('config')):
        return ''
    return ' '.join(_model_config.quantization_problems(main['config'], server_arg(plan, 'quantization'), main['path']))


CHECKS = ((CHECK_DISAGG, disaggregation_problem), (CHECK_MODEL_TP, tp_problem),
          (CHECK_MODEL_ARCH, architecture_problem), (CHECK_MODEL_QUANT, quantization_problem))
