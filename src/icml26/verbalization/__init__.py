"""Controls for activation verbalizers (arXiv 2509.13316): do verbalizations convey the target's privileged
information, or the verbalizer's own knowledge?

    from icml26.verbalization import PatchscopesVerbalizer, LITVerbalizer, ZeroShotBaseline, read_activations

    acts = read_activations(model, input_ids, attention_mask, layer=5, positions="last")   # (B, 1, d)
    with patch_activations(model, layer=3, positions=[7], vectors=acts[:, 0]):           # also inside generate
        ...
    ps = PatchscopesVerbalizer(target, verbalizer, tok_t, tok_v, source_layer=5, target_layers=3)
    ps.verbalize(["My name is Ana."], ["The country of origin for x"])
    ZeroShotBaseline(verbalizer, tok_v).verbalize(["My name is Ana."], ["The country of origin for x"])

Works with `icml26.common.lm.TinyLM` and any Hugging Face causal LM. Controls: `ZeroShotBaseline` (input only),
`InversionBaseline`, `LinearProbe`, `contains_match`, `mcnemar`, `grouped_probe_accuracy`,
`privileged_info_report`. Toy worlds: `PersonaWorld` (consistent / shuffled / fantasy), `FeatureExtractionWorld`,
`WordTokenizer`, `TinyCausalLM`, `train_lm`.
"""

from icml26.verbalization.baselines import InversionBaseline, LinearProbe, ZeroShotBaseline
from icml26.verbalization.controls import (accuracy, any_layer_accuracy, bonferroni, contains_match,
                                           first_token_match, grouped_probe_accuracy, mcnemar,
                                           privileged_info_report)
from icml26.verbalization.data import (ATTRIBUTES, NAME_PARAPHRASES, NAME_QUESTION, EvalItem, FeatureExtractionWorld,
                                       Persona, PersonaWorld, WordTokenizer, build_tokenizer)
from icml26.verbalization.hooks import get_decoder_layers, hidden_size, num_layers, patch_activations, read_activations
from icml26.verbalization.models import TinyCausalLM, train_lm
from icml26.verbalization.verbalize import LITVerbalizer, PatchscopesVerbalizer

__all__ = [
    "get_decoder_layers", "num_layers", "hidden_size", "read_activations", "patch_activations",
    "PatchscopesVerbalizer", "LITVerbalizer", "ZeroShotBaseline", "InversionBaseline", "LinearProbe",
    "contains_match", "first_token_match", "accuracy", "mcnemar", "bonferroni",
    "any_layer_accuracy", "grouped_probe_accuracy", "privileged_info_report",
    "PersonaWorld", "FeatureExtractionWorld", "Persona", "EvalItem", "WordTokenizer", "build_tokenizer",
    "ATTRIBUTES", "NAME_PARAPHRASES", "NAME_QUESTION", "TinyCausalLM", "train_lm",
]
