"""Paper-scale path (spec 7) at toy size: run_paper end to end in one process, the HF joint reasoner on a tiny
random LLaVA, and the torchrun path as 2 gloo ranks ending with identical weights."""

import importlib.util
import json
from pathlib import Path

import pytest
import torch

from icml26.robust_u1.scale import PAPER_CONFIG, load_image_folder, run_paper, validate_paper_config

HERE = Path(__file__).parent
TOY = {**PAPER_CONFIG, "image_size": 24, "max_images": 60, "test_images": 10, "restorer_channels": 4, "restorer_depth": 2,
       "sft_epochs": 1, "sft_batch": 16, "grpo_steps": 2, "grpo_batch": 4, "group_size": 2}


def _toy_vlm():
    spec = importlib.util.spec_from_file_location("toy_vlm", HERE / "toy_vlm.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_run_paper_toy_end_to_end(tmp_path):
    from PIL import Image

    for i in range(14):  # the user's own image folder (RGB files of mixed sizes)
        arr = (torch.rand(30 + i, 26, 3, generator=torch.Generator().manual_seed(i)) * 255).to(torch.uint8).numpy()
        Image.fromarray(arr).save(tmp_path / f"im{i}.png")
    imgs = load_image_folder(tmp_path, 24)
    assert imgs.shape == (14, 3, 24, 24) and float(imgs.max()) <= 1
    res = run_paper({**TOY, "data_dir": str(tmp_path), "test_images": 4, "out_dir": str(tmp_path / "w")})
    assert res.scale == "paper" and res.claims[0].id == "C1"
    assert res.metrics["n_train"] == 10 and (tmp_path / "w" / "restorer_rl.pt").is_file()
    assert "CLIP reward OFF" in res.notes
    from icml26.robust_u1.scale import _images

    x, source = _images({**TOY, "max_images": 5})  # an empty data_dir falls back to the digits
    assert x.shape == (5, 1, 24, 24) and "digits fallback" in source


def test_paper_config_is_checked():
    validate_paper_config(PAPER_CONFIG)
    with pytest.raises(ValueError, match="data_dir"):
        validate_paper_config({**PAPER_CONFIG, "data_dir": "/no/such/dir"})
    with pytest.raises(ValueError, match="vlm and vqa_file"):
        validate_paper_config({**PAPER_CONFIG, "vlm": "some/model"})
    with pytest.raises(ValueError, match="clip_range"):
        validate_paper_config({**PAPER_CONFIG, "clip_range": 0})
    cfg = json.loads((Path(__file__).parents[2] / "configs/paper/robust_u1/imagenet_c.json").read_text())
    unknown = set(cfg) - set(PAPER_CONFIG) - {"_comment"}
    assert not unknown


def test_hf_joint_reasoner_on_a_tiny_llava():
    pytest.importorskip("transformers")
    toy = _toy_vlm()
    from icml26.robust_u1.hf import HFJointReasoner

    model = toy.tiny_llava(0)
    jr = HFJointReasoner(model, toy.ToyProcessor())
    x = torch.rand(2, 1, 24, 24)
    msg = jr.messages("what digit?")
    assert [p["type"] for p in msg[0]["content"]] == ["image", "text", "image", "text"]
    loss = jr.loss(x, x.flip(-1), ["what digit?", "is it even?"], ["3", "yes"])
    assert loss.dim() == 0 and torch.isfinite(loss)
    loss.backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())
    out = jr.answer(x, x, ["what digit?", "is it even?"], max_new_tokens=3)
    assert len(out) == 2 and all(isinstance(s, str) for s in out)
    assert len(jr.answer(x, None, ["q", "q"], max_new_tokens=2, corrupted_only=True)) == 2
    with pytest.raises(ValueError, match="questions"):
        jr.loss(x, x, ["only one"], ["3"])


@pytest.mark.slow
def test_torchrun_two_gloo_ranks_end_with_identical_weights(tmp_path):
    pytest.importorskip("transformers")
    from icml26.common import distributed as D

    proc = D.launch_local(HERE / "ddp_scale.py", [tmp_path], nproc=2, timeout=280)
    assert proc.stdout.count("world 2") == 1  # rank-0-only logging
    r0, r1 = torch.load(tmp_path / "rank0.pt"), torch.load(tmp_path / "rank1.pt")
    for part in ("sft", "rl", "sftc", "vlm"):
        assert r0[part].keys() == r1[part].keys()
        for k in r0[part]:
            assert torch.equal(r0[part][k], r1[part][k]), (part, k)
    assert any(not torch.equal(r0["sft"][k], r0["rl"][k]) for k in r0["sft"])  # GRPO moved the weights
