"""ME-POIs: Mobility-Embedded POIs (Siampou, Choudhury, Hsu, Arora, Shahabi; ICML 2026, arXiv:2601.21149).

POI embeddings learned from how places are used: each visit becomes a contextual embedding (category, location,
arrival/departure time, the surrounding visits of the same person), aligned contrastively with a learnable
embedding per POI; visit patterns of busy POIs are propagated at several spatial scales to the long tail.

    from icml26.mepoi import MEPOITrainer, EmbedProbe
    emb = MEPOITrainer(d=64, layers=2, heads=4, window=16, epochs=8, min_visits=30).fit(visits, pois).embeddings_

Modules: `data` (tables, time features, windows, Helsinki POIs), `text` (prompts, encoders, cache), `usage`
(popular times, propagation), `modules` (Time2Vec, location encoder, visit encoder, POI table), `model` (losses,
`MEPOI`, `MEPOITrainer`), `probe` (map-enrichment probes), `baselines`, `synth` (simulated cities), `claims`,
`evaluation`, `experiment`, `scale` (DDP paper-scale path).
"""

from icml26.mepoi.baselines import SkipGramPOI, handcrafted_mobility, random_embeddings, text_embeddings
from icml26.mepoi.data import (CATEGORIES, POITable, VisitTable, VisitWindowDataset, Windows, collate, gather_batch,
                               load_helsinki_pois, make_windows, time_features, visit_features)
from icml26.mepoi.model import MEPOI, MEPOITrainer, contrastive_loss, kl_batchmean
from icml26.mepoi.modules import POIEmbedding, SinusoidalPositionalEncoding, TheoryLocationEncoder, Time2Vec, \
    VisitEncoder
from icml26.mepoi.probe import TASKS, EmbedProbe, evaluate_tasks, make_splits
from icml26.mepoi.synth import make_city, make_helsinki_city
from icml26.mepoi.text import (CachedEncoder, HashingTextEncoder, SentenceTransformerEncoder, TextEncoder,
                               build_prompts, compass16, poi_prompt)
from icml26.mepoi.usage import (UsagePriors, build_priors, mixture_prior, multiscale_priors, popular_times,
                                select_anchors, transfer_gaussian, transfer_h3, transfer_text_similarity)

__all__ = [
    "CATEGORIES", "POITable", "VisitTable", "Windows", "VisitWindowDataset", "collate", "gather_batch",
    "time_features", "make_windows", "visit_features", "load_helsinki_pois",
    "poi_prompt", "build_prompts", "compass16", "TextEncoder", "SentenceTransformerEncoder", "HashingTextEncoder",
    "CachedEncoder",
    "popular_times", "select_anchors", "transfer_gaussian", "multiscale_priors", "transfer_h3",
    "transfer_text_similarity", "mixture_prior", "UsagePriors", "build_priors",
    "Time2Vec", "TheoryLocationEncoder", "SinusoidalPositionalEncoding", "VisitEncoder", "POIEmbedding",
    "MEPOI", "MEPOITrainer", "contrastive_loss", "kl_batchmean",
    "TASKS", "EmbedProbe", "evaluate_tasks", "make_splits",
    "text_embeddings", "handcrafted_mobility", "random_embeddings", "SkipGramPOI",
    "make_city", "make_helsinki_city",
]
