"""SGLang's model implementations (test double): the registry's names only.

SGLang 0.5.9 ``srt/models/registry.py`` (``import_model_classes``) registers the classes named by the ``EntryClass``
of each module directly in this package. The double keeps the two modules the reference server loads, with the same
``EntryClass`` lines as 0.5.9 (``deepseek_v2.py``, ``llama_eagle3.py``), so that a reader of the registry (the
collection's pre-flight reads the names from these files without importing them) sees the reference model's
architectures as known. The classes are empty stand-ins: the double never loads weights.
"""
