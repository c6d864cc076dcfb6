# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# PRIVATE: this module_utils is private to the inferops.sglang collection; it can change at any time.
"""What a model's ``config.json`` says about the tensor parallel sizes SGLang can run it with.

SGLang splits the attention heads over the attention tensor parallel group and fails ten minutes into loading a large
model when they do not divide. The rule, from SGLang 0.5.23 ``python/sglang/srt/layers/linear.py``
(``QKVParallelLinear``: ``divide(total_num_heads, tp_size)``; with ``kv_tp_size >= total_num_kv_heads`` the KV heads
are replicated, ``divide(kv_tp_size, total_num_kv_heads)``, else ``divide(total_num_kv_heads, kv_tp_size)``):

* ``num_attention_heads`` is a multiple of the attention tp;
* ``num_key_value_heads`` (default: ``num_attention_heads``) is a multiple of the attention tp, or the attention tp a
  multiple of it. Multi-head latent attention (DeepSeek-V2/V3, Kimi K2: ``kv_lora_rank`` set) has no KV heads to
  split: only the first rule holds.

The attention tp is ``tp / dp`` with ``--enable-dp-attention`` (``dp`` must divide ``tp``), else ``tp``. A
multimodal model keeps its language model's settings in ``text_config`` (Kimi-K2.5), which is read first when present.

The other rules read from ``config.json`` (the pre-flight of the service role, ``_plans/service.py``):

* The architecture (``architectures``): SGLang 0.5.23 ``python/sglang/srt/models/registry.py`` registers the class
  names in the ``EntryClass`` of each module directly under ``sglang/srt/models`` (``import_model_classes``); a model
  whose architectures it has none of falls back to the Transformers implementation
  (``model_loader/utils.py:get_model_architecture``, ``resolve_transformers_arch``), which needs Transformers to know
  the class or the config's ``auto_map`` (custom code). :func:`entry_class_names` and :func:`transformers_names` read
  both without importing anything (the names are read from the source files).
* Quantization: SGLang 0.5.23 ``configs/model_config.py:_verify_quantization`` refuses ``--quantization`` that differs
  from ``quantization_config.quant_method`` (or ``compression_config``'s) unless the pair is compatible
  (:data:`QUANT_COMPATIBLE`) or the method converts the checkpoint (:func:`quantization_problems`).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re

# SGLang 0.5.23 configs/model_config.py:get_total_num_kv_heads reads the KV heads from the first of these it finds.
KV_HEAD_KEYS = ('n_head_kv', 'num_kv_heads', 'num_key_value_heads', 'multi_query_group_num', 'num_attention_groups')
# What the pre-flight keeps of a config.json (its reads are returned by a module; a config.json can be large).
SUMMARY_KEYS = ('architectures', 'model_type', 'num_attention_heads', 'kv_lora_rank', 'multi_query', 'auto_map') + KV_HEAD_KEYS
# --quantization -> the checkpoint methods it is compatible with (0.5.23 _verify_quantization,
# compatible_quantization_methods), plus the methods whose override_quantization_method converts a checkpoint
# (awq/awq.py, gptq/gptq.py: marlin, awq_marlin, gptq_marlin; moe_wna16.py).
QUANT_COMPATIBLE = {
    'modelopt_fp8': ('modelopt',), 'modelopt_fp4': ('modelopt', 'fp8'), 'modelopt_mixed': ('modelopt',),
    'nvfp4_online': ('fp8', 'modelopt_fp8'), 'minimax_m3_nvfp4': ('mxfp8',), 'petit_nvfp4': ('modelopt',),
    'w8a8_int8': ('compressed-tensors', 'compressed_tensors'), 'w8a8_fp8': ('compressed-tensors', 'compressed_tensors'),
    'auto-round-int8': ('compressed-tensors', 'compressed_tensors'),
    'marlin': ('awq', 'gptq'), 'awq_marlin': ('awq',), 'gptq_marlin': ('gptq',), 'moe_wna16': ('awq', 'gptq'),
}
# --quantization values that take any checkpoint: online requantization (0.5.23 REQUANTIZATION_METHODS) and humming
# (humming.py overrides every checkpoint method but mxfp4).
QUANT_ANY = ('quark_mxfp4', 'humming')


def _positive_int(value):
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def text_config(config):
    """The language model's settings of a ``config.json`` (a mapping): its ``text_config`` when it has one."""
    inner = config.get('text_config') if hasattr(config, 'get') else None
    return inner if hasattr(inner, 'get') else config


def tp_problems(config, tp, dp=1, dp_attention=False, path='config.json'):
    """Why SGLang cannot split this model over ``tp`` GPUs; empty when it can, or when the file does not say.

    :param config: mapping, the parsed ``config.json``.
    :param tp: int, ``--tp-size``.
    :param dp: int, ``--dp-size`` (matters with ``dp_attention`` only).
    :param dp_attention: bool, ``--enable-dp-attention``.
    :param path: str, the file's path, named in each message.
    :returns: list of str, each naming the file, the key, its value and the sizes that would divide it.
    :raises TypeError: config is not a mapping.
    """
    if not hasattr(config, 'get'):
        raise TypeError('expected the parsed config.json (a mapping), got %s' % type(config).__name__)
    tp, dp = _positive_int(tp), _positive_int(dp) or 1
    if tp is None:
        return []
    problems = []
    attn_tp = tp
    if dp_attention and dp > 1:
        if tp % dp:
            return ['the attention data parallel size (--attn-dp-size, or --dp-size with --enable-dp-attention) times '
                    '--attn-cp-size, %d, must divide --tp-size %d' % (dp, tp)]
        attn_tp = tp // dp
    settings = text_config(config)
    prefix = 'text_config.' if settings is not config else ''
    heads = _positive_int(settings.get('num_attention_heads'))
    kv_key, kv_heads = kv_heads_of(settings)
    if heads is not None and heads % attn_tp:
        problems.append('%s: %snum_attention_heads is %d, which an attention tp of %d does not divide (SGLang splits the '
                        'heads evenly); attention tp sizes that divide it: %s'
                        % (path, prefix, heads, attn_tp, _divisors(heads)))
    if kv_heads is not None and settings.get('kv_lora_rank') is None:
        if (attn_tp >= kv_heads and attn_tp % kv_heads) or (attn_tp < kv_heads and kv_heads % attn_tp):
            problems.append('%s: %s%s is %d: an attention tp of %d neither divides it nor is a multiple '
                            'of it (SGLang shards or replicates the KV heads); sizes that work: divisors or multiples '
                            'of %d' % (path, prefix, kv_key, kv_heads, attn_tp, kv_heads))
    return problems


def kv_heads_of(settings):
    """(key, number) of the KV heads as SGLang 0.5.23 reads them (``get_total_num_kv_heads``: the first of
    :data:`KV_HEAD_KEYS`; one for ``multi_query`` models); (None, None) when the file does not say (then they are the
    attention heads, which the first rule covers)."""
    if settings.get('multi_query') is True:
        return 'multi_query', 1
    for key in KV_HEAD_KEYS:
        if settings.get(key) is not None:
            return key, _positive_int(settings.get(key))
    return None, None


def _divisors(number):
    return ', '.join(str(d) for d in range(1, min(number, 64) + 1) if number % d == 0)


def idle_gpus(gpu_count, gpus_needed):
    """How many of the host's GPUs the server leaves idle (tp x pp x dp per node below the GPU count); 0 when none or
    unknown."""
    count, needed = _positive_int(gpu_count), _positive_int(gpus_needed)
    if count is None or needed is None or needed >= count:
        return 0
    return count - needed


def config_summary(config):
    """What the pre-flight keeps of a parsed ``config.json``: :data:`SUMMARY_KEYS` (``auto_map`` as a bool), the
    ``quant_method`` of ``quantization_config`` and ``compression_config``, and the same of ``text_config``; a
    mapping, {} for anything else."""
    if not hasattr(config, 'get'):
        return {}
    found = dict((key, config[key]) for key in SUMMARY_KEYS if key in config)
    if 'auto_map' in found:
        found['auto_map'] = bool(found['auto_map'])
    for key in ('quantization_config', 'compression_config'):
        value = config.get(key)
        if hasattr(value, 'get'):
            found[key] = {'quant_method': value.get('quant_method')}
    inner = config.get('text_config')
    if hasattr(inner, 'get'):
        found['text_config'] = config_summary(dict((key, value) for key, value in inner.items() if key != 'text_config'))
    return found


_ENTRY_CLASS = re.compile(r'^EntryClass\s*=\s*(\[[^\]]*\]|[A-Za-z_][A-Za-z0-9_]*)', re.M)
_IDENTIFIER = re.compile(r'[A-Za-z_][A-Za-z0-9_]*')


def entry_class_names(text):
    """The class names a module of ``sglang/srt/models`` registers: its module-level ``EntryClass = Name`` or
    ``EntryClass = [Name, ...]`` (SGLang 0.5.23 ``models/registry.py`` keys each by the class's ``__name__``, which is
    the name written there in every 0.5.23 model); a list, empty when the text has none. Comments in the list are
    skipped."""
    found = []
    for match in _ENTRY_CLASS.finditer(text or ''):
        body = '\n'.join(line.split('#', 1)[0] for line in match.group(1).splitlines())
        found.extend(name for name in _IDENTIFIER.findall(body) if name not in found)
    return found


_QUOTED_CLASS = re.compile(r'["\']([A-Z][A-Za-z0-9_]*)["\']')


def transformers_names(text):
    """The model class names Transformers' auto classes map to, from the text of its
    ``transformers/models/auto/modeling_auto.py`` (tuples such as ``("llama", "LlamaForCausalLM")``): every quoted
    name that starts with a capital letter; a set."""
    return set(_QUOTED_CLASS.findall(text or ''))


def architecture_problems(config, known, path='config.json', model_impl='auto'):
    """Whether the installed SGLang can load the architecture of ``config``: ``(problems, warnings)``, lists of str.

    :param config: mapping, the (summary of the) parsed ``config.json``; its ``architectures`` list is read.
    :param known: ``{'sglang': {name: bool} or None, 'transformers': {name: bool} or None}``: which names SGLang's
        model registry and Transformers' auto classes hold (None: not known how, nothing refused on its account).
    :param path: the file's path, named in each message.
    :param model_impl: ``--model-impl`` (``auto``, ``sglang``, ``transformers``; ``mindspore`` is not checked).
    :returns: a problem when neither SGLang (unless ``model_impl`` is transformers) nor Transformers know any of the
        architectures and the config has no ``auto_map`` (custom code), or when ``model_impl`` is sglang and SGLang does
        not know them; a warning when only Transformers does (SGLang falls back to its slower implementation).
    """
    architectures = [name for name in (config.get('architectures') or []) if isinstance(name, str)] \
        if hasattr(config, 'get') and isinstance(config.get('architectures'), list) else []
    known = known or {}
    sglang, hf = known.get('sglang'), known.get('transformers')
    if not architectures or model_impl == 'mindspore' or sglang is None:
        return [], []
    named = ', '.join(architectures)
    in_sglang = any(sglang.get(name) for name in architectures)
    if in_sglang and model_impl != 'transformers':
        return [], []
    if model_impl == 'sglang':
        return ['%s: architectures is [%s], which the installed SGLang has no implementation of (no EntryClass in '
                'sglang/srt/models names it), and --model-impl sglang forbids the Transformers fallback. Use a model '
                'this SGLang version supports, a newer SGLang, or --model-impl auto.' % (path, named)], []
    if hf is None or any(hf.get(name) for name in architectures) or config.get('auto_map'):
        if in_sglang:
            return [], []
        return [], ['%s: architectures is [%s], which the installed SGLang has no implementation of: it falls back to '
                    'the Transformers implementation (some features missing, slower).' % (path, named)]
    return ['%s: architectures is [%s], which neither the installed SGLang (no EntryClass in sglang/srt/models '
            'names it) nor its Transformers (models/auto/modeling_auto.py) know, and the config has no auto_map for '
            'custom code: SGLang would refuse it after starting. Check model-path, or install an SGLang version that '
            'supports it (service_sglang_version).' % (path, named)], []


def quant_method_of(config):
    """(key, method) of the checkpoint's quantization: ``quantization_config.quant_method``, else
    ``compression_config.quant_method`` (lower case, as SGLang compares it); (None, None) when the file says none."""
    for key in ('quantization_config', 'compression_config'):
        value = config.get(key) if hasattr(config, 'get') else None
        if hasattr(value, 'get') and isinstance(value.get('quant_method'), str) and value.get('quant_method'):
            return key + '.quant_method', value['quant_method'].lower()
    return None, None


def quantization_problems(config, quantization, path='config.json'):
    """Why SGLang 0.5.23 would refuse ``--quantization`` with this checkpoint (``_verify_quantization``: "Quantization
    method specified in the model config (...) does not match ..."); a list of str, empty when they agree, when either
    is unset, for a ModelOpt checkpoint (its method is parsed from more files than config.json) and for the pairs of
    :data:`QUANT_COMPATIBLE` and :data:`QUANT_ANY`. Not for a draft model (SGLang takes the draft's own method)."""
    key, method = quant_method_of(config)
    if not quantization or method is None or method.startswith('modelopt'):
        return []
    wanted = str(quantization).lower()
    if wanted == method or wanted in QUANT_ANY or method in QUANT_COMPATIBLE.get(wanted, ()):
        return []
    return ['%s: %s is %s, but --quantization is %s: SGLang refuses the mismatch when it loads the model. Remove '
            '--quantization (SGLang takes the checkpoint\'s method) or set it to %s.' % (path, key, method, wanted, method)]


def hub_cache_dir(environment, home):
    """Where the server's ``huggingface_hub`` looks for downloaded models: ``HF_HUB_CACHE``, else ``HF_HOME/hub``, else
    ``HOME/.cache/huggingface/hub`` (``XDG_CACHE_HOME/huggingface/hub`` when set); '' when none is known.

    :param environment: the server's environment (mapping).
    :param home: the service user's home directory, or None."""
    environment = environment or {}
    if environment.get('HF_HUB_CACHE'):
        return environment['HF_HUB_CACHE']
    if environment.get('HUGGINGFACE_HUB_CACHE'):
        return environment['HUGGINGFACE_HUB_CACHE']
    if environment.get('HF_HOME'):
        return environment['HF_HOME'].rstrip('/') + '/hub'
    base = environment.get('XDG_CACHE_HOME') or ((home.rstrip('/') + '/.cache') if home else '')
    return base + '/huggingface/hub' if base else ''


_HUB_ID = re.compile(r'^[A-Za-z0-9][A-Za-z0-9_.-]*(/[A-Za-z0-9][A-Za-z0-9_.-]*)?$')


def hub_repo_dir(cache, repo_id):
    """``CACHE/models--ORG--NAME``: where the hub cache keeps ``repo_id``; None when it is no hub id (an absolute or
    dotted path) or there is no cache."""
    if not cache or not isinstance(repo_id, str) or not _HUB_ID.match(repo_id) or '..' in repo_id:
        return None
    return os.path.join(cache, 'models--' + repo_id.replace('/', '--'))
