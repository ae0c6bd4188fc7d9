"""The paper-scale path (ImageFolder -> EL2N -> select/combine -> DDP student) at toy size: one process, and 2 gloo
ranks that must end with identical weights."""

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from icml26.dataset_compression.experiment import CONFIGS, validate_config
from icml26.dataset_compression.scale import PAPER_CONFIG, list_image_folder, load_image, run_pipeline, run_paper


@pytest.fixture(scope="module")
def image_folder(tmp_path_factory):
    from PIL import Image

    root = tmp_path_factory.mktemp("imagefolder")
    rng = np.random.default_rng(0)
    for split, n in (("train", 6), ("val", 3)):
        for c, name in enumerate(("ant", "bee", "cat")):
            (root / split / name).mkdir(parents=True)
            for i in range(n):
                img = np.clip(rng.normal(60 + 70 * c, 30, (40, 36, 3)), 0, 255).astype(np.uint8)
                Image.fromarray(img).save(root / split / name / f"{i}.png")
    return root


def _toy(root, out_dir, method="pca"):
    return {**PAPER_CONFIG, "data_root": str(root), "method": method, "ipc": 1, "factor": 2, "resolution": 32,
            "val_resize": 36, "score_model": "resnet18-tiny", "score_models": 2, "score_epochs": 1,
            "score_batch_size": 8, "student": "resnet18-tiny", "epochs": 2, "batch_size": 4, "num_workers": 0,
            "amp": False, "out_dir": str(out_dir)}


def test_image_folder_loading(image_folder):
    files, labels, classes = list_image_folder(image_folder / "train")
    assert classes == ["ant", "bee", "cat"] and len(files) == 18 and np.bincount(labels).tolist() == [6, 6, 6]
    img = load_image(files[0], 36, 32)
    assert img.shape == (3, 32, 32) and img.dtype == torch.uint8
    with pytest.raises(ValueError, match="data folder"):
        list_image_folder(image_folder / "missing")


def test_pipeline_single_process(image_folder, tmp_path):
    cfg = _toy(image_folder, tmp_path)
    res = run_pipeline(cfg)
    assert 0.0 <= res["val_acc"] <= 1.0 and res["n_stored"] == 3 and res["world_size"] == 1
    stored = torch.load(tmp_path / "stored_set.pt", weights_only=False)
    assert stored["images"].shape == (3, 3, 32, 32) and stored["factor"] == 2 and len(stored["indices"]) == 12
    assert (tmp_path / "student.pt").exists()
    result = run_paper({**_toy(image_folder, tmp_path, "random"), "scale": "paper"})
    assert result.scale == "paper" and result.metrics["n_stored"] == 3 and result.claims == []


def test_paper_config_validation(image_folder):
    cfg = {**CONFIGS["paper"], "scale": "paper"}
    validate_config(cfg)
    for k, v in (("method", "dm"), ("ipc", 0), ("factor", 3), ("val_resize", 100), ("crop_scale", [0.5, 2.0]),
                 ("label_mode", "soft"), ("flip", 1)):
        with pytest.raises((ValueError, TypeError), match=k if k != "label_mode" else "teacher"):
            validate_config({**cfg, k: v})
    with pytest.raises(ValueError, match="data_root"):
        run_pipeline(CONFIGS["paper"])


@pytest.mark.slow  # ~20 s (two processes importing torch): run with -m slow
def test_paper_pipeline_as_two_gloo_ranks_ends_with_identical_weights(image_folder, tmp_path):
    from icml26.common import distributed as D

    cfg = _toy(image_folder, tmp_path / "art")
    proc = D.launch_local(Path(__file__).with_name("ddp_scale.py"), [tmp_path, json.dumps(cfg)], nproc=2,
                          timeout=240)
    assert proc.stdout.count("world 2 val_acc") == 1  # rank-0-only logging
    r0, r1 = (torch.load(tmp_path / f"rank{r}.pt", weights_only=False) for r in (0, 1))
    assert np.array_equal(r0["indices"], r1["indices"]) and r0["val_acc"] == r1["val_acc"]
    assert r0["state"].keys() == r1["state"].keys()
    for k in r0["state"]:
        assert torch.equal(r0["state"][k], r1["state"][k]), k
    single = run_pipeline(_toy(image_folder, tmp_path / "one"))
    assert np.array_equal(single["indices"], r0["indices"])  # K = 2 EL2N models, sharded or not: same selection
