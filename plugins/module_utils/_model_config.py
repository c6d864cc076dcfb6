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
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


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
            return ['--enable-dp-attention needs --dp-size %d to divide --tp-size %d' % (dp, tp)]
        attn_tp = tp // dp
    settings = text_config(config)
    prefix = 'text_config.' if settings is not config else ''
    heads = _positive_int(settings.get('num_attention_heads'))
    if heads is not None and heads % attn_tp:
        problems.append('%s: %snum_attention_heads is %d, which an attention tp of %d does not divide (SGLang splits the '
                        'heads evenly); attention tp sizes that divide it: %s'
                        % (path, prefix, heads, attn_tp, _divisors(heads)))
    kv_heads = _positive_int(settings.get('num_key_value_heads'))
    if kv_heads is not None and settings.get('kv_lora_rank') is None:
        if (attn_tp >= kv_heads and attn_tp % kv_heads) or (attn_tp < kv_heads and kv_heads % attn_tp):
            problems.append('%s: %snum_key_value_heads is %d: an attention tp of %d neither divides it nor is a multiple '
                            'of it (SGLang shards or replicates the KV heads); sizes that work: divisors or multiples '
                            'of %d' % (path, prefix, kv_heads, attn_tp, kv_heads))
    return problems


def _divisors(number):
    return ', '.join(str(d) for d in range(1, min(number, 64) + 1) if number % d == 0)


def idle_gpus(gpu_count, gpus_needed):
    """How many of the host's GPUs the server leaves idle (tp x pp x dp per node below the GPU count); 0 when none or
    unknown."""
    count, needed = _positive_int(gpu_count), _positive_int(gpus_needed)
    if count is None or needed is None or needed >= count:
        return 0
    return count - needed
