"""Shared fixtures: one small pretrained ToxWorld victim + classifier for the whole module (built once)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from icml26.active_attacks import BagOfWordsToxicityClassifier, ToxWorld, VictimModel
from icml26.common.lm import TinyLM, TinyLMConfig


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
