"""docs/verbalization.md's usage example runs exactly as written."""


def test_docs(docs_example):
    ns = docs_example("verbalization")
    assert 0.0 <= ns["report"]["acc_target"] <= 1.0
    assert sorted(ns["grid"]) == [(1, 0), (1, 1), (2, 0), (2, 1)]
