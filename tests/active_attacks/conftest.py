"""Shared fixtures: one small pretrained ToxWorld victim + classifier for the whole module (built once), and the
session's two end-to-end runs (the smoke run of the experiment and the paper-scale path at toy size), each run once
and shared by the tests that read them."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch

from icml26.active_attacks import BagOfWordsToxicityClassifier, ToxWorld, VictimModel
from icml26.common.lm import TinyLM, TinyLMConfig


def smoke_config() -> dict:
    """The smoke config with fewer evaluation draws (plumbing only; CONFIGS["smoke"] itself is unchanged)."""
    from icml26.active_attacks import experiment as E

    return {**E.CONFIGS["smoke"], "scale": "smoke", "n_eval": 16, "asr_samples": 16, "benign_heldout": 8,
            "mle_samples": 16, "probes_per_category": 4, "victim_corpus": 200}


def toy_paper_config(out_dir: Path) -> dict:
    """The paper-scale path with tiny Llama models (`attacker="toy"`), writing its checkpoints under `out_dir`."""
    from icml26.active_attacks import experiment as E

    cfg = dict(E.CONFIGS["paper"])
    cfg.update({"attacker": "toy", "victim": "toy", "classifier": "toy", "classifier_kind": "sequence",
                "dtype": "float32", "sft_steps": 3, "sft_batch": 8, "steps": 4, "batch_size": 4, "grad_accum": 1,
                "lora_r": 4, "lora_alpha": 8, "interval": 2, "safety_steps": 2, "safety_batch": 4, "mle_steps": 2,
                "n_eval": 8, "n_responses": 2, "victim_max_new_tokens": 4, "min_len": 4, "max_len": 6,
                "buffer_size": 20, "seed_batches": 1, "lr": 1e-3, "out_dir": str(out_dir / "ckpt"),
                "save_all_ranks": True, "scale": "paper"})
    return cfg


@pytest.fixture(scope="session", name="smoke_cfg")
def smoke_cfg_fixture() -> dict:
    return smoke_config()


@pytest.fixture(scope="session", name="toy_paper_config")
def toy_paper_config_fixture():
    return toy_paper_config


@pytest.fixture(scope="session")
def smoke_result(smoke_cfg):
    """`experiment.run(smoke_config())`, once per session."""
    from icml26.active_attacks import experiment as E

    return E.run(dict(smoke_cfg))


@pytest.fixture(scope="session")
def paper_run(tmp_path_factory):
    """(Result, out_dir) of `scale.run_paper(toy_paper_config(out_dir))`, once per session."""
    if not all(importlib.util.find_spec(m) for m in ("transformers", "peft")):
        pytest.skip("the paper-scale path needs transformers and peft")
    from icml26.active_attacks import scale as S

    out = tmp_path_factory.mktemp("aa_paper")
    return S.run_paper(toy_paper_config(out)), out


@pytest.fixture(scope="session")
def toy():
    """world, classifier and `make_victim()` (a fresh copy of one pretrained victim: d 64, 2 layers, 100 steps)."""
    torch.manual_seed(0)
    world = ToxWorld()
    rng = np.random.default_rng(0)
    texts, labels = world.classifier_corpus(600, rng)
    clf = BagOfWordsToxicityClassifier().fit(texts, labels)
    model = TinyLM(TinyLMConfig(vocab_size=world.tokenizer.vocab_size, d_model=64, n_layers=2, n_heads=4, ctx=32))
    victim = VictimModel(model, world.tokenizer, {"max_new_tokens": 6})
    pairs = world.victim_corpus(3000, rng)
    victim.finetune([p for p, _ in pairs], [r for _, r in pairs], steps=100, lr=3e-3, batch_size=64,
                    generator=torch.Generator().manual_seed(0))
    state = {k: v.clone() for k, v in model.state_dict().items()}

    def make_victim() -> VictimModel:
        m = TinyLM(TinyLMConfig(vocab_size=world.tokenizer.vocab_size, d_model=64, n_layers=2, n_heads=4, ctx=32))
        m.load_state_dict(state)
        return VictimModel(m, world.tokenizer, {"max_new_tokens": 6})

    return {"world": world, "clf": clf, "make_victim": make_victim}
