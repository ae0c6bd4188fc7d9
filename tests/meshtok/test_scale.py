"""The paper-scale path at toy size: in one process, and as 2 gloo processes under torchrun (identical weights)."""

from pathlib import Path

import pytest
import torch

from icml26.common import distributed as D
from icml26.meshtok.scale import PAPER_CONFIG, run_paper, validate_paper_config


@pytest.mark.slow  # ~20 s (two processes importing torch, each training and running run_paper): run with -m slow
def test_ddp_two_gloo_ranks_end_identical(tmp_path):
    proc = D.launch_local(Path(__file__).with_name("ddp_scale.py"), [tmp_path], nproc=2, timeout=240)
    assert proc.stdout.count("world 2 claims") == 1  # rank-0-only logging, run_paper finished on both ranks
    assert "M1" in proc.stdout and "M3" in proc.stdout
    r0, r1 = torch.load(tmp_path / "rank0.pt"), torch.load(tmp_path / "rank1.pt")
    assert r0.keys() == r1.keys()
    for k in r0:
        assert torch.equal(r0[k], r1[k]), k
    # it trained: the weights moved from the seed-0 initialisation
    cfg = {**PAPER_CONFIG, "grid": 16, "patch": 4, "dim": 8, "depth": 1, "heads": 2, "ffn": 16, "dec_width": 2,
           "context": 3, "n_frames": 5, "steps": 1, "attn_impl": "sdpa"}
    from icml26.meshtok.train import build_model

    torch.manual_seed(0)
    init = build_model(cfg, "meshtok", 1).state_dict()
    assert any(not torch.equal(init[k], r0[k]) for k in init)


def test_paper_config_is_the_official_one_and_checked():
    c = PAPER_CONFIG
    assert (c["grid"], c["patch"], c["refine_ratio"], c["dim"], c["depth"], c["heads"], c["ffn"], c["context"]) == \
        (128, 16, 0.25, 512, 8, 8, 1280, 10)
    validate_paper_config(c)
    with pytest.raises(ValueError, match="train_file"):
        validate_paper_config({**c, "train_file": "x.h5"})
    with pytest.raises(ValueError, match="dim"):
        validate_paper_config({**c, "heads": 7})


def test_run_paper_single_process_toy():
    cfg = {**PAPER_CONFIG, "grid": 16, "patch": 4, "n_frames": 5, "context": 3, "dim": 8, "depth": 1, "heads": 2,
           "ffn": 16, "dec_width": 2, "steps": 2, "batch_size": 2, "n_train": 3, "n_test": 2, "rollout_steps": 1,
           "rollout_n": 1, "eval_stride": 1, "eval_batch": 2, "device": "cpu", "dtype": "float32",
           "arms": ["meshtok", "random", "coarse", "fine"], "scale": "paper"}
    res = run_paper(cfg)
    ids = {c.id: c for c in res.claims}
    assert {"M1", "M2", "M3", "M4"} <= set(ids) and ids["M4"].kind == "gate" and ids["M3"].kind == "sanity"
    assert "simulated" in res.notes and res.metrics["world_size"] == 1
    toks = {r["arm"]: r["tokens_per_frame"] for r in res.metrics["runs"]}
    assert toks == {"meshtok": 28, "random": 28, "coarse": 16, "fine": 64}


def test_shipped_paper_configs_validate():
    import json

    root = Path(__file__).resolve().parents[2] / "configs" / "paper" / "meshtok"
    files = sorted(root.glob("*.json"))
    assert files
    for f in files:
        validate_paper_config({**PAPER_CONFIG, **json.loads(f.read_text())})
