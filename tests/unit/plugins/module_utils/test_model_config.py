# -*- coding: utf-8 -*-
# Copyright (c) inferops.sglang developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of module_utils/_model_config.py: SGLang's head-splitting rule read from a model's config.json."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils._model_config import (
    architecture_problems, config_summary, entry_class_names, hub_cache_dir, hub_repo_dir, idle_gpus, kv_heads_of,
    quantization_problems, tp_problems, transformers_names)

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


# ---- the rest of what the pre-flight reads in a config.json -----------------------------------------------------------

@pytest.mark.parametrize('settings, expected', [
    ({'num_key_value_heads': 8}, ('num_key_value_heads', 8)),
    ({'n_head_kv': 4, 'num_key_value_heads': 8}, ('n_head_kv', 4)),          # Falcon: read first, as SGLang does
    ({'multi_query_group_num': 2}, ('multi_query_group_num', 2)),            # ChatGLM
    ({'multi_query': True, 'num_key_value_heads': 8}, ('multi_query', 1)),
    ({'num_attention_heads': 8}, (None, None)),
])
def test_kv_heads_as_sglang_reads_them(settings, expected):
    assert kv_heads_of(settings) == expected


def test_chatglm_kv_heads_are_checked_under_their_own_key():
    problems = tp_problems({'num_attention_heads': 32, 'multi_query_group_num': 2}, 4)
    assert problems == []
    problems = tp_problems({'num_attention_heads': 48, 'multi_query_group_num': 2}, 3)
    assert len(problems) == 1 and 'multi_query_group_num is 2: an attention tp of 3' in problems[0]


def test_attention_parallel_sizes_that_do_not_divide_tp():
    assert 'must divide --tp-size 8' in tp_problems(GQA, 8, 3, True)[0]


def test_config_summary_keeps_what_the_checks_read():
    config = {'architectures': ['KimiK25ForConditionalGeneration'], 'vocab_size': 163840, 'auto_map': {'AutoConfig': 'x'},
              'quantization_config': {'quant_method': 'compressed-tensors', 'config_groups': {'big': 'table'}},
              'text_config': {'num_attention_heads': 64, 'num_key_value_heads': 64, 'kv_lora_rank': 512, 'hidden_size': 7168}}
    assert config_summary(config) == {
        'architectures': ['KimiK25ForConditionalGeneration'], 'auto_map': True,
        'quantization_config': {'quant_method': 'compressed-tensors'},
        'text_config': {'num_attention_heads': 64, 'num_key_value_heads': 64, 'kv_lora_rank': 512}}
    assert config_summary(['x']) == {}


MODEL_FILE = '''
class LlamaForCausalLM(nn.Module):
    pass

EntryClass = [
    LlamaForCausalLM,  # the plain one
    Phi3ForCausalLM,
    # InternLM3ForCausalLM,
]
'''


@pytest.mark.parametrize('text, names', [
    (MODEL_FILE, ['LlamaForCausalLM', 'Phi3ForCausalLM']),
    ('EntryClass = DbrxForCausalLM\n', ['DbrxForCausalLM']),
    ('EntryClass = [BertModel, Contriever, BertForSequenceClassification]\n',
     ['BertModel', 'Contriever', 'BertForSequenceClassification']),
    ('__all__ = ["EntryClass"]\n    EntryClass = Nested\n', []),     # only module-level assignments count
    ('', []),
    (None, []),
])
def test_entry_class_names(text, names):
    assert entry_class_names(text) == names


def test_transformers_names():
    text = 'MODEL_FOR_CAUSAL_LM_MAPPING_NAMES = OrderedDict(\n    [\n        ("llama", "LlamaForCausalLM"),\n' \
           "        ('qwen3', 'Qwen3ForCausalLM'),\n    ]\n)\n"
    assert transformers_names(text) == {'LlamaForCausalLM', 'Qwen3ForCausalLM'}


KNOWN = {'sglang': {'LlamaForCausalLM': True, 'NewForCausalLM': False},
         'transformers': {'LlamaForCausalLM': True, 'NewForCausalLM': True}}
UNKNOWN = {'sglang': {'TypoForCausalLM': False}, 'transformers': {'TypoForCausalLM': False}}


@pytest.mark.parametrize('config, known, impl, problem, warning', [
    ({'architectures': ['LlamaForCausalLM']}, KNOWN, 'auto', False, False),
    ({'architectures': ['NewForCausalLM']}, KNOWN, 'auto', False, True),        # the Transformers fallback
    ({'architectures': ['NewForCausalLM']}, KNOWN, 'sglang', True, False),       # no fallback allowed
    ({'architectures': ['TypoForCausalLM']}, UNKNOWN, 'auto', True, False),
    ({'architectures': ['TypoForCausalLM'], 'auto_map': True}, UNKNOWN, 'auto', False, True),   # custom code
    ({'architectures': ['TypoForCausalLM']}, {'sglang': {'TypoForCausalLM': False}, 'transformers': None}, 'auto',
     False, True),                                                               # Transformers not found: not refused
    ({'architectures': ['TypoForCausalLM']}, {'sglang': None, 'transformers': None}, 'auto', False, False),
    ({'architectures': ['TypoForCausalLM']}, UNKNOWN, 'mindspore', False, False),
    ({'architectures': ['TypoForCausalLM']}, UNKNOWN, 'transformers', True, False),
    ({'architectures': ['LlamaForCausalLM']}, KNOWN, 'transformers', False, False),
    ({}, UNKNOWN, 'auto', False, False),
])
def test_architecture_problems(config, known, impl, problem, warning):
    problems, warnings = architecture_problems(config, known, '/models/m/config.json', impl)
    assert bool(problems) is problem and bool(warnings) is warning
    for text in problems + warnings:
        assert text.startswith('/models/m/config.json: architectures is [')


@pytest.mark.parametrize('config, quantization, ok', [
    ({'quantization_config': {'quant_method': 'fp8'}}, 'fp8', True),
    ({'quantization_config': {'quant_method': 'FP8'}}, 'fp8', True),
    ({'quantization_config': {'quant_method': 'fp8'}}, 'awq', False),
    ({'quantization_config': {'quant_method': 'fp8'}}, None, True),           # SGLang takes the checkpoint's method
    ({}, 'fp8', True),                                                        # online quantization of a bf16 model
    ({'quantization_config': {'quant_method': 'awq'}}, 'awq_marlin', True),  # converted at load
    ({'quantization_config': {'quant_method': 'gptq'}}, 'marlin', True),
    ({'quantization_config': {'quant_method': 'gptq'}}, 'awq_marlin', False),
    ({'quantization_config': {'quant_method': 'compressed-tensors'}}, 'w8a8_fp8', True),
    ({'compression_config': {'quant_method': 'compressed-tensors'}}, 'fp8', False),
    ({'quantization_config': {'quant_method': 'modelopt'}}, 'fp8', True),     # ModelOpt: more files than config.json
    ({'quantization_config': {'quant_method': 'fp8'}}, 'quark_mxfp4', True),  # online requantization
])
def test_quantization_problems(config, quantization, ok):
    assert (quantization_problems(config, quantization) == []) is ok


def test_the_quantization_message_names_file_key_and_values():
    text = quantization_problems({'quantization_config': {'quant_method': 'fp8'}}, 'AWQ', '/m/config.json')[0]
    assert text.startswith('/m/config.json: quantization_config.quant_method is fp8, but --quantization is awq')
    assert 'set it to fp8' in text


@pytest.mark.parametrize('environment, home, cache', [
    ({'HF_HUB_CACHE': '/hub'}, '/root', '/hub'),
    ({'HF_HOME': '/hf/'}, '/root', '/hf/hub'),
    ({'XDG_CACHE_HOME': '/xdg'}, '/root', '/xdg/huggingface/hub'),
    ({}, '/var/cache/sglang', '/var/cache/sglang/.cache/huggingface/hub'),
    ({}, None, ''),
])
def test_hub_cache_dir(environment, home, cache):
    assert hub_cache_dir(environment, home) == cache


@pytest.mark.parametrize('repo_id, found', [
    ('moonshotai/Kimi-K2.5', '/hub/models--moonshotai--Kimi-K2.5'),
    ('gpt2', '/hub/models--gpt2'),
    ('/models/m', None), ('../up', None), ('a/b/c', None), ('', None),
])
def test_hub_repo_dir(repo_id, found):
    assert hub_repo_dir('/hub', repo_id) == found
