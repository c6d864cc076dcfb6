"""The EAGLE3 draft model: the registry entry of SGLang 0.5.9 ``srt/models/llama_eagle3.py``."""


class LlamaForCausalLMEagle3:
    """Stand-in: the double serves no weights."""


EntryClass = [LlamaForCausalLMEagle3]
