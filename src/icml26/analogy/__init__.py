"""Analogical reasoning via feature resemblance (Xu, Yan, Zhang; ICML 2026, arXiv:2603.05143): synthetic
analogy / two-hop worlds, the minimal factorized transformer (float64, typed softmax), full-batch GD, the three
curricula and the representation metrics. The model is the spec's reconstruction (see model.py).

    from icml26.analogy import AnalogyWorld, FactorizedTransformer, CurriculumTrainer, analogical_accuracy
    world = AnalogyWorld(seed=0)
    model = FactorizedTransformer(world.vocab_size, answer_sets=world.answer_sets, seed=0)
    CurriculumTrainer(model, "joint").run(world)
    analogical_accuracy(model, world)
"""

from icml26.analogy.data import AnalogyWorld, Premise, TwoHopWorld
from icml26.analogy.model import (
    SCHEDULES,
    CurriculumTrainer,
    FactorizedTransformer,
    TokenIndexError,
    analogical_accuracy,
    conclusion_prob,
    cosine_matrix,
    feature_resemblance,
    fit,
    predict,
    premise_retention,
    two_hop_accuracy,
)
from icml26.analogy.probe import premise_sentences, probe_conclusions, token_names

__all__ = [
    "Premise", "AnalogyWorld", "TwoHopWorld", "FactorizedTransformer", "TokenIndexError", "fit",
    "CurriculumTrainer", "SCHEDULES", "predict", "analogical_accuracy", "conclusion_prob", "premise_retention",
    "feature_resemblance", "cosine_matrix", "two_hop_accuracy", "premise_sentences", "token_names",
    "probe_conclusions",
]
