"""Paper-scale path at toy size: a shard featurised on CPU, and DDP pretraining as 2 gloo processes."""

from pathlib import Path

import numpy as np
import torch

from icml26.common import distributed as D
from icml26.visioned.density import COMP_KEYS, LABEL_KEYS, PHYS_KEYS
from icml26.visioned.scale import ShardDataset, featurize_shard

SCRIPT = Path(__file__).with_name("ddp_pretrain.py")


def _toy_shard(root: Path, n: int = 16) -> None:
    d = root / "shard_00000"
    d.mkdir(parents=True)
    rng = np.random.default_rng(0)
    np.save(d / "images.npy", rng.integers(0, 256, (n, 6, 4, 16, 16), dtype=np.uint8))
    np.save(d / "pretext.npy", rng.normal(size=(n, len(PHYS_KEYS) + len(COMP_KEYS))).astype(np.float32))
    np.save(d / "labels.npy", rng.normal(size=(n, len(LABEL_KEYS))).astype(np.float32))
    (d / "smiles.txt").write_text("\n".join(["C"] * n) + "\n")
    (d / ".done").write_text("toy")


def test_featurize_shard_on_cpu(tmp_path):
    out = featurize_shard(["O", "N", "not-a-smiles"], tmp_path / "s0", method="HF", basis="sto-3g",
                          grid_spacing=0.3, size=16, esp="charges", fov=8.0)
    ds = ShardDataset(tmp_path)
    assert len(ds) == 2 and (out / ".done").exists()
    img, pre = ds[1]
    assert img.shape == (6, 4, 16, 16) and img.dtype == np.uint8 and pre.shape == (len(PHYS_KEYS) + len(COMP_KEYS),)
    assert "not-a-smiles" in (out / "errors.json").read_text()


def test_ddp_pretraining_two_gloo_ranks_end_identical(tmp_path):
    _toy_shard(tmp_path / "shards")
    proc = D.launch_local(SCRIPT, [tmp_path / "shards", tmp_path], nproc=2, timeout=240)
    assert proc.stdout.count("step 1/") == 1  # rank-0-only logging
    r0, r1 = (torch.load(tmp_path / f"rank{r}.pt") for r in (0, 1))
    assert r0.keys() == r1.keys()
    for k in r0:
        assert torch.equal(r0[k], r1[k]), k
    torch.manual_seed(0)
    from icml26.visioned import VisionEDViT

    init = VisionEDViT(img_size=16, patch=8, in_chans=4, n_shots=6, dim=32, depth=1, heads=2).state_dict()
    assert any(not torch.allclose(init[k], r0[k]) for k in init)  # it trained
    saved = VisionEDViT.from_pretrained(tmp_path / "model").state_dict()
    assert all(torch.equal(saved[k], r0[k]) for k in r0)
