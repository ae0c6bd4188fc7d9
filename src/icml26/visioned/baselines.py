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
           "fps_torch"]


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


def _point_features(pc: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    xyz = pc[..., :3] / 5.0
    rho = torch.log10(pc[..., 3:4].clamp_min(1e-6)) / 3.0
    return xyz, rho


class PointNetPPLite(nn.Module):
    """PointNet++-lite on ED point clouds (B, N, 4) -> (B, n_out).

    Two set-abstraction layers: centroids by farthest-point sampling from index 0, k nearest neighbours, a
    shared one-layer MLP (Linear + ReLU) on [xyz_j - xyz_centroid, f_j], max over the neighbours; then a global
    max-pool and the MLP head. Two exact speed-ups, same function:
    - with `fps_ordered=True` (default) the input rows are taken to be in FPS order already (what
      `ed_point_cloud(method="fps")` returns); FPS is prefix-consistent, so the centroids are the first 512 / 128
      points and no FPS loop runs. Set `fps_ordered=False` for arbitrary point order.
    - the shared linear layer is applied per point before grouping (W [x_j - c, f_j] = (W_x x_j + W_f f_j) - W_x c),
      and the centroid term and the ReLU are applied after the max over neighbours (both commute with it);
      kNN indices may be precomputed once per cloud (`neighbours`).
    """

    def __init__(self, n_out: int = 1, n_centroids: Sequence[int] = (512, 128), k: int = 16,
                 widths: Sequence[int] = (64, 128), hidden: int = 64, fps_ordered: bool = True) -> None:
        super().__init__()
        self.n_centroids, self.k, self.fps_ordered = tuple(n_centroids), k, fps_ordered
        self.sa1 = nn.Linear(3 + 1, widths[0])
        self.sa2 = nn.Linear(3 + widths[0], widths[1])
        self.head = nn.Sequential(nn.Linear(widths[1], hidden), nn.ReLU(), nn.Linear(hidden, n_out))

    def _sizes(self, n: int) -> tuple[int, int]:
        n1 = min(self.n_centroids[0], max(1, n // 2))  # smaller clouds: keep the 2x / 4x ratios
        return n1, min(self.n_centroids[1], max(1, n1 // 4))

    @torch.no_grad()
    def neighbours(self, pc: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Centroid and kNN indices of both layers: (i1 (B, n1), nn1 (B, n1, k), i2 (B, n2), nn2 (B, n2, k))."""
        if pc.ndim != 3 or pc.shape[-1] != 4:
            raise ValueError(f"point clouds must have shape (B, N, 4), got {tuple(pc.shape)}")
        xyz = pc[..., :3].float()
        B, N = xyz.shape[:2]
        n1, n2 = self._sizes(N)
        bi = torch.arange(B)[:, None]
        i1 = torch.arange(n1).expand(B, -1) if self.fps_ordered else fps_torch(xyz, n1)
        c1 = xyz[bi, i1]
        nn1 = torch.cdist(c1, xyz).topk(min(self.k, N), dim=-1, largest=False).indices
        i2 = torch.arange(n2).expand(B, -1) if self.fps_ordered else fps_torch(c1, n2)
        nn2 = torch.cdist(c1[bi, i2], c1).topk(min(self.k, n1), dim=-1, largest=False).indices
        return i1, nn1, i2, nn2

    @staticmethod
    def _sa(lin: nn.Linear, xyz: torch.Tensor, feats: torch.Tensor, ci: torch.Tensor, nbr: torch.Tensor):
        B = len(xyz)
        bi = torch.arange(B)[:, None]
        h = lin(torch.cat([xyz, feats], -1))  # (B, N, C): W_x x_j + W_f f_j + b
        cen = xyz[bi, ci]  # (B, M, 3)
        hc = cen @ lin.weight[:, :3].T  # (B, M, C): W_x c
        # relu and "- W_x c" commute with the max over neighbours: max_k relu(h_j - hc) = relu(max_k h_j - hc)
        g = h[torch.arange(B)[:, None, None], nbr].max(2).values  # (B, M, C)
        return cen, torch.relu(g - hc)

    def forward(self, pc: torch.Tensor, i1=None, nn1=None, i2=None, nn2=None) -> torch.Tensor:
        if pc.ndim != 3 or pc.shape[-1] != 4:
            raise ValueError(f"point clouds must have shape (B, N, 4), got {tuple(pc.shape)}")
        if i1 is None:
            i1, nn1, i2, nn2 = self.neighbours(pc)
        xyz, rho = _point_features(pc.float())
        c1, f1 = self._sa(self.sa1, xyz, rho, i1, nn1)  # (B, 512, 64)
        _, f2 = self._sa(self.sa2, c1, f1, i2, nn2)  # (B, 128, 128)
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
    loss ("mse" | "l1"), patience, seed, fps_ordered (rows of X in FPS order, as `ed_point_cloud` returns), device.
    """

    def __init__(self, arch: str = "pointnet++", lr: float = 1e-3, weight_decay: float = 0.05, epochs: int = 30,
                 batch_size: int = 32, loss: str = "mse", patience: int | None = None, seed: int = 0,
                 fps_ordered: bool = True, progress: bool = False, device: str | torch.device = "cpu") -> None:
        self.device = torch.device(device)
        if arch not in ("pointnet++", "pointnet"):
            raise ValueError(f"arch must be 'pointnet++' or 'pointnet', got {arch!r}")
        self.arch, self.lr, self.weight_decay, self.epochs = arch, lr, weight_decay, epochs
        self.batch_size, self.loss, self.patience, self.seed, self.progress = batch_size, loss, patience, seed, progress
        self.fps_ordered = fps_ordered

    def fit(self, X, y, X_val=None, y_val=None) -> PointCloudRegressor:
        torch.manual_seed(self.seed)
        Xt = torch.as_tensor(np.asarray(X, np.float32))
        if Xt.ndim != 3 or Xt.shape[-1] != 4:
            raise ValueError(f"X must have shape (N, n_points, 4), got {tuple(Xt.shape)}")
        Y = _as_2d(y)
        if len(Y) != len(Xt):
            raise ValueError(f"X has {len(Xt)} rows but y has {len(Y)}")
        self.y_mean_, self.y_std_ = Y.mean(0), Y.std(0) + 1e-8
        self.net_ = (PointNetPPLite(Y.shape[1], fps_ordered=self.fps_ordered) if self.arch == "pointnet++"
                     else PointNet(Y.shape[1]))
        Xv = Yv = None
        if X_val is not None:
            Xv = self._inputs(torch.as_tensor(np.asarray(X_val, np.float32)))
            Yv = torch.tensor((_as_2d(y_val, "y_val") - self.y_mean_) / self.y_std_, dtype=torch.float32)
        Xt = self._inputs(Xt)
        self.history_ = train_regressor(
            self.net_, [{"params": list(self.net_.parameters()), "lr": self.lr}], Xt,
            torch.tensor((Y - self.y_mean_) / self.y_std_, dtype=torch.float32), Xv, Yv, epochs=self.epochs,
            batch_size=self.batch_size, weight_decay=self.weight_decay, loss=self.loss, patience=self.patience,
            seed=self.seed, progress=self.progress, desc=f"{self.arch} fit", device=self.device)
        return self

    def _inputs(self, Xt: torch.Tensor):
        """(X,) or (X, neighbour indices...): kNN groups depend only on the fixed geometry, computed once."""
        self.net_.cpu()
        if isinstance(self.net_, PointNetPPLite):
            parts = [self.net_.neighbours(Xt[idx]) for idx in _batches(len(Xt), 64, None)]
            return (Xt,) + tuple(torch.cat([p[j] for p in parts]) for j in range(4))
        return (Xt,)

    def predict(self, X) -> np.ndarray:
        if not hasattr(self, "net_"):
            raise RuntimeError("call fit before predict")
        Xt = self._inputs(torch.as_tensor(np.asarray(X, np.float32)))
        self.net_.eval()
        with torch.no_grad():
            p = torch.cat([self.net_(*[x[idx].to(self.device) for x in Xt]).cpu()
                           for idx in _batches(len(Xt[0]), 64, None)]).numpy()
        p = p * self.y_std_ + self.y_mean_
        return p[:, 0] if p.shape[1] == 1 else p
