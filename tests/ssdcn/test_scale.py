"""The paper-scale path (spec 7) end to end at toy size: in-process, and as 2 gloo ranks under torchrun."""

from pathlib import Path

import numpy as np
import pytest
import scipy.io
import torch

from icml26.common import distributed as D
from icml26.ssdcn.scale import PAPER_CONFIG, run_paper, validate_paper_config

TOY = {"patch": 16, "batch_size": 2, "steps": 3, "dim": 8, "paper_blocks_per_level": 1, "paper_k_spatial": 4,
       "paper_k_spectral": 2, "paper_rank_spectral": 4, "paper_rank_spatial": 2, "log_every": 1}


def _cubes(folder: Path, n: int, seed: int) -> None:
    folder.mkdir()
    rng = np.random.default_rng(seed)
    for i in range(n):  # (H, W, C) like the CAVE / Chikusei releases, raw (un-normalised) values
        scipy.io.savemat(folder / f"cube{i}.mat", {"img": rng.uniform(0, 4000, (24, 24, 4))})


def test_run_paper_in_process(tmp_path):
    _cubes(tmp_path / "train", 2, 0)
    _cubes(tmp_path / "test", 1, 1)
    cfg = {**PAPER_CONFIG, **TOY, "scale_factors": [4, 8], "train_dir": str(tmp_path / "train"),
           "test_dir": str(tmp_path / "test"), "out_dir": str(tmp_path / "ckpt")}
    res = run_paper(cfg)
    for s in (4, 8):
        m = res.metrics[f"x{s}"]
        assert np.isfinite(m["psnr"]) and np.isfinite(m["final_loss"]) and m["params"] > 0
        assert (tmp_path / "ckpt" / f"ssdcn_x{s}.pt").is_file()
    with pytest.raises(ValueError, match="train_dir"):
        run_paper({**cfg, "train_dir": str(tmp_path / "missing")})
    with pytest.raises(ValueError, match="patch"):
        validate_paper_config({**cfg, "patch": 18})


@pytest.mark.slow  # torchrun start-up of 2 gloo ranks: ~11 s, like the other papers' 2-rank tests
def test_ddp_two_gloo_ranks_end_identical(tmp_path):
    _cubes(tmp_path / "train", 2, 0)
    proc = D.launch_local(Path(__file__).with_name("ddp_scale.py"), [tmp_path / "train", tmp_path], nproc=2,
                          timeout=240)
    assert proc.stdout.count("world 2 losses") == 1  # rank-0-only logging
    r0, r1 = torch.load(tmp_path / "rank0.pt"), torch.load(tmp_path / "rank1.pt")
    assert r0.keys() == r1.keys()
    for k in r0:
        assert torch.equal(r0[k], r1[k]), k
    from icml26.ssdcn import SSDCN

    torch.manual_seed(0)
    init = SSDCN(4, 4, 8, 1, 4, 2, rank_spectral=4, rank_spatial=4).state_dict()
    assert any(not torch.equal(init[k], r0[k]) for k in init)  # it trained
