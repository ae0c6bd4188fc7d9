"""docs/meshtok.md's python blocks run as written."""

import torch


def test_docs(docs_example):
    ns = docs_example("meshtok")
    assert ns["future"].shape == (2, 3, 32, 32, 1) and torch.isfinite(ns["future"]).all()
    assert ns["model"].token_count() == 28 and ns["tb"].tokens.shape == (2, 28, 32)
    assert ns["scores"].shape == (2, 16)
