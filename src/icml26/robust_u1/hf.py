"""Joint reasoning over the corrupted and the recovered image with any Hugging Face vision-language model.

`HFJointReasoner(model, processor)` builds the official Robust-U1 inference context (first the original,
corrupted image; then an instruction to answer from the restored image, and the restored image; then the
question) as a two-image chat message, and offers:

- `answer(x_c, x_r, questions, max_new_tokens=32) -> list[str]` (greedy decoding);
- `loss(x_c, x_r, questions, answers) -> scalar` (cross-entropy on the answer tokens only: Stage III SFT);
- `corrupted_only=True` in both to query the model with the corrupted image alone (the general-model baseline).

`model` is any transformers model whose forward takes `input_ids`, `attention_mask`, `pixel_values` (+ the
processor's other outputs, e.g. Qwen2-VL's `image_grid_thw`) and `labels`, e.g.
`AutoModelForImageTextToText.from_pretrained("Qwen/Qwen2-VL-2B-Instruct")` or LLaVA; `processor` is its
`AutoProcessor` (anything with `apply_chat_template(messages, add_generation_prompt, tokenize=False)` and
`__call__(text=[...], images=[[img, img], ...], return_tensors="pt", padding=True)`). Images are passed as
RGB PIL images converted from (N, C, H, W) tensors in [0, 1].
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from icml26.common.validation import check_bool, check_int
from icml26.robust_u1._checks import check_images

__all__ = ["RESTORED_PROMPT", "HFJointReasoner", "to_pil"]

RESTORED_PROMPT = ("The first image may be corrupted. Below is the image restored from it; answer the question "
                   "based on the restored image.")


def to_pil(x: torch.Tensor) -> list:
    """(N, C, H, W) in [0, 1] (C = 1 or 3) -> list of RGB PIL images."""
    from PIL import Image

    x = check_images(x, "x")
    if x.shape[1] not in (1, 3):
        raise ValueError(f"x must have 1 or 3 channels, got shape {tuple(x.shape)}")
    arr = (x.detach().cpu().float().clamp(0, 1) * 255).round().to(torch.uint8)
    if arr.shape[1] == 1:
        arr = arr.expand(-1, 3, -1, -1)
    return [Image.fromarray(a.permute(1, 2, 0).numpy(), mode="RGB") for a in arr]


class HFJointReasoner:
    """Robust-U1's Stage III / inference with a Hugging Face VLM; see the module docstring."""

    def __init__(self, model: torch.nn.Module, processor: Any, restored_prompt: str = RESTORED_PROMPT) -> None:
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"model must be a transformers model (nn.Module), got {type(model).__name__}")
        if not callable(processor) or not hasattr(processor, "apply_chat_template"):
            raise TypeError("processor must be a transformers processor (callable, with apply_chat_template)")
        if not isinstance(restored_prompt, str):
            raise TypeError("restored_prompt must be a string")
        self.model, self.processor, self.restored_prompt = model, processor, restored_prompt

    def messages(self, question: str, corrupted_only: bool = False) -> list[dict]:
        """The chat message of one question (two image slots, or one with `corrupted_only`)."""
        if not isinstance(question, str):
            raise TypeError(f"question must be a string, got {type(question).__name__}")
        content: list[dict] = [{"type": "image"}]
        if not corrupted_only:
            content += [{"type": "text", "text": self.restored_prompt}, {"type": "image"}]
        content.append({"type": "text", "text": question})
        return [{"role": "user", "content": content}]

    def _inputs(self, x_c: Any, x_r: Any, questions: Sequence[str], answers: Sequence[str] | None,
                corrupted_only: bool) -> tuple[dict, list[int]]:
        check_bool(corrupted_only, "corrupted_only")
        x_c = check_images(x_c, "x_c")
        if isinstance(questions, str) or not isinstance(questions, Sequence):
            raise TypeError("questions must be a list of strings")
        if len(questions) != len(x_c):
            raise ValueError(f"questions ({len(questions)}) must match x_c ({len(x_c)})")
        ims_c = to_pil(x_c)
        if corrupted_only:
            images = [[a] for a in ims_c]
        else:
            x_r = check_images(x_r, "x_r")
            if x_r.shape[0] != x_c.shape[0]:
                raise ValueError(f"x_r ({x_r.shape[0]}) must match x_c ({x_c.shape[0]})")
            images = [[a, b] for a, b in zip(ims_c, to_pil(x_r))]
        prompts = [self.processor.apply_chat_template(self.messages(q, corrupted_only), add_generation_prompt=True,
                                                      tokenize=False) for q in questions]
        prompt_lens = []
        if answers is not None:
            if isinstance(answers, str) or len(answers) != len(questions):
                raise ValueError("answers must be a list of strings, one per question")
            for p, im in zip(prompts, images):
                enc = self.processor(text=[p], images=[im], return_tensors="pt")
                prompt_lens.append(int(enc["input_ids"].shape[1]))
            prompts = [p + str(a) for p, a in zip(prompts, answers)]
        batch = self.processor(text=prompts, images=images, return_tensors="pt", padding=True)
        return dict(batch), prompt_lens

    def _device(self) -> torch.device:
        return next(self.model.parameters()).device

    def loss(self, x_c: Any, x_r: Any, questions: Sequence[str], answers: Sequence[str],
             corrupted_only: bool = False) -> torch.Tensor:
        """Mean cross-entropy of the answer tokens (prompt and padding masked with -100)."""
        batch, plens = self._inputs(x_c, x_r, questions, answers, corrupted_only)
        ids = batch["input_ids"]
        labels = ids.clone()
        mask = batch.get("attention_mask", torch.ones_like(ids))
        labels[mask == 0] = -100
        for i, n in enumerate(plens):
            start = int((mask[i] == 0).sum()) if getattr(self.processor, "padding_side", "right") == "left" else 0
            labels[i, start:start + n] = -100
        dev = self._device()
        batch = {k: v.to(dev) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}
        return self.model(**batch, labels=labels.to(dev)).loss

    @torch.no_grad()
    def answer(self, x_c: Any, x_r: Any, questions: Sequence[str], max_new_tokens: int = 32,
               corrupted_only: bool = False) -> list[str]:
        """Greedy answers, decoded with the processor's tokenizer (or `processor.decode`)."""
        n = check_int(max_new_tokens, "max_new_tokens", min=1)
        batch, _ = self._inputs(x_c, x_r, questions, None, corrupted_only)
        dev = self._device()
        batch = {k: v.to(dev) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}
        out = self.model.generate(**batch, max_new_tokens=n, do_sample=False)
        new = out[:, batch["input_ids"].shape[1]:]
        dec = getattr(self.processor, "batch_decode", None) or self.processor.tokenizer.batch_decode
        return [s.strip() for s in dec(new, skip_special_tokens=True)]
