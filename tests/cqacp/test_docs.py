"""docs/cqacp.md's example runs exactly as written."""


def test_docs(docs_example):
    ns = docs_example("cqacp")
    assert ns["y_pis"].shape == (len(ns["y_test"]), 2, 3)
    assert ns["params"].mean.shape == (1000,)
