"""One plotting style for every paper's figures (headless Agg backend)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]


def new_figure(ncols: int = 1, nrows: int = 1, width: float = 5.0, height: float = 3.6, **kw):
    """`plt.subplots` with the project style: light grid, no top/right spines."""
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False, **kw)
    for ax in axes.flat:
        ax.grid(True, alpha=0.3)
        ax.spines[["top", "right"]].set_visible(False)
        ax.set_prop_cycle(color=PALETTE)
    fig.set_layout_engine("constrained")
    return fig, (axes[0, 0] if nrows * ncols == 1 else axes)
