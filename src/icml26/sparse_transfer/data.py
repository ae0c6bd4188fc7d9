"""Synthetic domain-transfer tasks with known ground truth, and explicit measure-preserving automorphisms (MPAs).

* `gauss_swap` (spec section 6, the main task): target y ~ N(0, I_d); source x = g(y) with
  g(y)_i = y_{pi(i)} + c cos(y_{pi(i)}), c = 0.4 (strictly increasing per coordinate for c < 1), pi the cyclic shift
  i -> i + 1 mod d. The ground truth f* = g^{-1} has a permutation Jacobian support: f*_j depends on x_{j-1} only.
  Training source and target samples are drawn independently (unpaired); the test set is paired.
* `uniform_dependent` (the official synthetic main run, spec section 2): y1 ~ U(-1, 1), y2 = U(-1, 1) + 0.5 y1;
  x = c cos(A y) + A y with A the coordinate swap. [reading] The official code draws c ~ U(0.3, 0.5); we draw
  one c per coordinate, once per task (a per-sample c would make x not a function of y).
* `make_mpa`: explicit MPAs for tests: a Haar-random rotation (for N(0, I)), the point reflection (for any
  symmetric P_y) and the per-coordinate quantile reflection t -> F_i^{-1}(1 - F_i(t)) (from a sample of P_y).
* `signed_permutations`, `anchor_genericity`: the 2^d d! signed permutations (the sparsity-preserving MPAs of
  N(0, I_d)) and m(y_a) = min_{h != id} ||h y_a - y_a|| (review note 2).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from icml26.common.validation import check_array, check_choice, check_float, check_int, check_seed

__all__ = [
    "MPA",
    "SyntheticTask",
    "anchor_genericity",
    "choose_anchor",
    "gauss_swap",
    "make_mpa",
    "phi_inverse",
    "signed_permutations",
    "uniform_dependent",
]


def phi_inverse(x: np.ndarray, c: float | np.ndarray, iters: int = 50) -> np.ndarray:
    """Solve t + c cos(t) = x element-wise (|c| < 1, so the map is strictly increasing) by safeguarded Newton."""
    x = np.asarray(x, dtype=float)
    t = x.copy()
    for _ in range(iters):
        t = t - (t + c * np.cos(t) - x) / (1.0 - c * np.sin(t))
    return t


@dataclass
class SyntheticTask:
    """A generated task: unpaired training samples, paired test samples and the ground truth.

    Attributes:
        X_train: (n, d) source samples; Y_train: (n, d) target samples drawn independently of X_train.
        Y_train_paired: (n, d) the true images f*(X_train) (hidden from the learner; anchors are drawn from it).
        X_test, Y_test: (n_test, d) paired held-out samples, Y_test = f*(X_test).
        support: (d, d) bool, the Jacobian support of f* (rows: output coordinates, columns: inputs).
        meta: task parameters (name, c, perm, ...).
    """

    X_train: np.ndarray
    Y_train: np.ndarray
    Y_train_paired: np.ndarray
    X_test: np.ndarray
    Y_test: np.ndarray
    support: np.ndarray
    meta: dict[str, Any] = field(default_factory=dict)

    def f_star(self, X: np.ndarray) -> np.ndarray:
        """The ground-truth map f* = g^{-1} applied to source rows X (n, d)."""
        X = check_array(X, "X", ndim=2, shape=(None, self.X_train.shape[1]))
        return _f_star(self.meta, X)

    def f_star_jacobian(self, X: np.ndarray) -> np.ndarray:
        """Analytic Jacobians (n, d, d) of f* at the rows of X."""
        X = check_array(X, "X", ndim=2, shape=(None, self.X_train.shape[1]))
        name, c, d = self.meta["name"], np.asarray(self.meta["c"]), X.shape[1]
        J = np.zeros((X.shape[0], d, d))
        if name == "gauss_swap":  # y_{(i+1) mod d} = phi^{-1}(x_i)
            for i in range(d):
                t = phi_inverse(X[:, i], c)
                J[:, (i + 1) % d, i] = 1.0 / (1.0 - c * np.sin(t))
        else:  # uniform_dependent: x_i = c_i cos(y_{1-i}) + y_{1-i}  ->  y_{1-i} = phi_{c_i}^{-1}(x_i)
            for i in range(2):
                t = phi_inverse(X[:, i], c[i])
                J[:, 1 - i, i] = 1.0 / (1.0 - c[i] * np.sin(t))
        return J


def _f_star(meta: dict[str, Any], X: np.ndarray) -> np.ndarray:
    c, d = np.asarray(meta["c"]), X.shape[1]
    Y = np.empty_like(X)
    if meta["name"] == "gauss_swap":
        for i in range(d):
            Y[:, (i + 1) % d] = phi_inverse(X[:, i], c)
    else:
        for i in range(2):
            Y[:, 1 - i] = phi_inverse(X[:, i], c[i])
    return Y


def _g_gauss(Y: np.ndarray, c: float) -> np.ndarray:
    d = Y.shape[1]
    shifted = Y[:, [(i + 1) % d for i in range(d)]]  # y_{pi(i)}, pi(i) = i + 1 mod d
    return shifted + c * np.cos(shifted)


def gauss_swap(n_train: int = 4000, n_test: int = 2000, d: int = 3, c: float = 0.4, seed: int = 0) -> SyntheticTask:
    """The Gauss-swap task of spec section 6 (see the module docstring). d >= 2, |c| < 1."""
    n_train = check_int(n_train, "n_train", min=1)
    n_test = check_int(n_test, "n_test", min=1)
    d = check_int(d, "d", min=2)
    c = check_float(c, "c", min=-1.0, max=1.0, min_open=True, max_open=True)
    rng = np.random.default_rng(check_seed(seed))
    y_paired = rng.standard_normal((n_train, d))
    y_train = rng.standard_normal((n_train, d))  # independent target sample: unpaired training
    y_test = rng.standard_normal((n_test, d))
    support = np.zeros((d, d), dtype=bool)
    for i in range(d):
        support[(i + 1) % d, i] = True
    meta = {"name": "gauss_swap", "c": c, "d": d, "perm": [(i + 1) % d for i in range(d)]}
    return SyntheticTask(_g_gauss(y_paired, c), y_train, y_paired, _g_gauss(y_test, c), y_test, support, meta)


def uniform_dependent(n_train: int = 27000, n_test: int = 3000, seed: int = 0) -> SyntheticTask:
    """The official synthetic main run's task (d = 2, 90/10 split of 30 000 by default)."""
    n_train = check_int(n_train, "n_train", min=1)
    n_test = check_int(n_test, "n_test", min=1)
    rng = np.random.default_rng(check_seed(seed))
    c = rng.uniform(0.3, 0.5, size=2)

    def sample(n: int) -> np.ndarray:
        y1 = rng.uniform(-1, 1, n)
        return np.stack([y1, rng.uniform(-1, 1, n) + 0.5 * y1], 1)

    def g(Y: np.ndarray) -> np.ndarray:
        ay = Y[:, ::-1]
        return c * np.cos(ay) + ay

    y_paired, y_train, y_test = sample(n_train), sample(n_train), sample(n_test)
    support = np.array([[False, True], [True, False]])
    meta = {"name": "uniform_dependent", "c": c.tolist(), "d": 2, "perm": [1, 0]}
    return SyntheticTask(g(y_paired), y_train, y_paired, g(y_test), y_test, support, meta)


# ------------------------------------------------------------------------------------------------- MPAs
@dataclass
class MPA:
    """A measure-preserving automorphism h of P_y as a callable on (n, d) arrays; `matrix` for linear kinds."""

    kind: str
    d: int
    matrix: np.ndarray | None = None
    sorted_ref: np.ndarray | None = None  # (m, d) sorted reference sample for the quantile reflection
    coords: tuple[int, ...] = ()

    def __call__(self, Y: np.ndarray) -> np.ndarray:
        Y = check_array(Y, "Y", ndim=2, shape=(None, self.d))
        if self.matrix is not None:
            return Y @ self.matrix.T
        out = Y.copy()
        ref = self.sorted_ref
        m = ref.shape[0]
        q = (np.arange(m) + 0.5) / m
        for i in self.coords:
            u = np.interp(Y[:, i], ref[:, i], q)  # empirical CDF F_i
            out[:, i] = np.interp(1.0 - u, q, ref[:, i])  # F_i^{-1}(1 - F_i(t))
        return out


def make_mpa(kind: str, d: int, seed: int = 0, Y_ref: np.ndarray | None = None,
             coords: tuple[int, ...] | list[int] | None = None) -> MPA:
    """An explicit MPA of P_y.

    Args:
        kind: "rotation" (Haar-random rotation, det +1: an MPA of N(0, I_d)), "reflection" (y -> -y: an MPA of any
            P_y symmetric about 0) or "quantile" (t -> F_i^{-1}(1 - F_i(t)) on `coords`, from the sample Y_ref).
        d: dimension >= 1 (>= 2 for a rotation).
        seed: seed of the random rotation.
        Y_ref: (m, d) sample of P_y, required for "quantile".
        coords: coordinates the quantile reflection acts on (default: all).
    """
    kind = check_choice(kind, "kind", ("rotation", "reflection", "quantile"))
    d = check_int(d, "d", min=1)
    if kind == "rotation":
        if d < 2:
            raise ValueError("d must be >= 2 for a rotation")
        rng = np.random.default_rng(check_seed(seed))
        q, r = np.linalg.qr(rng.standard_normal((d, d)))
        q = q * np.sign(np.diag(r))
        if np.linalg.det(q) < 0:
            q[:, 0] = -q[:, 0]
        return MPA("rotation", d, matrix=q)
    if kind == "reflection":
        return MPA("reflection", d, matrix=-np.eye(d))
    if Y_ref is None:
        raise ValueError("Y_ref (a sample of P_y) is required for kind='quantile'")
    Y_ref = check_array(Y_ref, "Y_ref", ndim=2, shape=(None, d), min_size=2 * d)
    cs = tuple(range(d)) if coords is None else tuple(check_int(c, "coords", min=0, max=d - 1) for c in coords)
    return MPA("quantile", d, sorted_ref=np.sort(Y_ref, axis=0), coords=cs)


def signed_permutations(d: int) -> np.ndarray:
    """All 2^d d! signed permutation matrices (k, d, d), the identity first."""
    d = check_int(d, "d", min=1, max=6)
    mats = []
    for perm in itertools.permutations(range(d)):
        for signs in itertools.product((1.0, -1.0), repeat=d):
            m = np.zeros((d, d))
            m[np.arange(d), perm] = signs
            mats.append(m)
    return np.stack(mats)


def anchor_genericity(y_a: np.ndarray) -> float:
    """m(y_a) = min over non-identity signed permutations h of ||h y_a - y_a||_2 (review note 2)."""
    y_a = check_array(y_a, "y_a", ndim=1)
    mats = signed_permutations(y_a.shape[0])[1:]
    return float(np.linalg.norm(mats @ y_a - y_a, axis=1).min())


def choose_anchor(Y_pairs: np.ndarray, seed: int, min_genericity: float = 0.5) -> int:
    """Index of the anchor pair drawn by `seed` among rows with m(y) >= min_genericity (0 = any row)."""
    Y_pairs = check_array(Y_pairs, "Y_pairs", ndim=2)
    min_genericity = check_float(min_genericity, "min_genericity", min=0.0)
    rng = np.random.default_rng(check_seed(seed) + 7919)
    if min_genericity == 0.0:
        return int(rng.integers(Y_pairs.shape[0]))
    mats = signed_permutations(Y_pairs.shape[1])[1:]
    m = np.linalg.norm(np.einsum("kij,nj->nki", mats, Y_pairs) - Y_pairs[:, None, :], axis=2).min(1)
    ok = np.flatnonzero(m >= min_genericity)
    if ok.size == 0:
        raise ValueError(f"no pair has genericity m(y) >= {min_genericity}; lower min_genericity")
    return int(rng.choice(ok))
