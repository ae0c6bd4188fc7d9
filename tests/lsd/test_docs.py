"""docs/lsd.md's python blocks run as written."""

import numpy as np


def test_docs(docs_example):
    ns = docs_example("lsd")
    traj, ref = ns["traj"], ns["ref"]
    assert traj.positions.shape == ref.positions.shape == (61, 13, 3)
    assert 0 < traj.stats.acceptance_rate < 1 and traj.stats.steps_per_round > 2
    assert np.all(np.isfinite(traj.positions)) and ns["tr"].stats.acceptance_rate == 1.0
