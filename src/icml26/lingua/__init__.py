"""LINGUA: grounded VideoQA with a linguistic belief state and typed memory (ICML 2026).

    from icml26.lingua import LinguaAgent, LinguaConfig, KitchenWorld, SymbolicCaptioner, SymbolicDetector

The agent keeps only event frames, writes what it sees into typed (episodic / semantic / procedural) memories,
answers with Belief-Action-Verification loops that check postconditions and durations, reflects on failures and
tracks the reliability of its scripts across videos. Perception and language backends are pluggable (offline
symbolic/hashing/rule-based ones, VideoMAE, any transformers causal LM, Ollama).
"""

from icml26.lingua.backends import (LLM, BackendUnavailableError, Captioner, Detection, FrameEncoder, HashingEmbedder,
                                    MiniLMEmbedder, ObjectDetector, OllamaCaptioner, OllamaLLM, RandomProjectionEncoder,
                                    RuleBasedLLM, SymbolicCaptioner, SymbolicDetector, TextEmbedder,
                                    TransformersDetector, TransformersLLM, VideoMAEEncoder, load_smollm2)
from icml26.lingua.baselines import DenseCaptionAgent, RevealedAnswers, UniformSamplingAgent, WithRevealedAnswers
from icml26.lingua.data import load_nextgqa, load_video_frames
from icml26.lingua.lingua import (AnswerResult, LinguaAgent, LinguaConfig, PerceptionReport, perceive, select_frames,
                                  uniform_indices)
from icml26.lingua.memory import (AffordanceFrame, EpisodicEntry, EpisodicMemory, ProceduralMemory, ReliabilityTracker,
                                  RuleBasedSRL, Script, SemanticEntry, SemanticMemory)
from icml26.lingua.metrics import grounded_qa_report, temporal_iop, temporal_iou
from icml26.lingua.reasoning import (ActionVerifier, ContrastiveRefiner, ExpectedUtilityRanker, GroundingResult,
                                     ReflectionMonitor, infer_goal_type)
from icml26.lingua.synthetic import (ActivitySpec, KitchenWorld, QAItem, Video, WorldConfig, detection_report,
                                     span_seen)

__all__ = [
    "LinguaAgent", "LinguaConfig", "PerceptionReport", "AnswerResult", "perceive", "select_frames", "uniform_indices",
    "DenseCaptionAgent", "UniformSamplingAgent", "RevealedAnswers", "WithRevealedAnswers",
    "EpisodicEntry", "EpisodicMemory", "SemanticEntry", "SemanticMemory", "AffordanceFrame", "Script",
    "ProceduralMemory", "ReliabilityTracker", "RuleBasedSRL",
    "ExpectedUtilityRanker", "ActionVerifier", "GroundingResult", "ReflectionMonitor", "ContrastiveRefiner",
    "infer_goal_type",
    "temporal_iou", "temporal_iop", "grounded_qa_report",
    "KitchenWorld", "WorldConfig", "ActivitySpec", "Video", "QAItem", "detection_report", "span_seen", "load_nextgqa",
    "load_video_frames",
    "BackendUnavailableError", "Detection", "FrameEncoder", "ObjectDetector", "Captioner", "TextEmbedder", "LLM",
    "RandomProjectionEncoder", "VideoMAEEncoder", "SymbolicDetector", "TransformersDetector", "SymbolicCaptioner",
    "OllamaCaptioner", "HashingEmbedder", "MiniLMEmbedder", "RuleBasedLLM", "TransformersLLM", "OllamaLLM",
    "load_smollm2",
]
