"""The paper's baselines behind the same fit / predict interface (spec §4).

- `ECFPRegressor`: RDKit Morgan fingerprint (radius 2, 2048 bits) -> scikit-learn MLP or random forest.
- `PointNetPPLite` / `PointNet` + `PointCloudRegressor`: the ED point-cloud model. [EDBench] trains
  PointVector / X-3D (PointNeXt family) on (x, y, z, rho) points; ours [spec §4] is PointNet++-lite: two
  set-abstraction layers (FPS 512 -> 128 centroids, kNN k = 16, shared MLPs 64 / 128 on [relative xyz, features],
  max-pool), a global max-pool and an MLP head (128 -> 64 -> n_targets); plain PointNet (shared MLP 64-128,
  max-pool) is the cheap variant. [ours] point features are (x, y, z) in Angstrom / 5 and log10(rho) / 3
  (rho spans 1e-3..1e3 e/bohr^3 near nuclei, raw values would swamp the MLP). Same fine-tuning loop as
  VisionED (`model.train_regressor`): AdamW lr 1e-3, weight decay 0.05, z-scored targets, best val epoch.
- VisionED-scratch is `VisionEDRegressor(backbone=None, backbone_config=...)` (same ViT, random init).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn as nn

from icml26.visioned.model import _as_2d, _batches, train_regressor

__all__ = ["ecfp_features", "ECFPRegressor", "PointNetPPLite", "PointNet", "PointCloudRegressor",
           "fps_torch", "knn_group"]


def ecfp_features(smiles: Sequence[str], radius: int = 2, n_bits: int = 2048) -> np.ndarray:
    """Morgan / ECFP4 bit vectors: (N, n_bits) uint8. Raises ValueError naming `smiles[i]` if unparsable."""
    from rdkit import Chem, DataStructs
    from rdkit.Chem import rdFingerprintGenerator

    gen = rdFingerprintGenerator.GetMorganGenerator(radius=radius, fpSize=n_bits)
    out = np.zeros((len(smiles), n_bits), np.uint8)
    for i, s in enumerate(smiles):
        mol = Chem.MolFromSmiles(s) if isinstance(s, str) else None
        if mol is None:
            raise ValueError(f"smiles[{i}]: RDKit cannot parse {s!r}")
        DataStructs.ConvertToNumpyArray(gen.GetFingerprint(mol), out[i])
    return out


class ECFPRegressor:
    """ECFP (radius 2, 2048 bits) -> MLP or random forest. fit(smiles, y) / predict(smiles)."""

    def __init__(self, model: str = "mlp", radius: int = 2, n_bits: int = 2048, seed: int = 0, **kwargs: Any):
        if model not in ("mlp", "rf"):
            raise ValueError(f"model must be 'mlp' or 'rf', got {model!r}")
        self.model, self.radius, self.n_bits, self.seed, self.kwargs = model, radius, n_bits, seed, kwargs

    def _make(self):
        if self.model == "rf":
            from sklearn.ensemble import RandomForestRegressor

            return RandomForestRegressor(**({"n_estimators": 200, "random_state": self.seed, "n_jobs": 1}
                                            | self.kwargs))
        from sklearn.neural_network import MLPRegressor

        return MLPRegressor(**({"hidden_layer_sizes": (256, 64), "alpha": 1e-3, "max_iter": 1000,
                                "random_state": self.seed} | self.kwargs))

    def fit(self, smiles: Sequence[str], y) -> ECFPRegressor:
        X = ecfp_features(smiles, self.radius, self.n_bits).astype(np.float64)  # uint8 @ float has no BLAS path
        Y = _as_2d(y)
        self.y_mean_, self.y_std_ = Y.mean(0), Y.std(0) + 1e-8
        Z = (Y - self.y_mean_) / self.y_std_
        self.est_ = self._make().fit(X, Z[:, 0] if Z.shape[1] == 1 else Z)
        return self

    def predict(self, smiles: Sequence[str]) -> np.ndarray:
        p = np.asarray(self.est_.predict(ecfp_features(smiles, self.radius, self.n_bits).astype(np.float64)), float)
        p = p.reshape(len(smiles), -1) * self.y_std_ + self.y_mean_
        return p[:, 0] if p.shape[1] == 1 else p


# ---------------------------------------------------------------------------------------------- point clouds
def fps_torch(xyz: torch.Tensor, n: int) -> torch.Tensor:
    """Batched farthest-point sampling starting at index 0: xyz (B, N, 3) -> indices (B, n)."""
    B, N, _ = xyz.shape
    if n > N:
        raise ValueError(f"cannot sample {n} centroids from {N} points")
    idx = torch.zeros(B, n, dtype=torch.long)
    dist = torch.full((B, N), float("inf"))
    last = xyz[:, 0]
    ar = torch.arange(B)
    for i in range(1, n):
        dist = torch.minimum(dist, (xyz - last[:, None]).pow(2).sum(-1))
        idx[:, i] = dist.argmax(-1)
        last = xyz[ar, idx[:, i]]
    return idx


def knn_group(xyz: torch.Tensor, feats: torch.Tensor | None, centres: torch.Tensor, k: int) -> torch.Tensor:
    """Group the k nearest points of each centre: -> (B, M, k, 3 + F) with xyz relative to the centre."""
    d = torch.cdist(centres, xyz)  # (B, M, N)
    nn_idx = d.topk(k, dim=-1, largest=False).indices  # (B, M, k)
    B = xyz.shape[0]
    bi = torch.arange(B)[:, None, None]
    rel = xyz[bi, nn_idx] - centres[:, :, None]
    return rel if feats is None else torch.cat([rel, feats[bi, nn_idx]], -1)


def _point_features(pc: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    xyz = pc[..., :3] / 5.0
    rho = torch.log10(pc[..., 3:4].clamp_min(1e-6)) / 3.0
    return xyz, rho


class PointNetPPLite(nn.Module):
    """PointNet++-lite on ED point clouds (B, N, 4) -> (B, n_out). FPS centroids are recomputed per batch
    (index 0 first; with `ed_point_cloud(method="fps")` inputs the centroids are the first 512 / 128 points)."""

    def __init__(self, n_out: int = 1, n_centroids: Sequence[int] = (512, 128), k: int = 16,
                 widths: Sequence[int] = (64, 128), hidden: int = 64) -> None:
        super().__init__()
        self.n_centroids, self.k = tuple(n_centroids), k
        self.sa1 = nn.Sequential(nn.Linear(3 + 1, widths[0]), nn.ReLU())
        self.sa2 = nn.Sequential(nn.Linear(3 + widths[0], widths[1]), nn.ReLU())
        self.head = nn.Sequential(nn.Linear(widths[1], hidden), nn.ReLU(), nn.Linear(hidden, n_out))

    def forward(self, pc: torch.Tensor) -> torch.Tensor:
        if pc.ndim != 3 or pc.shape[-1] != 4:
            raise ValueError(f"point clouds must have shape (B, N, 4), got {tuple(pc.shape)}")
        xyz, rho = _point_features(pc.float())
        B = len(xyz)
        bi = torch.arange(B)[:, None]
        n1 = min(self.n_centroids[0], max(1, xyz.shape[1] // 2))  # smaller clouds: keep the 2x / 4x ratios
        n2 = min(self.n_centroids[1], max(1, n1 // 4))
        with torch.no_grad():
            i1 = fps_torch(xyz, n1)
        c1 = xyz[bi, i1]
        f1 = self.sa1(knn_group(xyz, rho, c1, min(self.k, xyz.shape[1]))).amax(2)  # (B, 512, 64)
        with torch.no_grad():
            i2 = fps_torch(c1, n2)
        c2 = c1[bi, i2]
        f2 = self.sa2(knn_group(c1, f1, c2, min(self.k, n1))).amax(2)  # (B, 128, 128)
        return self.head(f2.amax(1))


class PointNet(nn.Module):
    """Plain PointNet: shared MLP 4 -> 64 -> 128 per point, global max-pool, MLP head."""

    def __init__(self, n_out: int = 1, widths: Sequence[int] = (64, 128), hidden: int = 64) -> None:
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(4, widths[0]), nn.ReLU(), nn.Linear(widths[0], widths[1]), nn.ReLU())
        self.head = nn.Sequential(nn.Linear(widths[1], hidden), nn.ReLU(), nn.Linear(hidden, n_out))

    def forward(self, pc: torch.Tensor) -> torch.Tensor:
        if pc.ndim != 3 or pc.shape[-1] != 4:
            raise ValueError(f"point clouds must have shape (B, N, 4), got {tuple(pc.shape)}")
        xyz, rho = _point_features(pc.float())
        return self.head(self.mlp(torch.cat([xyz, rho], -1)).amax(1))


class PointCloudRegressor:
    """ED point-cloud property regressor: fit(X (N, n_points, 4), y) / predict(X).

    Args: arch ("pointnet++" | "pointnet"), lr (1e-3), weight_decay (0.05), epochs (30), batch_size (32),
    loss ("mse" | "l1"), patience, seed.
    """

    def __init__(self, arch: str = "pointnet++", lr: float = 1e-3, weight_decay: float = 0.05, epochs: int = 30,
                 batch_size: int = 32, loss: str = "mse", patience: int | None = None, seed: int = 0,
                 progress: bool = False) -> None:
        if arch not in ("pointnet++", "pointnet"):
            raise ValueError(f"arch must be 'pointnet++' or 'pointnet', got {arch!r}")
        self.arch, self.lr, self.weight_decay, self.epochs = arch, lr, weight_decay, epochs
        self.batch_size, self.loss, self.patience, self.seed, self.progress = batch_size, loss, patience, seed, progress

    def fit(self, X, y, X_val=None, y_val=None) -> PointCloudRegressor:
        torch.manual_seed(self.seed)
        Xt = torch.as_tensor(np.asarray(X, np.float32))
        if Xt.ndim != 3 or Xt.shape[-1] != 4:
            raise ValueError(f"X must have shape (N, n_points, 4), got {tuple(Xt.shape)}")
        Y = _as_2d(y)
        if len(Y) != len(Xt):
            raise ValueError(f"X has {len(Xt)} rows but y has {len(Y)}")
        self.y_mean_, self.y_std_ = Y.mean(0), Y.std(0) + 1e-8
        self.net_ = PointNetPPLite(Y.shape[1]) if self.arch == "pointnet++" else PointNet(Y.shape[1])
        Xv = Yv = None
        if X_val is not None:
            Xv = torch.as_tensor(np.asarray(X_val, np.float32))
            Yv = torch.tensor((_as_2d(y_val, "y_val") - self.y_mean_) / self.y_std_, dtype=torch.float32)
        self.history_ = train_regressor(
            self.net_, [{"params": list(self.net_.parameters()), "lr": self.lr}], Xt,
            torch.tensor((Y - self.y_mean_) / self.y_std_, dtype=torch.float32), Xv, Yv, epochs=self.epochs,
            batch_size=self.batch_size, weight_decay=self.weight_decay, loss=self.loss, patience=self.patience,
            seed=self.seed, progress=self.progress, desc=f"{self.arch} fit")
        return self

    def predict(self, X) -> np.ndarray:
        if not hasattr(self, "net_"):
            raise RuntimeError("call fit before predict")
        Xt = torch.as_tensor(np.asarray(X, np.float32))
        self.net_.eval()
        with torch.no_grad():
            p = torch.cat([self.net_(Xt[idx]) for idx in _batches(len(Xt), 64, None)]).numpy()
        p = p * self.y_std_ + self.y_mean_
        return p[:, 0] if p.shape[1] == 1 else p
