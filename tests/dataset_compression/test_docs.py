"""docs/dataset_compression.md's examples run exactly as written, and the paper-scale config files validate."""

import json
from pathlib import Path

from icml26.dataset_compression.scale import PAPER_CONFIG, validate_paper_config

ROOT = Path(__file__).parents[2]


def test_docs(docs_example):
    ns = docs_example("dataset_compression")
    assert ns["pca"].canvases_.shape == (3, 1, 16, 16)
    assert ns["acc_pca"] > 1 / 3 + 0.2  # well above chance on the example's 3 classes


def test_paper_config_files_validate():
    files = sorted((ROOT / "configs" / "paper" / "dataset_compression").glob("*.json"))
    assert len(files) == 3
    for path in files:
        over = json.loads(path.read_text())
        assert set(over) - {"_comment"} <= set(PAPER_CONFIG), path.name
        validate_paper_config({**PAPER_CONFIG, **{k: v for k, v in over.items() if k != "_comment"}})
