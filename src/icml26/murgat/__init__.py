"""MuRGAt: fact-level multimodal attribution (Wan, Wang, Wang, Stengel-Eskin, Lee, Bansal; ICML 2026,
arXiv 2602.11509) - the citation grammar, the MuRGAt-Score evaluator with pluggable judges, the meta-evaluation,
a procedural audio-visual benchmark with reference responders and a simulated human.

    from icml26.murgat import MurgatEvaluator, LogisticVerifiabilityJudge, RuleDecomposer, \\
        TimelineEntailmentJudge, PronounDecontextualizer
    ev = MurgatEvaluator(verifier, RuleDecomposer(), TimelineEntailmentJudge(), PronounDecontextualizer())
    ev.score_response(text, media).murgat_score

See docs/murgat.md.
"""

from icml26.murgat.baselines import (
    REFERENCE_RESPONDERS,
    ConfabulatingResponder,
    HallucinatedCitationResponder,
    LowCoverageResponder,
    OracleResponder,
    OverbroadCitationResponder,
    ProgramAidedResponder,
    RandomResponder,
    reference_responders,
)
from icml26.murgat.cache import JsonlCache
from icml26.murgat.citations import (
    Citation,
    answer_letter,
    clean_output,
    extract_answer,
    extract_reasoning,
    format_citation,
    format_citations,
    format_timestamp,
    parse_citations,
    parse_timestamp,
    split_sentences,
    strip_citations,
)
from icml26.murgat.clips import FFmpegClipper, find_ffmpeg
from icml26.murgat.data import (
    HELDOUT_OBSERVATION_LEXICON,
    OBSERVATION_LEXICON,
    RESPONDER_LEXICON,
    SimulatedHuman,
    SyntheticBenchmarkConfig,
    WordTables,
    generate_benchmark,
)
from icml26.murgat.evaluator import (
    DatasetReport,
    FactTrace,
    MurgatEvaluator,
    ResponseScore,
    SentenceTrace,
    aggregate_sentences,
    attribute_fact,
)
from icml26.murgat.generation import (
    MLLMResponder,
    OpenAIChat,
    TransformersChat,
    build_prompt,
    load_smollm2,
    rewrite_index_markers,
)
from icml26.murgat.judges import (
    AlwaysYesEntailmentJudge,
    AtomicFact,
    Decomposer,
    Decontextualizer,
    EntailmentJudge,
    IdentityDecontextualizer,
    LLMJudge,
    LogisticVerifiabilityJudge,
    MediaExtractionError,
    MiniLMEmbedder,
    OracleEntailmentJudge,
    PronounDecontextualizer,
    RuleDecomposer,
    RuleVerifiabilityJudge,
    TimelineEntailmentJudge,
    VerifiabilityJudge,
    parse_yes_no,
)
from icml26.murgat.meta import correlate, correlation_interval, group_mean_control, system_agreement, within_group_r
from icml26.murgat.schema import (
    BenchmarkItem,
    Event,
    Media,
    Response,
    load_benchmark,
    load_responses,
    save_benchmark,
    save_responses,
)
from icml26.murgat.temporal import interval_coverage, temporal_iop, temporal_iou, union_length

__all__ = [
    # citations
    "Citation", "parse_timestamp", "format_timestamp", "parse_citations", "strip_citations", "split_sentences",
    "clean_output", "extract_reasoning", "extract_answer", "answer_letter", "format_citation", "format_citations",
    # temporal
    "temporal_iou", "temporal_iop", "interval_coverage", "union_length",
    # schema
    "Event", "Media", "BenchmarkItem", "Response", "load_benchmark", "save_benchmark", "load_responses",
    "save_responses",
    # judges
    "AtomicFact", "Decontextualizer", "VerifiabilityJudge", "Decomposer", "EntailmentJudge", "MediaExtractionError",
    "IdentityDecontextualizer", "PronounDecontextualizer", "RuleVerifiabilityJudge", "LogisticVerifiabilityJudge",
    "RuleDecomposer", "TimelineEntailmentJudge", "OracleEntailmentJudge", "AlwaysYesEntailmentJudge", "LLMJudge",
    "MiniLMEmbedder", "parse_yes_no", "FFmpegClipper", "find_ffmpeg", "JsonlCache",
    # evaluator + meta-evaluation
    "MurgatEvaluator", "ResponseScore", "SentenceTrace", "FactTrace", "DatasetReport", "attribute_fact",
    "aggregate_sentences", "correlate", "correlation_interval", "within_group_r", "group_mean_control",
    "system_agreement",
    # synthetic benchmark, responders, simulated human
    "SyntheticBenchmarkConfig", "WordTables", "RESPONDER_LEXICON", "OBSERVATION_LEXICON",
    "HELDOUT_OBSERVATION_LEXICON", "generate_benchmark", "SimulatedHuman", "OracleResponder",
    "HallucinatedCitationResponder", "LowCoverageResponder", "OverbroadCitationResponder", "ConfabulatingResponder",
    "ProgramAidedResponder", "RandomResponder", "REFERENCE_RESPONDERS", "reference_responders",
    # generation side
    "build_prompt", "rewrite_index_markers", "MLLMResponder", "OpenAIChat", "TransformersChat", "load_smollm2",
]
