"""docs/common.md's example runs as written."""


def test_common_docs_example(docs_example):
    ns = docs_example("common")
    assert ns["model"].num_params() > 0


def test_readme_example(tmp_path, monkeypatch):
    """README.md's usage example runs as written and trains: the loss goes down under AdamWPower."""
    import re
    from pathlib import Path

    import torch

    ROOT = Path(__file__).resolve().parents[2]
    blocks = [m.group(1) for m in re.finditer(r"^```python\n(.*?)^```", (ROOT / "README.md").read_text(),
                                              flags=re.S | re.M)]
    assert len(blocks) == 1, "README.md should have exactly one runnable ```python block"
    monkeypatch.chdir(tmp_path)
    torch.manual_seed(0)
    ns: dict = {"__name__": "readme"}
    exec(compile(blocks[0], "README.md", "exec"), ns)  # noqa: S102 - our own docs
    first = torch.nn.functional.mse_loss(torch.zeros_like(ns["y"]), ns["y"]).item()
    assert ns["loss"].item() < first
    assert ns["out"].shape == ns["q"].shape and torch.isfinite(ns["out"]).all()
