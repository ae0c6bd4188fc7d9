"""docs/matching_bandits.md's python blocks run as written."""

import numpy as np


def test_docs(docs_example):
    ns = docs_example("matching_bandits")
    pol = ns["policy"]
    assert pol.n_commit_ + pol.n_refine_ == 3000 and pol.n_commit_ > 0
    assert np.abs(pol.theta_ - ns["theta"]).max() < 0.3      # it learned the tastes
    assert ns["trace"].T == 2000
