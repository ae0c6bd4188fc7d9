def test_docs(docs_example):
    ns = docs_example("sparse_transfer")
    te = ns["translation_error"](ns["est"].transform(ns["distort"](ns["y_test"])), ns["y_test"])
    assert te < 0.6  # even the 300-step demo aligns content (a wrong signed permutation gives TE ~ 1.2)
