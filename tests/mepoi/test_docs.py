"""docs/mepoi.md's usage example runs as written (on the data it makes)."""


def test_docs(docs_example):
    ns = docs_example("mepoi")
    assert ns["emb"].shape == (80, 32) and ns["text"].shape == (80, 64)
