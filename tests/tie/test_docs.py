"""docs/tie.md's python blocks run as written."""


def test_docs(docs_example):
    ns = docs_example("tie")
    q = ns["q"]
    assert len(q) == 1 and q.pop().id == "r1"  # r2 (yes/no) was served first
