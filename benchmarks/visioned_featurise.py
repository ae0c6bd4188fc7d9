"""Featurisation cost from a cached density cube: multi-shot images vs ED point clouds (spec §6 V3).

    python benchmarks/visioned_featurise.py [--n-molecules 20] [--sizes 32 64 224] [--points 1024 2048]

Prints the median wall time per molecule (one thread) of `render_multishot` (charges and exact ESP) at several
image sizes and of `ed_point_cloud` (threshold + FPS) at several point counts, with the stored bytes of each,
and the vectorised FPS (`farthest_point_sampling`: one gemv per step) against the direct per-point loop it
replaced (same indices on voxel lattices).
Densities come from the same cache as the reproduction (`icml26.common.cache_dir("visioned")`).
"""

from __future__ import annotations

import argparse

import numpy as np
from threadpoolctl import threadpool_limits

from icml26.visioned import EDCalculator, ed_point_cloud, farthest_point_sampling, render_multishot
from icml26.visioned.data import enumerate_small_molecules, stratified_sample
from icml26.visioned.metrics import median_time, representation_bytes


def fps_loop(points: np.ndarray, n: int, start: int = 0) -> np.ndarray:
    """Direct FPS: per step, the differences of every point to the newest sample (the pre-vectorised version)."""
    pts = np.asarray(points, np.float64)[:, :3]
    idx = np.empty(n, np.int64)
    idx[0] = start
    d = np.full(len(pts), np.inf)
    last = pts[start]
    for i in range(1, n):
        diff = pts - last
        d = np.minimum(d, np.einsum("ij,ij->i", diff, diff))
        idx[i] = int(np.argmax(d))
        last = pts[idx[i]]
    return idx


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-molecules", type=int, default=20)
    ap.add_argument("--sizes", type=int, nargs="+", default=[32, 64])
    ap.add_argument("--points", type=int, nargs="+", default=[1024, 2048])
    ap.add_argument("--exact-esp", action="store_true", help="also time esp='exact' (PySCF int1e_grids)")
    a = ap.parse_args()
    mols = stratified_sample(enumerate_small_molecules(8), a.n_molecules, seed=0)
    recs = EDCalculator(n_workers=2).compute([m["smiles"] for m in mols])
    rows = []
    with threadpool_limits(1):
        for size in a.sizes:
            for esp in ["charges"] + (["exact"] if a.exact_esp else []):
                t, _ = median_time(lambda r: render_multishot(r, size=size, esp=esp), recs)
                nb = representation_bytes(render_multishot(recs[0], size=size))
                rows.append((f"render 6 shots {size}px esp={esp}", t, nb))
        for n in a.points:
            t, _ = median_time(lambda r: ed_point_cloud(r, n_points=n), recs)
            nb = representation_bytes(ed_point_cloud(recs[0], n_points=n))
            rows.append((f"point cloud threshold 1e-3 + FPS {n}", t, nb))
        lattices = [np.argwhere(np.asarray(r.cube, np.float32) >= 1e-3) for r in recs]
        for n in a.points:
            same = all(np.array_equal(fps_loop(g, n), farthest_point_sampling(g, n, start=0)) for g in lattices[:3])
            t_loop, _ = median_time(lambda g: fps_loop(g, n), lattices)
            t_vec, _ = median_time(lambda g: farthest_point_sampling(g, n, start=0), lattices)
            rows.append((f"FPS {n}: direct loop", t_loop, 0))
            rows.append((f"FPS {n}: vectorised (gemv), identical={same}", t_vec, 0))
    width = max(len(r[0]) for r in rows)
    print(f"{'representation':{width}s}  ms/molecule  bytes/molecule")
    for name, t, b in rows:
        print(f"{name:{width}s}  {1e3 * t:11.2f}  {b:14d}")
    n_vox = np.median([int((np.asarray(r.cube, np.float32) >= 1e-3).sum()) for r in recs])
    print(f"median voxels with rho >= 1e-3 at {recs[0].spacing} A spacing: {n_vox:.0f}")


if __name__ == "__main__":
    main()
