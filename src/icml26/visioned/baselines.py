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
import torch.nn.functional as F

from icml26.common.validation import check_array, check_bool, check_choice, check_float, check_int, check_seed
from icml26.visioned.model import _as_2d, _batches, train_regressor

__all__ = ["ecfp_features", "ECFPRegressor", "PointNetPPLite", "PointNet", "PointCloudRegressor",
           "fps_torch"]


def ecfp_features(smiles: Sequence[str], radius: int = 2, n_bits: int = 2048) -> np.ndarray:
    """Morgan / ECFP4 bit vectors: (N, n_bits) uint8. Raises ValueError naming `smiles[i]` if unparsable."""
    from rdkit import Chem, DataStructs
    from rdkit.Chem import rdFingerprintGenerator

    radius, n_bits = check_int(radius, "radius", min=0), check_int(n_bits, "n_bits", min=1)
    if isinstance(smiles, str):
        raise TypeError("smiles must be a list of SMILES strings, not one string")
    smiles = list(smiles)
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
        self.model, self.radius, self.n_bits, self.seed, self.kwargs = model, radius, n_bits, seed, kwargs
        self._check_params()

    def _check_params(self) -> None:
        check_choice(self.model, "model", ("mlp", "rf"))
        self.radius, self.n_bits = check_int(self.radius, "radius", min=0), check_int(self.n_bits, "n_bits", min=1)
        self.seed = check_seed(self.seed)

    def _make(self):
        if self.model == "rf":
            from sklearn.ensemble import RandomForestRegressor

            return RandomForestRegressor(**({"n_estimators": 200, "random_state": self.seed, "n_jobs": 1}
                                            | self.kwargs))
        from sklearn.neural_network import MLPRegressor

        return MLPRegressor(**({"hidden_layer_sizes": (256, 64), "alpha": 1e-3, "max_iter": 1000,
                                "random_state": self.seed} | self.kwargs))

    def fit(self, smiles: Sequence[str], y) -> ECFPRegressor:
        self._check_params()
        X = ecfp_features(smiles, self.radius, self.n_bits).astype(np.float64)  # uint8 @ float has no BLAS path
        Y = _as_2d(y)
        if len(Y) != len(X) or len(X) < 2:
            raise ValueError(f"smiles has {len(X)} molecules but y has {len(Y)} rows (need >= 2, equal)")
        self.y_mean_, self.y_std_ = Y.mean(0), Y.std(0) + 1e-8
        Z = (Y - self.y_mean_) / self.y_std_
        self.est_ = self._make().fit(X, Z[:, 0] if Z.shape[1] == 1 else Z)
        return self

    def predict(self, smiles: Sequence[str]) -> np.ndarray:
        if not hasattr(self, "est_"):
            raise RuntimeError("call fit before predict")
        p = np.asarray(self.est_.predict(ecfp_features(smiles, self.radius, self.n_bits).astype(np.float64)), float)
        p = p.reshape(len(smiles), -1) * self.y_std_ + self.y_mean_
        return p[:, 0] if p.shape[1] == 1 else p


# ---------------------------------------------------------------------------------------------- point clouds
def fps_torch(xyz: torch.Tensor, n: int) -> torch.Tensor:
    """Batched farthest-point sampling starting at index 0: xyz (B, N, 3) -> indices (B, n)."""
    if xyz.ndim != 3 or xyz.shape[-1] != 3:
        raise ValueError(f"xyz must have shape (B, N, 3), got {tuple(xyz.shape)}")
    B, N, _ = xyz.shape
    n = check_int(n, "n", min=1)
    if n > N:
        raise ValueError(f"n: cannot sample {n} centroids from {N} points")
    idx = torch.zeros(B, n, dtype=torch.long)
    dist = torch.full((B, N), float("inf"))
    last = xyz[:, 0]
    ar = torch.arange(B)
    for i in range(1, n):
        dist = torch.minimum(dist, (xyz - last[:, None]).pow(2).sum(-1))
        idx[:, i] = dist.argmax(-1)
        last = xyz[ar, idx[:, i]]
    return idx


def _check_pc(pc: torch.Tensor) -> None:
    if not isinstance(pc, torch.Tensor):
        raise TypeError(f"point clouds must be a torch tensor (B, N, 4), got {type(pc).__name__}")
    if pc.ndim != 3 or pc.shape[-1] != 4 or pc.shape[1] < 1:
        raise ValueError(f"point clouds must have shape (B, N, 4), got {tuple(pc.shape)}")
    if not bool(torch.isfinite(pc).all()):
        raise ValueError("point clouds must be finite; they hold NaN/inf values")


def _point_features(pc: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    xyz = pc[..., :3] / 5.0
    rho = torch.log10(pc[..., 3:4].clamp_min(1e-6)) / 3.0
    return xyz, rho


def _neighbour_max(h: torch.Tensor, nbr: torch.Tensor) -> torch.Tensor:
    """max over the k neighbours: h (B, N, C), nbr (B, M, k) -> (B, M, C), the value and gradient of
    ``h[b, nbr].max(2)``. The winning neighbour of every channel is found without autograd, then only the
    winners are gathered with autograd (a (B, M, C) gather instead of saving the (B, M, k, C) block: ~3x faster
    training steps on CPU, same numbers)."""
    B, N, C = h.shape
    M, k = nbr.shape[1:]
    with torch.no_grad():
        flat = (nbr + N * torch.arange(B, device=nbr.device)[:, None, None]).reshape(-1)
        arg = F.embedding(flat, h.detach().reshape(B * N, C)).view(B, M, k, C).max(2).indices  # (B, M, C) in 0..k-1
        sel = torch.gather(nbr, 2, arg)  # (B, M, C) point index of each channel's winner
    return torch.gather(h, 1, sel)


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
        nc = check_array(n_centroids, "n_centroids", shape=(2,), dtype=np.int64)
        if nc.min() < 1:
            raise ValueError(f"n_centroids must be 2 positive sizes, got {tuple(nc.tolist())}")
        k, n_out = check_int(k, "k", min=1), check_int(n_out, "n_out", min=1)
        hidden = check_int(hidden, "hidden", min=1)
        widths = tuple(check_array(widths, "widths", shape=(2,), dtype=np.int64).tolist())
        if min(widths) < 1:
            raise ValueError(f"widths must be 2 positive sizes, got {widths}")
        self.n_centroids, self.k, self.fps_ordered = tuple(nc.tolist()), k, check_bool(fps_ordered, "fps_ordered")
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
        return cen, torch.relu(_neighbour_max(h, nbr) - hc)

    def forward(self, pc: torch.Tensor, i1=None, nn1=None, i2=None, nn2=None) -> torch.Tensor:
        _check_pc(pc)
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
        n_out, hidden = check_int(n_out, "n_out", min=1), check_int(hidden, "hidden", min=1)
        widths = tuple(check_array(widths, "widths", shape=(2,), dtype=np.int64).tolist())
        if min(widths) < 1:
            raise ValueError(f"widths must be 2 positive sizes, got {widths}")
        self.mlp = nn.Sequential(nn.Linear(4, widths[0]), nn.ReLU(), nn.Linear(widths[0], widths[1]), nn.ReLU())
        self.head = nn.Sequential(nn.Linear(widths[1], hidden), nn.ReLU(), nn.Linear(hidden, n_out))

    def forward(self, pc: torch.Tensor) -> torch.Tensor:
        _check_pc(pc)
        xyz, rho = _point_features(pc.float())
        return self.head(self.mlp(torch.cat([xyz, rho], -1)).amax(1))


class PointCloudRegressor:
    """ED point-cloud property regressor: fit(X (N, n_points, 4), y) / predict(X).

    Args: arch ("pointnet++" | "pointnet"), lr (1e-3), weight_decay (0.05), epochs (30, the most epochs),
    batch_size (32), loss ("mse" | "l1"), patience (None = all epochs; k = stop after k epochs without a better
    validation MAE; the best validation epoch is kept either way), seed, fps_ordered (rows of X in FPS order,
    as `ed_point_cloud` returns), device. Point clouds must be finite with rho (column 3) > 0.
    Each fit builds a fresh network (no state carried over).
    """

    def __init__(self, arch: str = "pointnet++", lr: float = 1e-3, weight_decay: float = 0.05, epochs: int = 30,
                 batch_size: int = 32, loss: str = "mse", patience: int | None = None, seed: int = 0,
                 fps_ordered: bool = True, progress: bool = False, device: str | torch.device = "cpu") -> None:
        self.device = torch.device(device)
        self.arch, self.lr, self.weight_decay, self.epochs = arch, lr, weight_decay, epochs
        self.batch_size, self.loss, self.patience, self.seed, self.progress = batch_size, loss, patience, seed, progress
        self.fps_ordered = fps_ordered
        self._check_params()

    def _check_params(self) -> None:
        """Validate the settings (run by __init__ and again by fit)."""
        check_choice(self.arch, "arch", ("pointnet++", "pointnet"))
        self.lr = check_float(self.lr, "lr", min=0.0, min_open=True)
        self.weight_decay = check_float(self.weight_decay, "weight_decay", min=0.0)
        self.epochs = check_int(self.epochs, "epochs", min=1)
        self.batch_size = check_int(self.batch_size, "batch_size", min=1)
        check_choice(self.loss, "loss", ("mse", "l1"))
        self.patience = None if self.patience is None else check_int(self.patience, "patience", min=0)
        self.seed = check_seed(self.seed)
        check_bool(self.fps_ordered, "fps_ordered")
        check_bool(self.progress, "progress")

    @staticmethod
    def _clouds(X, name: str) -> torch.Tensor:
        x = check_array(X, name, ndim=3, dtype=np.float32)
        if x.shape[-1] != 4 or x.shape[1] < 1 or len(x) < 1:
            raise ValueError(f"{name} must have shape (N, n_points, 4) with columns x, y, z, rho, got {x.shape}")
        if np.any(x[..., 3] <= 0):
            raise ValueError(f"{name}: rho (column 3) must be > 0 e/bohr^3 (ed_point_cloud keeps rho >= threshold)")
        return torch.from_numpy(np.ascontiguousarray(x))

    def fit(self, X, y, X_val=None, y_val=None) -> PointCloudRegressor:
        self._check_params()
        torch.manual_seed(self.seed)
        Xt = self._clouds(X, "X")
        Y = _as_2d(y)
        if len(Y) != len(Xt):
            raise ValueError(f"X has {len(Xt)} rows but y has {len(Y)}")
        if (X_val is None) != (y_val is None):
            raise ValueError("X_val and y_val must be given together (or neither)")
        self.y_mean_, self.y_std_ = Y.mean(0), Y.std(0) + 1e-8
        self.net_ = (PointNetPPLite(Y.shape[1], fps_ordered=self.fps_ordered) if self.arch == "pointnet++"
                     else PointNet(Y.shape[1]))
        self.n_points_ = Xt.shape[1]
        Xv = Yv = None
        if X_val is not None:
            Xv_raw = self._clouds(X_val, "X_val")
            Yv_raw = _as_2d(y_val, "y_val")
            if Xv_raw.shape[1] != self.n_points_ or Yv_raw.shape != (len(Xv_raw), Y.shape[1]):
                raise ValueError(f"X_val {tuple(Xv_raw.shape)} / y_val {Yv_raw.shape} do not match X "
                                 f"{tuple(Xt.shape)} / y {Y.shape}")
            Xv = self._inputs(Xv_raw)
            Yv = torch.tensor((Yv_raw - self.y_mean_) / self.y_std_, dtype=torch.float32)
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
        X = self._clouds(X, "X")
        if X.shape[1] != self.n_points_:
            raise ValueError(f"X must have {self.n_points_} points per cloud like the training data, got {X.shape[1]}")
        Xt = self._inputs(X)
        self.net_.eval()
        with torch.no_grad():
            p = torch.cat([self.net_(*[x[idx].to(self.device) for x in Xt]).cpu()
                           for idx in _batches(len(Xt[0]), 64, None)]).numpy()
        p = p * self.y_std_ + self.y_mean_
        return p[:, 0] if p.shape[1] == 1 else p
