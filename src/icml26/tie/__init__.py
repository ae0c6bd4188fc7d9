"""TIE: Tail-Inflated-Expectation scheduling for LLM inference (Zheng et al., ICML 2026, arXiv:2604.00499).

Output lengths are modelled as log-t distributions predicted per prompt; the waiting queue is ordered by
TIE = E[min(X, L)] + β·CVaR_α[min(X, L)] (Eq. 11) with an adaptive β (Eq. 12) and starvation decay.

    from icml26.tie import LogTLengthPredictor, MiniLMEncoder, TIEQueue, ServingSimulator, EngineConfig
"""

from icml26.tie.baselines import ListMLERanker, OracleLength, PointLengthRegressor, listmle_loss
from icml26.tie.dist import LogNormal, LogT, fit_lognormal, fit_logt
from icml26.tie.encoders import HashingEncoder, HFEncoder, MiniLMEncoder
from icml26.tie.predictors import LogTLengthPredictor
from icml26.tie.sched import FCFSQueue, Request, ScoreQueue, TIEQueue, WaitingQueue
from icml26.tie.score import adaptive_beta, starvation_decay, tie_score, tie_terms
from icml26.tie.sim import (EngineConfig, Metrics, ServingSimulator, StepTimeModel, Workload, capacity_rps,
                            offline_batch, piecewise_poisson_arrivals, poisson_arrivals)
from icml26.tie.traces import build_training_table, collect_length_samples, load_smollm2

__all__ = [
    "LogT", "LogNormal", "fit_logt", "fit_lognormal",
    "tie_score", "tie_terms", "adaptive_beta", "starvation_decay",
    "MiniLMEncoder", "HFEncoder", "HashingEncoder",
    "LogTLengthPredictor", "PointLengthRegressor", "ListMLERanker", "OracleLength", "listmle_loss",
    "collect_length_samples", "build_training_table", "load_smollm2",
    "Request", "WaitingQueue", "FCFSQueue", "ScoreQueue", "TIEQueue",
    "EngineConfig", "StepTimeModel", "Workload", "Metrics", "ServingSimulator", "poisson_arrivals",
    "piecewise_poisson_arrivals", "offline_batch", "capacity_rps",
]
