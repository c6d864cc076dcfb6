"""DeepSeek-V2/V3 (Kimi K2's architecture): the registry entry of SGLang 0.5.9 ``srt/models/deepseek_v2.py``."""


class DeepseekV2ForCausalLM:
    """Stand-in: the double serves no weights."""


class DeepseekV3ForCausalLM(DeepseekV2ForCausalLM):
    """Stand-in: the double serves no weights."""


class DeepseekV32ForCausalLM(DeepseekV2ForCausalLM):
    """Stand-in: the double serves no weights."""


EntryClass = [DeepseekV2ForCausalLM, DeepseekV3ForCausalLM, DeepseekV32ForCausalLM]
