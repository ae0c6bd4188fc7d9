"""Series for the reproduction (spec section 6): statsmodels' bundled real series and two simulated
heteroscedastic series, plus the lag design.  Nothing is downloaded."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from icml26.common.validation import check_array, check_float, check_int

__all__ = ["Series", "load_series", "load_csv_series", "REAL_SERIES", "SIMULATED_SERIES", "lag_matrix", "simulate_ar_garch",
           "simulate_hetero_ar"]

REAL_SERIES = ("elnino", "co2", "sunspots", "infl")
SIMULATED_SERIES = ("ar_garch", "hetero_ar")
DEFAULT_LAGS = {"elnino": 12, "co2": 8, "sunspots": 9, "infl": 4, "ar_garch": 8, "hetero_ar": 8}


@dataclass
class Series:
    """A univariate series y (T,), its name, number of lags p for the design, and (simulated) true sigma_t."""

    name: str
    y: np.ndarray
    lags: int
    sigma: np.ndarray | None = None


def _statsmodels():
    try:
        import statsmodels.api as sm
    except ImportError as e:  # pragma: no cover
        raise ImportError("the cqacp real series need statsmodels: pip install 'icml26[cqacp]'") from e
    return sm


def load_elnino() -> np.ndarray:
    """Monthly sea-surface temperatures 1950-2010, 61 x 12 flattened row-wise -> (732,)."""
    d = _statsmodels().datasets.elnino.load_pandas().data
    return d.drop(columns="YEAR").to_numpy(dtype=float).ravel()


def load_co2(monthly: bool = True) -> np.ndarray:
    """Mauna Loa CO2 (weekly, NaNs interpolated), resampled to monthly means (default), first difference."""
    d = _statsmodels().datasets.co2.load_pandas().data["co2"].interpolate()
    if monthly:
        d = d.resample("MS").mean()
    return np.diff(d.to_numpy(dtype=float))


def load_sunspots() -> np.ndarray:
    """Yearly sunspot numbers 1700-2008 (309,)."""
    return _statsmodels().datasets.sunspots.load_pandas().data["SUNACTIVITY"].to_numpy(dtype=float)


def load_infl() -> np.ndarray:
    """US quarterly inflation 1959-2009 from macrodata (203,)."""
    return _statsmodels().datasets.macrodata.load_pandas().data["infl"].to_numpy(dtype=float)


def simulate_ar_garch(T: int = 1200, seed: int = 0, phi: float = 0.6, burn: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """S1: AR(1) phi=0.6 with GARCH(1,1) errors sigma_t^2 = 0.1 + 0.15 e_{t-1}^2 + 0.8 sigma_{t-1}^2 and
    standardised t5 innovations.  Returns (y (T,), sigma (T,))."""
    T, burn = check_int(T, "T", min=1), check_int(burn, "burn", min=0)
    phi = check_float(phi, "phi", min=-1.0, max=1.0, min_open=True, max_open=True)
    rng = np.random.default_rng(check_int(seed, "seed", min=0))
    n = T + burn
    z = rng.standard_t(5, n) / np.sqrt(5 / 3)
    y, e, s2 = np.zeros(n), np.zeros(n), np.full(n, 0.1 / (1 - 0.95))
    for t in range(1, n):
        s2[t] = 0.1 + 0.15 * e[t - 1] ** 2 + 0.8 * s2[t - 1]
        e[t] = np.sqrt(s2[t]) * z[t]
        y[t] = phi * y[t - 1] + e[t]
    return y[burn:], np.sqrt(s2[burn:])


def simulate_hetero_ar(T: int = 1200, seed: int = 0, phi: float = 0.6, burn: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """S2: AR(1) with sigma_t = 0.5 + 0.4 sin(2 pi t / 200) and centred log-normal(0, 0.5) innovations
    (standardised to unit variance, right-skewed).  Returns (y (T,), sigma (T,))."""
    T, burn = check_int(T, "T", min=1), check_int(burn, "burn", min=0)
    phi = check_float(phi, "phi", min=-1.0, max=1.0, min_open=True, max_open=True)
    rng = np.random.default_rng(check_int(seed, "seed", min=0))
    n = T + burn
    sd = 0.5
    ln = rng.lognormal(0.0, sd, n)
    z = (ln - np.exp(sd**2 / 2)) / np.sqrt((np.exp(sd**2) - 1) * np.exp(sd**2))
    t = np.arange(n) - burn
    sig = 0.5 + 0.4 * np.sin(2 * np.pi * t / 200)
    y = np.zeros(n)
    for i in range(1, n):
        y[i] = phi * y[i - 1] + sig[i] * z[i]
    return y[burn:], sig[burn:]


def load_series(name: str, seed: int = 0, T: int = 1200) -> Series:
    """One of REAL_SERIES + SIMULATED_SERIES (the seed and T only matter for simulated ones)."""
    if name == "elnino":
        return Series(name, load_elnino(), DEFAULT_LAGS[name])
    if name == "co2":
        return Series(name, load_co2(), DEFAULT_LAGS[name])
    if name == "sunspots":
        return Series(name, load_sunspots(), DEFAULT_LAGS[name])
    if name == "infl":
        return Series(name, load_infl(), DEFAULT_LAGS[name])
    if name == "ar_garch":
        y, s = simulate_ar_garch(T, seed)
        return Series(name, y, DEFAULT_LAGS[name], s)
    if name == "hetero_ar":
        y, s = simulate_hetero_ar(T, seed)
        return Series(name, y, DEFAULT_LAGS[name], s)
    raise ValueError(f"name must be one of {REAL_SERIES + SIMULATED_SERIES}, got {name!r}")


def lag_matrix(y: np.ndarray, p: int) -> tuple[np.ndarray, np.ndarray]:
    """Autoregressive design: X[t] = (y_{t-1}, ..., y_{t-p}), target y_t, for t = p..T-1 -> (T-p, p), (T-p,)."""
    y = check_array(y, "y", ndim=1)
    p = check_int(p, "p", min=1)
    if len(y) <= p:
        raise ValueError(f"need a 1-D y longer than p >= 1 lags, got shape {y.shape} and p={p}")
    X = np.lib.stride_tricks.sliding_window_view(y[:-1], p)[:, ::-1]
    return np.ascontiguousarray(X), y[p:]


def load_csv_series(path: str, lags: int = 24, column: int | str = -1) -> Series:
    """A user series from a CSV file (header row; the last numeric column by default), NaNs interpolated."""
    import pandas as pd

    df = pd.read_csv(path)
    col = df.select_dtypes("number").iloc[:, column] if isinstance(column, int) else df[column]
    y = col.interpolate().bfill().ffill().to_numpy(dtype=float)
    return Series(str(path), y, lags)
