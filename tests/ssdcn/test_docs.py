def test_docs(docs_example):
    docs_example("ssdcn")
