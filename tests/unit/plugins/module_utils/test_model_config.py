# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of module_utils/_model_config.py: SGLang's head-splitting rule read from a model's config.json."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils._model_config import idle_gpus, tp_problems

GQA = {'num_attention_heads': 64, 'num_key_value_heads': 8}


@pytest.mark.parametrize('config, tp, ok', [
    (GQA, 8, True), (GQA, 4, True), (GQA, 16, True), (GQA, 64, True), (GQA, 1, True),
    (GQA, 3, False),   # C37: 64 heads, tp 3
    (GQA, 6, False),
    ({'num_attention_heads': 32, 'num_key_value_heads': 8}, 32, True),   # KV heads replicated 4 times
    ({'num_attention_heads': 24, 'num_key_value_heads': 8}, 12, False),  # 12 is no multiple of 8
    ({'num_attention_heads': 40}, 8, True),                              # no KV heads: they are the heads
    ({'num_attention_heads': 40}, 16, False),
    # MLA (DeepSeek-V3, Kimi K2): num_key_value_heads is not split
    ({'num_attention_heads': 64, 'num_key_value_heads': 1, 'kv_lora_rank': 512}, 8, True),
    ({'num_attention_heads': 64, 'num_key_value_heads': 128, 'kv_lora_rank': 512}, 16, True),
    # Kimi-K2.5: the language model's settings under text_config
    ({'architectures': ['KimiK25ForConditionalGeneration'],
      'text_config': {'num_attention_heads': 64, 'num_key_value_heads': 64, 'kv_lora_rank': 512}}, 8, True),
    ({'text_config': {'num_attention_heads': 64, 'num_key_value_heads': 64}}, 3, False),
    ({}, 3, True),                                                       # nothing said, nothing refused
    ({'num_attention_heads': 'x'}, 3, True),
])
def test_tp_problems(config, tp, ok):
    assert (tp_problems(config, tp) == []) is ok


def test_the_message_names_file_key_value_and_sizes():
    problems = tp_problems(GQA, 3, path='/models/k/config.json')
    assert problems[0].startswith('/models/k/config.json: num_attention_heads is 64, which an attention tp of 3 does not')
    assert 'that divide it: 1, 2, 4, 8, 16, 32, 64' in problems[0]
    assert 'num_key_value_heads is 8' in problems[1]
    nested = tp_problems({'text_config': GQA}, 3)
    assert 'text_config.num_attention_heads is 64' in nested[0]


@pytest.mark.parametrize('tp, dp, dp_attention, ok', [
    (8, 2, True, True),    # attention tp 4
    (8, 2, False, True),
    (8, 3, True, False),   # dp must divide tp
    (6, 2, True, False),   # attention tp 3 does not divide 64
])
def test_dp_attention_splits_over_tp_over_dp(tp, dp, dp_attention, ok):
    assert (tp_problems(GQA, tp, dp, dp_attention) == []) is ok


def test_not_a_mapping():
    with pytest.raises(TypeError):
        tp_problems(['x'], 8)


@pytest.mark.parametrize('count, needed, idle', [(8, 4, 4), (8, 8, 0), (8, 16, 0), (None, 4, 0), (8, None, 0)])
def test_idle_gpus(count, needed, idle):
    assert idle_gpus(count, needed) == idle
