"""Project-wide rules of issue 30, checked on the source: verdicts come only from icml26.common.stats.

- No paper package defines its own interval or "decides" helper (paired t, bootstrap CI, a "can this size decide"
  rule): a function named like one must build on icml26.common.stats (e.g. a note that words a stats.Decision).
- No paper builds a `Decision(...)` by hand or passes a literal verdict string to one.
- Every paper's `CONFIGS` passes its own `validate_config`, which refuses a misspelt key.
"""

import ast
import importlib
import re
from pathlib import Path

import pytest

from icml26.registry import PAPERS

SRC = Path(__file__).resolve().parents[2] / "src" / "icml26"
HELPER = re.compile(r"^_*(paired_ci|paired_bootstrap_ci|seed_decidable|decides?|decide_note|decide_text|"
                    r"decidability|undecided|t_ci|bootstrap_ci|ci)$")


def _paper_files():
    for slug in PAPERS:
        d = SRC / slug
        if d.is_dir():
            yield from sorted(d.rglob("*.py"))


@pytest.mark.parametrize("path", list(_paper_files()), ids=lambda p: str(p.relative_to(SRC)))
def test_no_private_statistics_or_hand_made_decisions(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and HELPER.match(node.name):
            body = ast.unparse(node)
            assert "stats." in body or "Decision" in body, (
                f"{path.name}:{node.lineno} defines {node.name}(): intervals and decisions come from "
                "icml26.common.stats")
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            assert name != "Decision", f"{path.name}:{node.lineno} builds a Decision by hand: use stats.decide/exact"


@pytest.mark.parametrize("slug", [s for s, p in PAPERS.items() if p.is_implemented()])
def test_configs_validate_and_unknown_keys_are_refused(slug):
    exp = importlib.import_module(PAPERS[slug].experiment_module)
    validate = getattr(exp, "validate_config", None)
    if validate is None:
        pytest.skip(f"{slug} has no validate_config")
    for scale, cfg in exp.CONFIGS.items():
        if scale == "paper":
            continue  # paper configs are validated by scale.py's own entry point
        validate({**cfg, "scale": scale})
        with pytest.raises(ValueError, match="unknown key"):
            validate({**cfg, "scale": scale, "n_seedz": 3})
