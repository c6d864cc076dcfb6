"""The double's model loader (SGLang ``sglang/srt/model_loader/``), reduced to what a dark window depends on."""
