"""CQACP: Conditional-Quantile-Adjusted Conformal Prediction for time series (icml26.cqacp).

    from icml26.cqacp import CQACPRegressor
    cq = CQACPRegressor(Ridge(), confidence_level=[0.8, 0.9, 0.95]).fit(X_train, y_train)
    cq.conformalize(X_cal, y_cal)
    y_pred, y_pis = cq.rolling_predict_interval(X_test, y_test)     # (n,), (n, 2, 3)

Reconstruction of an ICML 2026 paper whose full text was not available (see docs/cqacp.md).
"""

from icml26.cqacp.baselines import ACI, SPCI, AgACI, ConformalPID, EnbPI, NexCP, QRDirect
from icml26.cqacp.cornish_fisher import CFParams, CornishFisherQuantileCurve, cf_quantile, cf_w
from icml26.cqacp.metrics import (conditional_coverage_by_bin, coverage, crossing_rate, interval_score, mean_width,
                                  nestedness_rate, width_roughness, width_tv)
from icml26.cqacp.quantile_learners import PerLevelLearner, QRFLearner, hgb_qr_learner, linear_qr_learner
from icml26.cqacp.regressor import TAU_GRID, CQACPRegressor

__all__ = [
    "CQACPRegressor", "CornishFisherQuantileCurve", "CFParams", "cf_w", "cf_quantile", "TAU_GRID",
    "QRFLearner", "PerLevelLearner", "linear_qr_learner", "hgb_qr_learner",
    "ACI", "AgACI", "EnbPI", "SPCI", "NexCP", "ConformalPID", "QRDirect",
    "coverage", "mean_width", "width_tv", "width_roughness", "nestedness_rate", "crossing_rate", "interval_score",
    "conditional_coverage_by_bin",
]
