"""Paper-scale engine (spec §7): sharded multi-shot image storage, GPU DFT, DDP pretraining.

VisionED pretrains on ~2 M molecules / 12 M images. The pieces that scale:

1. Featurisation as an embarrassingly parallel job, one shard per task (run one `featurize` process per
   GPU / node under a batch scheduler or Ray; shards are independent and restartable: a finished shard has
   its ``.done`` marker and is skipped):

       python -m icml26.visioned.scale featurize --smiles mols.smi --out shards/ --shard-size 10000 \\
           --shard-index $SLURM_ARRAY_TASK_ID --method B3LYP --basis 6-31g** --backend gpu --esp exact --size 224

   Densities come from PySCF on CPU (`--backend cpu`) or GPU4PySCF (`--backend gpu`: ``mf.to_gpu()``; needs
   ``pip install gpu4pyscf-cuda12x``), or from user cube files (`--cubes DIR`, e.g. EDBench / Psi4 cubeprop
   output, read with `read_cube`; ESP then from Mulliken-free "charges" = 0, pass a callable in Python).
   Each shard stores ``images.npy`` (uint8 memmap, (n, S, 4, H, W)), ``pretext.npy`` (float32, (n, 16) in
   PHYS_KEYS + COMP_KEYS order), ``labels.npy`` (float32, (n, 5) in LABEL_KEYS order) and ``smiles.txt``;
   cubes are not kept (224-px images are 600 KB/molecule; a 0.2 A cube is several MB).

2. Pretraining with torch DDP through `icml26.common.distributed` (or one process), AMP bf16, AdamW + linear
   warm-up + cosine decay
   (EDG's ImageED recipe: base lr 1.5e-4 x batch/256, wd 0.05, 5 warm-up epochs):

       torchrun --nproc_per_node 8 -m icml26.visioned.scale pretrain --shards shards/ --out vit_b/ \\
           --size 224 --patch 16 --dim 768 --depth 12 --heads 12 --epochs 100 --batch-size 128

   The pretext normalisation (z-scores of the physics targets) is computed from the first shards and saved
   next to the weights; the backbone is written with `VisionEDViT.save_pretrained` on rank 0.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from icml26.visioned.density import COMP_KEYS, LABEL_KEYS, PHYS_KEYS

__all__ = ["featurize_shard", "ShardDataset", "pretrain_distributed", "main"]


def featurize_shard(smiles: Sequence[str], out_dir: str | Path, *, method: str = "B3LYP", basis: str = "6-31g**",
                    grid_spacing: float = 0.2, margin: float = 4.0, backend: str = "cpu", size: int = 224,
                    n_views: int = 6, isovalues: Sequence[float] = (0.05,), esp: str = "exact", fov: float = 16.0,
                    conformer_seed: int = 0) -> Path:
    """Compute densities, render the shots and write one shard; failed molecules are listed in errors.json."""
    from tqdm.auto import tqdm

    from icml26.visioned.density import compute_record, conformer_from_smiles
    from icml26.visioned.render import render_multishot

    out = Path(out_dir)
    if (out / ".done").exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    n_shots = n_views * len(isovalues)
    imgs = np.lib.format.open_memmap(out / "images.tmp.npy", mode="w+", dtype=np.uint8,
                                     shape=(len(smiles), n_shots, 4, size, size))
    pre = np.zeros((len(smiles), len(PHYS_KEYS) + len(COMP_KEYS)), np.float32)
    lab = np.zeros((len(smiles), len(LABEL_KEYS)), np.float32)
    ok, errors = [], {}
    for i, s in enumerate(tqdm(smiles, desc=f"shard {out.name}")):
        try:
            z, x, charge = conformer_from_smiles(s, conformer_seed)
            rec = compute_record(z, x, name=s, charge=charge, method=method, basis=basis, grid_spacing=grid_spacing,
                                 margin=margin, backend=backend)
            imgs[len(ok)] = render_multishot(rec, n_views=n_views, size=size, isovalues=isovalues, esp=esp, fov=fov)
            pre[len(ok)] = [rec.pretext[k] for k in PHYS_KEYS + COMP_KEYS]
            lab[len(ok)] = [rec.props[k] for k in LABEL_KEYS]
            ok.append(s)
        except Exception as e:  # noqa: BLE001 - one bad molecule must not kill a shard of 10k
            errors[s] = f"{type(e).__name__}: {e}"
    imgs.flush()
    del imgs
    n = len(ok)
    src = np.load(out / "images.tmp.npy", mmap_mode="r")
    dst = np.lib.format.open_memmap(out / "images.npy", mode="w+", dtype=np.uint8, shape=(n,) + src.shape[1:])
    dst[:] = src[:n]
    dst.flush()
    del src, dst
    (out / "images.tmp.npy").unlink()
    np.save(out / "pretext.npy", pre[:n])
    np.save(out / "labels.npy", lab[:n])
    (out / "smiles.txt").write_text("\n".join(ok) + "\n")
    (out / "errors.json").write_text(json.dumps(errors, indent=1))
    (out / ".done").write_text(time.strftime("%Y-%m-%dT%H:%M:%S"))
    return out


class ShardDataset:
    """Map-style dataset over finished shards: item i -> (uint8 images (S, 4, H, W), pretext float32 (16,))."""

    def __init__(self, root: str | Path) -> None:
        self.shards = sorted(p.parent for p in Path(root).glob("*/.done"))
        if not self.shards:
            raise FileNotFoundError(f"no finished shards (*/.done) under {root}")
        self.images = [np.load(p / "images.npy", mmap_mode="r") for p in self.shards]
        self.pretext = [np.load(p / "pretext.npy") for p in self.shards]
        self.offsets = np.cumsum([0] + [len(x) for x in self.images])

    def __len__(self) -> int:
        return int(self.offsets[-1])

    def __getitem__(self, i: int):
        k = int(np.searchsorted(self.offsets, i, side="right") - 1)
        j = i - self.offsets[k]
        return np.array(self.images[k][j]), self.pretext[k][j]

    def pretext_stats(self) -> tuple[np.ndarray, np.ndarray]:
        allp = np.concatenate(self.pretext)[:, : len(PHYS_KEYS)]
        return allp.mean(0), allp.std(0) + 1e-8


def pretrain_distributed(shards: str | Path, out: str | Path, vit: dict[str, Any], *, epochs: int = 100,
                         batch_size: int = 128, base_lr: float = 1.5e-4, weight_decay: float = 0.05,
                         warmup_epochs: int = 5, mask_ratio: float = 0.5,
                         weights: dict[str, float] | None = None, num_workers: int = 8, amp: bool = True,
                         seed: int = 0, max_steps: int | None = None):
    """DDP pretraining of `VisionEDViT(**vit)` on `ShardDataset(shards)`; run under torchrun (or as one process).

    The torchrun set-up is `icml26.common.distributed` (nccl on GPU, gloo on CPU, rank-0-only logging and
    saving). Every rank starts from rank 0's weights (DDP broadcasts them), sees its `DistributedSampler` share of
    each epoch and applies the all-reduced (averaged) gradients, so all ranks hold identical weights after every
    step (tested with 2 gloo processes). `batch_size` is per rank; lr = base_lr x batch_size x world / 256.
    Returns the trained backbone (CPU); rank 0 writes it with `save_pretrained` plus ``pretext_stats.json``.
    """
    import torch
    from torch.utils.data import DataLoader, DistributedSampler

    from icml26.common import distributed as D
    from icml26.common.validation import check_int
    from icml26.visioned.model import VisionEDPretrainer, VisionEDViT

    epochs, batch_size = check_int(epochs, "epochs", min=1), check_int(batch_size, "batch_size", min=2)
    num_workers, warmup_epochs = check_int(num_workers, "num_workers", min=0), check_int(warmup_epochs,
                                                                                         "warmup_epochs", min=0)
    env = D.init_distributed()
    torch.manual_seed(seed)  # same init on every rank (DDP also broadcasts rank 0's weights)
    ds = ShardDataset(shards)
    mu, sd = ds.pretext_stats()
    model = VisionEDViT(**vit)
    pt = VisionEDPretrainer(model, mask_ratio=mask_ratio, weights=weights, batch_size=batch_size).to(env.device)
    wrapped = D.wrap_ddp(pt, env, find_unused_parameters=True)
    torch.manual_seed(seed + env.rank)  # masks and shot splits differ across ranks (their data differ too)
    sampler = (DistributedSampler(ds, num_replicas=env.world_size, rank=env.rank, shuffle=True, seed=seed)
               if env.is_distributed else None)
    loader = DataLoader(ds, batch_size=batch_size, sampler=sampler, shuffle=sampler is None, drop_last=True,
                        num_workers=num_workers, pin_memory=env.device.type == "cuda",
                        persistent_workers=num_workers > 0, generator=torch.Generator().manual_seed(seed))
    lr = base_lr * batch_size * env.world_size / 256
    opt = torch.optim.AdamW(pt.parameters(), lr=lr, weight_decay=weight_decay, betas=(0.9, 0.95))
    steps_per_epoch = max(1, len(loader))
    total = epochs * steps_per_epoch
    warm = warmup_epochs * steps_per_epoch
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (s + 1) / max(1, warm) if s < warm
        else 0.5 * (1 + math.cos(math.pi * (s - warm) / max(1, total - warm))))
    mu_t, sd_t = torch.tensor(mu, device=env.device), torch.tensor(sd, device=env.device)
    n_phys = len(PHYS_KEYS)
    step = 0
    for ep in range(epochs):
        if sampler is not None:
            sampler.set_epoch(ep)
        for imgs, pre in loader:
            imgs = imgs.to(env.device, non_blocking=True)
            pre = pre.to(env.device, non_blocking=True).float()
            with torch.autocast(env.device.type, dtype=torch.bfloat16, enabled=amp and env.device.type == "cuda"):
                terms = wrapped((imgs, (pre[:, :n_phys] - mu_t) / sd_t, pre[:, n_phys:]))  # DDP forward: synced
                loss = terms["total"]
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(pt.parameters(), 1.0)
            opt.step()
            sched.step()
            step += 1
            if step % 50 == 0 or step == 1:
                means = D.mean_reduce({k: float(v) for k, v in terms.items()})
                D.log(env, f"epoch {ep} step {step}/{total} " + " ".join(f"{k} {v:.4f}" for k, v in means.items()))
            if max_steps and step >= max_steps:
                break
        if max_steps and step >= max_steps:
            break
    out = Path(out)

    def save() -> None:
        D.unwrap(wrapped).model.cpu().save_pretrained(out)
        (out / "pretext_stats.json").write_text(json.dumps({"keys": list(PHYS_KEYS), "mean": mu.tolist(),
                                                            "std": sd.tolist()}))

    D.save_on_main(env, save)
    D.shutdown()
    return model.cpu()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m icml26.visioned.scale", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("featurize", help="compute densities + images for one shard")
    f.add_argument("--smiles", required=True, help="file with one SMILES per line")
    f.add_argument("--out", required=True)
    f.add_argument("--shard-size", type=int, default=10000)
    f.add_argument("--shard-index", type=int, default=0)
    f.add_argument("--method", default="B3LYP")
    f.add_argument("--basis", default="6-31g**")
    f.add_argument("--grid-spacing", type=float, default=0.2)
    f.add_argument("--backend", default="cpu", choices=["cpu", "gpu"])
    f.add_argument("--esp", default="exact", choices=["exact", "charges"])
    f.add_argument("--size", type=int, default=224)
    f.add_argument("--isovalues", type=float, nargs="+", default=[0.05])
    p = sub.add_parser("pretrain", help="(DDP) pretraining on finished shards")
    p.add_argument("--shards", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--patch", type=int, default=16)
    p.add_argument("--shots", type=int, default=6)
    p.add_argument("--dim", type=int, default=768)
    p.add_argument("--depth", type=int, default=12)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--epochs", type=int, default=100)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--mask-ratio", type=float, default=0.5)
    p.add_argument("--num-workers", type=int, default=8)
    p.add_argument("--max-steps", type=int, default=None)
    a = ap.parse_args(argv)
    if a.cmd == "featurize":
        lines = [s.split()[0] for s in Path(a.smiles).read_text().splitlines() if s.strip()]
        chunk = lines[a.shard_index * a.shard_size:(a.shard_index + 1) * a.shard_size]
        featurize_shard(chunk, Path(a.out) / f"shard_{a.shard_index:05d}", method=a.method, basis=a.basis,
                        grid_spacing=a.grid_spacing, backend=a.backend, size=a.size, isovalues=a.isovalues,
                        esp=a.esp)
    else:
        vit = dict(img_size=a.size, patch=a.patch, in_chans=4, n_shots=a.shots, dim=a.dim, depth=a.depth,
                   heads=a.heads)
        pretrain_distributed(a.shards, a.out, vit, epochs=a.epochs, batch_size=a.batch_size,
                             mask_ratio=a.mask_ratio, num_workers=a.num_workers, max_steps=a.max_steps)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
