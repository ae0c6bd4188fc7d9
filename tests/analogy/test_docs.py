"""docs/analogy.md's python blocks run as written."""


def test_docs(docs_example):
    ns = docs_example("analogy")
    names, tok = ns["names"], ns["tok"]
    assert [names[t] for t in ns["pred"]] == ["flier", "swimmer"]
    C = ns["C"]
    assert C[0, 1] > C[0, 2] + 0.2  # robin-sparrow more aligned than robin-trout
    assert ns["acc"]["joint"] >= 0.95 and ns["acc"]["attr_then_sim"] <= 0.6
    assert len(ns["log"]["time_course"]["step"]) > 2 and tok["HAS"] in ns["answer_sets"]
