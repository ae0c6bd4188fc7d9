"""docs/common.md's example runs as written."""


def test_common_docs_example(docs_example):
    ns = docs_example("common")
    assert ns["model"].num_params() > 0
