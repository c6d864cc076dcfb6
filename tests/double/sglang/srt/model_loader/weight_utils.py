"""Weight loading of the double: the bytes of the model directory's safetensors files, read from disk for real.

SGLang 0.5.23 (``sglang/srt/model_loader/loader.py`` ``DefaultModelLoader._prepare_weights`` and
``weight_utils.py`` ``filter_duplicate_safetensors_files``/``safetensors_weights_iterator``) globs ``*.safetensors``
in the model directory, keeps only the files that ``model.safetensors.index.json``'s ``weight_map`` lists when that
index exists, and reads every tensor of every kept file (mmap through ``safetensors.safe_open``) before copying it to
the GPU. The double reads the same files with plain ``read`` calls, so a load from a cold page cache takes disk time
and one from a warm page cache does not - the difference a staged cutover is about. Where torch with CUDA is
importable (the GPU machine) it copies the bytes into GPU memory, one uint8 tensor per file, kept for the
process's life as loaded weights are.

Knobs: ``SGLANG_DOUBLE_LOAD_WEIGHTS`` (default 1; 0 reads nothing) and ``SGLANG_DOUBLE_LOAD_TO_GPU`` (``auto``
default: only where torch is importable and ``torch.cuda.is_available()``; 0 never; 1 always, failing without
CUDA).
"""

from __future__ import annotations

import glob
import importlib.util
import json
import os
import time
from typing import Any, Dict, List, Optional

CHUNK = 16 << 20
INDEX = "model.safetensors.index.json"

# GPU tensors holding the loaded bytes (kept until the process ends).
_GPU_WEIGHTS: List[Any] = []


def weight_files(model_dir: str) -> List[str]:
    """The safetensors files SGLang would load from ``model_dir``, sorted: every ``*.safetensors`` there, filtered by
    the index's ``weight_map`` values when ``model.safetensors.index.json`` exists. A file the index lists but the
    directory lacks is not returned (SGLang then fails on the missing tensors, not on the file)."""
    files = sorted(glob.glob(os.path.join(model_dir, "*.safetensors")))
    index = os.path.join(model_dir, INDEX)
    if os.path.isfile(index):
        with open(index, encoding="utf-8") as handle:
            listed = set((json.load(handle).get("weight_map") or {}).values())
        files = [path for path in files if os.path.basename(path) in listed]
    return files


def gpu_copy_wanted(setting: Optional[str] = None) -> bool:
    """Whether the load copies the bytes to the GPU (``SGLANG_DOUBLE_LOAD_TO_GPU``: auto, 0 or 1)."""
    setting = (setting if setting is not None else os.environ.get("SGLANG_DOUBLE_LOAD_TO_GPU", "auto")).lower()
    if setting in ("0", "false", "no", "off"):
        return False
    if setting in ("1", "true", "yes", "on"):
        return True
    if importlib.util.find_spec("torch") is None:
        return False
    import torch  # pylint: disable=import-outside-toplevel
    return bool(torch.cuda.is_available())


def load_weights(files: List[str], gpu_id: Optional[int] = None, to_gpu: bool = False,
                 chunk: int = CHUNK) -> Dict[str, Any]:
    """Read ``files`` whole, ``chunk`` bytes at a time; with ``to_gpu``, copy each into a uint8 tensor on
    ``cuda:<gpu_id>``.

    :returns: {"files": count, "bytes": read, "seconds": wall time, "gb_per_s": bytes/1e9/seconds (0 when nothing
        was read), "gpu": whether the bytes went to the GPU}.
    :raises OSError: a file cannot be read.
    """
    torch = None
    if to_gpu:
        import torch  # pylint: disable=import-outside-toplevel,redefined-outer-name
    started = time.monotonic()
    total = 0
    buf = bytearray(chunk)
    view = memoryview(buf)
    for path in files:
        size = os.path.getsize(path)
        target = torch.empty(size, dtype=torch.uint8, device="cuda:%d" % (gpu_id or 0)) if torch else None
        offset = 0
        with open(path, "rb", buffering=0) as handle:
            while True:
                got = handle.readinto(view)
                if not got:
                    break
                if target is not None:
                    target[offset:offset + got].copy_(torch.frombuffer(buf, dtype=torch.uint8, count=got))
                offset += got
        total += offset
        if target is not None:
            _GPU_WEIGHTS.append(target)
    if torch is not None:
        torch.cuda.synchronize()
    seconds = time.monotonic() - started
    return {"files": len(files), "bytes": total, "seconds": round(seconds, 4),
            "gb_per_s": round(total / 1e9 / seconds, 3) if total and seconds > 0 else 0.0, "gpu": torch is not None}
