"""The paper-scale image path (scale.py) end to end at toy size, in-process and as 2 gloo ranks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from icml26.sparse_transfer.scale import PAPER_CONFIG, load_image_domains, run_paper, validate_paper_config

TOY = {**PAPER_CONFIG, "data": "synthetic", "n_synthetic": 24, "image_size": 8, "width": 4, "steps": 3,
       "batch_size": 4, "n_probes": 2, "classifier_steps": 5, "log_every": 1, "out_dir": "", "device": "cpu"}


def test_run_paper_toy_in_process():
    res = run_paper(TOY)
    arms = res.metrics["arms"]
    assert set(arms) == {"fd", "no_jac"} and arms["fd"]["lambda_jac"] == 0.01 and arms["no_jac"]["lambda_jac"] == 0
    assert arms["fd"]["final_losses"]["jac"] > 0 and arms["no_jac"]["final_losses"]["jac"] == 0
    assert 0.0 <= arms["fd"]["label_preservation"] <= 1.0 and np.isfinite(arms["fd"]["test_l1"])
    assert [c.id for c in res.claims] == ["P1"]


def test_image_data_and_config_errors(tmp_path):
    d = load_image_domains(TOY)
    assert d["source"].shape[1:] == (1, 8, 8) and d["source"].min() >= -1 and d["source"].max() <= 1
    # the target is the rotated source domain: rotating the paired test image back gives the source
    assert np.allclose(np.rot90(d["test_target"], -1, axes=(2, 3)), d["test_source"])
    path = tmp_path / "mine.npz"
    np.savez(path, source=np.random.rand(10, 1, 8, 8), target=np.random.rand(12, 1, 8, 8))
    assert load_image_domains({**TOY, "data": "npz", "data_path": str(path)})["target"].shape == (12, 1, 8, 8)
    for key, bad in (("steps", 0), ("arms", ["fd", "fd"]), ("network", "unet"), ("lambda_jac", -1.0)):
        with pytest.raises((ValueError, TypeError), match=key):
            validate_paper_config({**TOY, key: bad})
    with pytest.raises(ValueError, match="data_path"):
        validate_paper_config({**TOY, "data": "npz"})


@pytest.mark.slow  # ~11 s of process start-up for 2 gloo ranks (the package's tests must fit 30 s); run with -m slow
def test_paper_scale_trainer_as_two_gloo_ranks_ends_with_identical_weights(tmp_path):
    from icml26.common import distributed as D

    proc = D.launch_local(Path(__file__).with_name("ddp_scale.py"), [tmp_path], nproc=2, timeout=240)
    assert proc.stdout.count("world 2 losses") == 1  # rank-0-only logging
    r0, r1 = torch.load(tmp_path / "rank0.pt"), torch.load(tmp_path / "rank1.pt")
    assert r0.keys() == r1.keys() and any(k.startswith("d.") for k in r0)
    for k in r0:
        assert torch.equal(r0[k], r1[k]), k
