"""docs/usb.md's example runs exactly as written."""

import pytest

pytest.importorskip("ot")
pytest.importorskip("anndata")


def test_docs(docs_example):
    ns = docs_example("usb")
    assert ns["pop"].counts().shape == (4,)
    assert list(ns["model"].times_) == [0.0, 1.0, 2.0, 3.0]
