"""CPU reproduction of TIE (spec §6): synthetic workloads W1/W2 in the continuous-batching simulator, online
(Poisson arrivals at loads ρ, ample and tight KV memory) and offline (batch); distributional-prediction checks;
real SmolLM2-135M output lengths (cached step) for the heavy tail and the log-t fit.

Pipeline: (1) prompts + ground-truth lengths (`data.py`); training set n_train prompts × k samples, test sets of
n_test fresh prompts per seed; (2) all prompts are embedded once (MiniLM, cached on disk); (3) predictors are
trained once per workload in parallel single-thread processes: TIE (log-t, k samples), the identically trained
log-normal ablation (W1), SSJF (MSE on raw length) and LTR (ListMLE) on ONE sample per prompt and on all k (data
parity); (4) every (workload, seed, load, KV) cell simulates all policies on the same arrivals; (5) claims.

Policies: fcfs, ssjf, ssjf16, ltr, ltr16, sjf_median (e^μ), sjf_mean (TIE β=0, no starvation), tie (adaptive β,
starvation on), tie_nostarv, oracle. Loads ρ are fractions of capacity_rps(mean training length).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from icml26.results import Claim, Result

SLUG = "tie"

_BASE: dict[str, Any] = {
    "seed": 0, "n_seeds": 3, "n_train": 3000, "k": 16, "n_test": 2000, "workloads": ["W1", "W2"],
    "loads": [0.8, 0.9, 0.95], "kv_tokens": [60000, 12000], "max_num_seqs": 32, "block_size": 16,
    "max_num_batched_tokens": 4096, "c0": 8e-3, "c_prefill": 1.2e-4, "c_decode": 2.5e-4, "c_ctx": 0.0,
    "alpha": 0.9, "gamma": 0.9, "tau": 30.0, "rebuild_every_s": 5.0, "max_tokens": 2048, "nu": 3.5,
    "encoder": "minilm", "encoder_path": "", "epochs": 20, "lr": 1e-3, "batch_size": 32,
    "smollm2": "cache", "smollm2_prompts": 24, "smollm2_k": 8, "smollm2_max_new_tokens": 256, "workers": 0,
    "device": "cpu",
}

CONFIGS: dict[str, dict[str, Any]] = {
    "smoke": {**_BASE, "n_seeds": 1, "n_train": 160, "n_test": 200, "loads": [0.95], "kv_tokens": [60000],
              "encoder": "hashing", "epochs": 2, "smollm2": "off", "workers": 1},
    "small": dict(_BASE),
    # GPU configuration toward the paper (not run in CI): more data and samples, a fine-tunable HF encoder
    # given as a local path (e.g. DeBERTa-v3-base weights), 5 seeds, real SmolLM2 traces computed if missing.
    # The real-engine part (vLLM + the adapter) is documented in docs/tie.md.
    "paper": {**_BASE, "n_seeds": 5, "n_train": 20000, "k": 64, "n_test": 10000, "loads": [0.7, 0.8, 0.9, 0.95],
              "encoder": "hf", "encoder_path": "microsoft/deberta-v3-base", "epochs": 20, "device": "cuda",
              "smollm2": "compute", "smollm2_prompts": 32, "smollm2_k": 32, "smollm2_max_new_tokens": 1024},
}

POLICIES = ["fcfs", "ssjf", "ssjf16", "ltr", "ltr16", "sjf_median", "sjf_mean", "tie", "tie_nostarv", "oracle"]
LABELS = {"fcfs": "FCFS", "ssjf": "SSJF (1 sample)", "ssjf16": "SSJF (16 samples)", "ltr": "LTR (1 sample)",
          "ltr16": "LTR (16 samples)", "sjf_median": "SJF-median", "sjf_mean": "SJF-mean (β=0)",
          "tie": "TIE", "tie_nostarv": "TIE (no starvation)", "oracle": "Oracle SJF"}


# ----------------------------------------------------------------------------------------------- data
def _datasets(cfg: dict[str, Any], workload: str) -> dict[str, Any]:
    """Deterministic train/test data of one workload (prompts are shared by W1 and W2; lengths differ)."""
    from icml26.tie.data import make_prompts, sample_lengths

    s0 = int(cfg["seed"])
    wo = 0 if workload == "W1" else 500
    train = make_prompts(cfg["n_train"], 1000 * s0 + 1)
    out = {"train": train, "train_len": sample_lengths(train, cfg["k"], 1000 * s0 + 2 + wo, workload),
           "tests": [], "test_len": [], "heldout": []}
    for s in range(s0, s0 + cfg["n_seeds"]):
        te = make_prompts(cfg["n_test"], 10_000 + s)
        out["tests"].append(te)
        out["test_len"].append(sample_lengths(te, 1, 30_000 + s + wo, workload)[:, 0])
        out["heldout"].append(sample_lengths(te, 16, 20_000 + s + wo, workload))
    return out


def _encoder(cfg: dict[str, Any]):
    from icml26.tie.encoders import HashingEncoder, HFEncoder, MiniLMEncoder

    if cfg["encoder"] == "minilm":
        return MiniLMEncoder()
    if cfg["encoder"] == "hashing":
        return HashingEncoder()
    if cfg["encoder"] == "hf":
        return HFEncoder(cfg["encoder_path"], device=cfg["device"])
    raise ValueError(f"encoder must be 'minilm', 'hashing' or 'hf', got {cfg['encoder']!r}")


# ----------------------------------------------------------------------------------------------- workers
def _train_job(cfg: dict[str, Any], workload: str, kind: str) -> dict[str, Any]:
    """Train one predictor and return its predictions on every test set (module-level: runs in a worker)."""
    from icml26.tie.baselines import ListMLERanker, PointLengthRegressor
    from icml26.tie.predictors import LogTLengthPredictor
    from icml26.tie.score import tie_terms

    t0 = time.perf_counter()
    d = _datasets(cfg, workload)
    enc = _encoder(cfg)
    kw = {"epochs": cfg["epochs"], "lr": cfg["lr"], "seed": cfg["seed"], "device": cfg["device"]}
    prompts, L = d["train"].prompts, d["train_len"]
    out: dict[str, Any] = {"workload": workload, "kind": kind, "preds": []}
    if kind in ("tie", "lognormal"):
        fam = "logt" if kind == "tie" else "lognormal"
        est = LogTLengthPredictor(enc, nu=cfg["nu"], family=fam, batch_size=cfg["batch_size"],
                                  max_tokens=cfg["max_tokens"], **kw).fit(prompts, lengths=L)
        for te in d["tests"]:
            mu, sg = est.predict_params(te.prompts)
            m, c = tie_terms(mu, sg, alpha=cfg["alpha"], nu=cfg["nu"], max_tokens=cfg["max_tokens"], family=fam)
            out["preds"].append({"mu": mu, "sigma": sg, "tie_mean": m, "tie_cvar": c})
    elif kind in ("ssjf", "ssjf16"):
        y = L[:, 0] if kind == "ssjf" else L
        est = PointLengthRegressor(enc, loss="mse", batch_size=cfg["batch_size"], **kw).fit(prompts, y)
        out["preds"] = [{"score": est.predict(te.prompts)} for te in d["tests"]]
    elif kind in ("ltr", "ltr16"):
        y = L[:, 0] if kind == "ltr" else L
        est = ListMLERanker(enc, list_size=16, batch_lists=max(1, cfg["batch_size"] // 16), **kw).fit(prompts, y)
        out["preds"] = [{"score": est.predict(te.prompts)} for te in d["tests"]]
    else:
        raise ValueError(f"unknown predictor kind {kind!r}")
    out["train_s"] = time.perf_counter() - t0
    return out


def _queue(policy: str, cfg: dict[str, Any], p: dict[str, dict[str, np.ndarray]], true_len: np.ndarray):
    from icml26.tie.sched import FCFSQueue, ScoreQueue, TIEQueue

    if policy == "fcfs":
        return FCFSQueue()
    if policy in ("ssjf", "ssjf16", "ltr", "ltr16"):
        s = p[policy]["score"]
        return ScoreQueue(lambda r: s[r.id])
    if policy == "sjf_median":
        s = np.exp(p["tie"]["mu"])
        return ScoreQueue(lambda r: s[r.id])
    if policy == "oracle":
        return ScoreQueue(lambda r: true_len[r.id])
    common = dict(alpha=cfg["alpha"], max_num_seqs=cfg["max_num_seqs"], rebuild_every_s=cfg["rebuild_every_s"],
                  nu=cfg["nu"], max_tokens=cfg["max_tokens"])
    if policy == "sjf_mean":
        return TIEQueue(beta=0.0, starvation=None, **common)
    if policy == "tie":
        return TIEQueue(beta="adaptive", starvation=(cfg["gamma"], cfg["tau"]), **common)
    if policy == "tie_nostarv":
        return TIEQueue(beta="adaptive", starvation=None, **common)
    raise ValueError(f"unknown policy {policy!r}")


def _sim_job(cfg: dict[str, Any], workload: str, seed_idx: int, load: float | None, kv: int,
             prompt_len: np.ndarray, true_len: np.ndarray, preds: dict[str, dict[str, np.ndarray]],
             mean_len: float, keep_arrays: bool) -> dict[str, Any]:
    """Simulate every policy on one (workload, seed, load, KV) cell with shared arrivals; load None = offline."""
    from icml26.tie.sim import (EngineConfig, ServingSimulator, StepTimeModel, Workload, capacity_rps,
                                offline_batch, poisson_arrivals)

    ec = EngineConfig(max_num_seqs=cfg["max_num_seqs"], kv_capacity_tokens=kv, block_size=cfg["block_size"],
                      max_num_batched_tokens=cfg["max_num_batched_tokens"])
    st = StepTimeModel(cfg["c0"], cfg["c_prefill"], cfg["c_decode"], cfg["c_ctx"])
    n = len(true_len)
    if load is None:
        arr = offline_batch(n)
    else:
        rate = load * capacity_rps(mean_len, ec, st)
        arr = poisson_arrivals(n, rate, 40_000 + int(cfg["seed"]) + seed_idx)
    feats = [{"mu": float(preds["tie"]["mu"][i]), "sigma": float(preds["tie"]["sigma"][i]),
              "tie_mean": float(preds["tie"]["tie_mean"][i]), "tie_cvar": float(preds["tie"]["tie_cvar"][i])}
             for i in range(n)]
    wl = Workload(prompt_len, true_len, arr, features=feats, max_tokens=cfg["max_tokens"])
    out: dict[str, Any] = {"workload": workload, "seed_idx": seed_idx, "load": load, "kv": kv, "policies": {}}
    for pol in POLICIES:
        t0 = time.perf_counter()
        m = ServingSimulator(ec, _queue(pol, cfg, preds, true_len), st).run(wl)
        rec: dict[str, Any] = dict(m.summary, sim_s=time.perf_counter() - t0)
        if keep_arrays:
            rec["per_token"] = m.per_token.astype(np.float32)
            rec["finish"] = m.finish
        out["policies"][pol] = rec
    return out


# ----------------------------------------------------------------------------------------------- analysis
def _c3(cfg, d, tie_preds, ln_preds) -> dict[str, Any]:
    """Coverage of the predicted central 80% interval, held-out NLL log-t vs log-normal, Spearman (W1)."""
    from scipy.stats import spearmanr

    from icml26.tie.data import true_censored_mean
    from icml26.tie.dist import LogNormal, LogT
    from icml26.tie.score import tie_score

    cov, nll_t, nll_n, rho, mae, mae_fam = [], [], [], [], [], []
    tr = d["train"]
    fam_mu = np.array([np.log(d["train_len"][tr.family == f]).mean() if np.any(tr.family == f) else 0.0
                       for f in range(tr.family.max() + 1)])
    for te, ho, pt, pn in zip(d["tests"], d["heldout"], tie_preds, ln_preds):
        dt = LogT(pt["mu"], pt["sigma"], nu=cfg["nu"], max_tokens=cfg["max_tokens"])
        lo, hi = dt.quantile(0.1)[:, None], dt.quantile(0.9)[:, None]
        cov.append(float(np.mean((ho >= lo) & (ho <= hi))))
        nll_t.append(float(-np.mean(dt.censored_logpdf(ho.T))))
        dn = LogNormal(pn["mu"], pn["sigma"], max_tokens=cfg["max_tokens"])
        nll_n.append(float(-np.mean(dn.censored_logpdf(ho.T))))
        score = tie_score(pt["mu"], pt["sigma"], alpha=cfg["alpha"], beta=0.1, nu=cfg["nu"],
                          max_tokens=cfg["max_tokens"])
        rho.append(float(spearmanr(score, true_censored_mean(te, "W1"))[0]))
        mae.append(float(np.mean(np.abs(pt["mu"] - te.mu))))
        mae_fam.append(float(np.mean(np.abs(fam_mu[te.family] - te.mu))))
    return {"coverage80": cov, "nll_logt": nll_t, "nll_lognormal": nll_n, "spearman": rho, "mu_mae": mae,
            "mu_mae_family_mean": mae_fam}


def _smollm2(cfg: dict[str, Any]) -> dict[str, Any] | None:
    """Real SmolLM2 lengths from the cache ("cache"), computed if missing ("compute"), or skipped ("off")."""
    if cfg["smollm2"] == "off":
        return None
    from icml26.tie.traces import smollm2_length_samples

    try:
        res = smollm2_length_samples(cfg["smollm2_prompts"], cfg["smollm2_k"], cfg["smollm2_max_new_tokens"],
                                     max_batches=None if cfg["smollm2"] == "compute" else 0)
    except ModuleNotFoundError as e:
        return {"missing": str(e)}
    if res is None:
        return {"missing": "not cached yet: run `python -m icml26.tie.traces` once (tens of CPU minutes)"}
    from icml26.tie.dist import LogNormal, LogT, fit_lognormal, fit_logt

    L = np.asarray(res["lengths"], dtype=float)
    cap = float(res["max_new_tokens"])
    mu_t, sg_t, ks_t = fit_logt(L, nu=cfg["nu"], censor_at=cap)
    mu_n, sg_n, ks_n = fit_lognormal(L, censor_at=cap)
    ll_t = LogT(mu_t, sg_t, nu=cfg["nu"], max_tokens=cap).censored_logpdf(L.T).mean()
    ll_n = LogNormal(mu_n, sg_n, max_tokens=cap).censored_logpdf(L.T).mean()
    ratio = np.percentile(L, 90, axis=1) / np.maximum(np.percentile(L, 50, axis=1), 1)
    return {"prompts": res["prompts"], "lengths": L, "cap": cap, "mu": mu_t, "sigma": sg_t,
            "mu_n": mu_n, "sigma_n": sg_n, "summary": {
                "n_prompts": len(L), "k": int(L.shape[1]), "max_new_tokens": cap,
                "censored_fraction": float(np.mean(L >= cap)), "median_length": float(np.median(L)),
                "n_prompts_all_censored": int(np.sum((L >= cap).all(1))),
                "mean_p90_over_p50": float(ratio.mean()), "mean_sigma_logt": float(sg_t.mean()),
                "loglik_logt": float(ll_t), "loglik_lognormal": float(ll_n),
                "ks_p_logt_median": float(np.median(ks_t)), "ks_p_lognormal_median": float(np.median(ks_n)),
                "cold_sampling_seconds": float(res.get("seconds", float("nan")))}}


# ----------------------------------------------------------------------------------------------- run
def run(config: dict[str, Any]) -> Result:
    import torch

    from icml26.common.parallel import default_workers, run_parallel
    from icml26.common.seeding import seed_everything

    cfg = dict(config)
    cfg.setdefault("scale", "small")
    seed_everything(int(cfg["seed"]))
    t_start = time.perf_counter()
    workers = int(cfg["workers"]) or default_workers()
    timings: dict[str, float] = {}

    data = {w: _datasets(cfg, w) for w in cfg["workloads"]}
    if cfg["encoder"] != "hashing":  # embed every prompt once in this process (disk cache for the workers)
        t0 = time.perf_counter()
        enc = _encoder(cfg)
        d0 = data[cfg["workloads"][0]]
        allp = list(d0["train"].prompts) + [p for te in d0["tests"] for p in te.prompts]
        old = torch.get_num_threads()
        torch.set_num_threads(max(1, workers))
        enc.encode(allp)
        torch.set_num_threads(old)
        timings["embed_s"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    jobs = []
    for w in cfg["workloads"]:
        for kind in ["tie", "lognormal", "ssjf", "ssjf16", "ltr", "ltr16"]:
            if kind == "lognormal" and w != "W1":
                continue
            jobs.append({"cfg": cfg, "workload": w, "kind": kind})
    trained = run_parallel(_train_job, jobs, workers=workers, desc="tie: training predictors")
    timings["train_s"] = time.perf_counter() - t0
    preds = {(r["workload"], r["kind"]): r for r in trained}

    t0 = time.perf_counter()
    sim_jobs = []
    for w in cfg["workloads"]:
        d = data[w]
        mean_len = float(d["train_len"].mean())
        for si in range(cfg["n_seeds"]):
            p = {k: preds[(w, k)]["preds"][si] for k in ["tie", "ssjf", "ssjf16", "ltr", "ltr16"]}
            base = {"cfg": cfg, "workload": w, "seed_idx": si, "prompt_len": d["tests"][si].prompt_len,
                    "true_len": d["test_len"][si], "preds": p, "mean_len": mean_len}
            for load in cfg["loads"]:
                for kv in cfg["kv_tokens"]:
                    keep = si == 0 and load == max(cfg["loads"]) and kv == max(cfg["kv_tokens"])
                    sim_jobs.append({**base, "load": load, "kv": kv, "keep_arrays": keep})
            sim_jobs.append({**base, "load": None, "kv": max(cfg["kv_tokens"]), "keep_arrays": True})
    sims = run_parallel(_sim_job, sim_jobs, workers=workers, desc="tie: simulating")
    timings["simulate_s"] = time.perf_counter() - t0
    n_sim_runs = len(sims) * len(POLICIES)
    sim_seconds = sum(r["sim_s"] for s in sims for r in s["policies"].values())
    n_req = cfg["n_test"]

    c3 = _c3(cfg, data["W1"], preds[("W1", "tie")]["preds"], preds[("W1", "lognormal")]["preds"]) \
        if "W1" in cfg["workloads"] else None
    t0 = time.perf_counter()
    real = _smollm2(cfg)
    timings["smollm2_s"] = time.perf_counter() - t0

    result = Result(slug=SLUG, scale=cfg["scale"], config=config)
    metrics: dict[str, Any] = {"timings": timings, "train_seconds": {f"{w}/{k}": r["train_s"]
                                                                      for (w, k), r in preds.items()}}
    metrics["simulator_requests_per_second"] = n_sim_runs * n_req / max(sim_seconds, 1e-9)
    metrics["simulator_runs"] = n_sim_runs

    def cell(w, si, load, kv):
        for s in sims:
            if s["workload"] == w and s["seed_idx"] == si and s["load"] == load and s["kv"] == kv:
                return s["policies"]
        raise KeyError((w, si, load, kv))

    online: dict[str, Any] = {}
    kv_hi = max(cfg["kv_tokens"])
    for w in cfg["workloads"]:
        for load in cfg["loads"]:
            for kv in cfg["kv_tokens"]:
                key = f"{w}/rho={load}/kv={kv}"
                online[key] = {pol: {m: float(np.mean([cell(w, si, load, kv)[pol][m] for si in range(cfg["n_seeds"])]))
                                     for m in ("per_token_latency", "e2e_mean", "e2e_p99", "e2e_max", "ttft_mean",
                                               "token_throughput", "request_throughput", "n_preemptions")}
                               for pol in POLICIES}
    metrics["online_mean_over_seeds"] = online
    offline: dict[str, Any] = {}
    for w in cfg["workloads"]:
        rows = {pol: {"makespan": [], "token_throughput": [], "finished_at_fcfs_half": []} for pol in POLICIES}
        for si in range(cfg["n_seeds"]):
            c = cell(w, si, None, kv_hi)
            t_half = float(np.sort(c["fcfs"]["finish"])[len(c["fcfs"]["finish"]) // 2 - 1])
            for pol in POLICIES:
                rows[pol]["makespan"].append(c[pol]["makespan"])
                rows[pol]["token_throughput"].append(c[pol]["token_throughput"])
                rows[pol]["finished_at_fcfs_half"].append(int(np.sum(c[pol]["finish"] <= t_half + 1e-12)))
        offline[w] = {pol: {k: float(np.mean(v)) for k, v in r.items()} for pol, r in rows.items()}
    metrics["offline_mean_over_seeds"] = offline

    # TIE vs every baseline (the closing note's performance figure)
    ratios: dict[str, Any] = {}
    for w in cfg["workloads"]:
        for load in cfg["loads"]:
            o = online[f"{w}/rho={load}/kv={kv_hi}"]
            ratios[f"{w}/rho={load}"] = {pol: {"latency": o["tie"]["per_token_latency"] / o[pol]["per_token_latency"],
                                               "throughput": o["tie"]["token_throughput"] / o[pol]["token_throughput"]}
                                         for pol in POLICIES if pol != "tie"}
        ratios[f"{w}/offline"] = {pol: {"makespan": offline[w]["tie"]["makespan"] / offline[w][pol]["makespan"],
                                        "throughput": offline[w]["tie"]["token_throughput"]
                                        / offline[w][pol]["token_throughput"],
                                        "finished_at_fcfs_half": offline[w]["tie"]["finished_at_fcfs_half"]
                                        / max(1, offline[w][pol]["finished_at_fcfs_half"])}
                                  for pol in POLICIES if pol != "tie"}
    metrics["tie_vs_baselines"] = ratios
    if c3 is not None:
        metrics["c3"] = c3
    if real is not None:
        metrics["smollm2"] = real.get("summary", real)

    result.claims = _claims(cfg, sims, c3)
    result.metrics = metrics
    _figures(result, cfg, sims, data, preds, real)
    result.runtime_s = time.perf_counter() - t_start
    smol = "SmolLM2 lengths: " + ("from the cache" if real and "summary" in real else
                                  (real or {}).get("missing", "skipped (smollm2='off')"))
    result.notes = (f"Simulator: {n_sim_runs} runs of {n_req} requests, {metrics['simulator_requests_per_second']:.0f}"
                    f" simulated requests/s per core. Encoder: {cfg['encoder']}. {smol}. Timings: "
                    + ", ".join(f"{k}={v:.1f}s" for k, v in timings.items()))
    return result


def _claims(cfg, sims, c3) -> list[Claim]:
    n_seeds = cfg["n_seeds"]
    kv_hi = max(cfg["kv_tokens"])
    top = max(cfg["loads"])

    def ptl(w, si, load, pol, kv=kv_hi):
        for s in sims:
            if s["workload"] == w and s["seed_idx"] == si and s["load"] == load and s["kv"] == kv:
                return s["policies"][pol]
        raise KeyError

    claims: list[Claim] = []
    W = cfg["workloads"]
    # C1
    # mean over seeds of TIE / mean over seeds of FCFS (spec: "mean over 3 seeds")
    mean_ratio = {w: float(np.mean([ptl(w, si, top, "tie")["per_token_latency"] for si in range(n_seeds)])
                           / np.mean([ptl(w, si, top, "fcfs")["per_token_latency"] for si in range(n_seeds)]))
                  for w in W}
    per_seed = {f"{w}/rho={ld}/seed{si}": ptl(w, si, ld, "tie")["per_token_latency"]
                / ptl(w, si, ld, "fcfs")["per_token_latency"]
                for w in W for ld in cfg["loads"] if ld >= 0.9 for si in range(n_seeds)}
    held1 = all(v <= 0.35 for v in mean_ratio.values()) and all(v <= 0.6 for v in per_seed.values())
    claims.append(Claim(
        "C1", "Scheduling by TIE removes FCFS head-of-line blocking: much lower mean per-token latency.",
        "TIE / FCFS mean per-token latency (ample KV)",
        {**{f"{w}/rho={top}/mean": v for w, v in mean_ratio.items()},
         "worst_seed_rho>=0.9": max(per_seed.values()) if per_seed else float("nan")},
        "<= 0.35 at the top load (mean over seeds, W1 and W2) and <= 0.6 for every seed at loads 0.9 and 0.95",
        held1, True, "per seed: " + ", ".join(f"{k}={v:.3f}" for k, v in per_seed.items())))
    # C2
    c2, wins = {}, {}
    for w in W:
        for ld in cfg["loads"]:
            t = np.mean([ptl(w, si, ld, "tie")["per_token_latency"] for si in range(n_seeds)])
            b = {p: np.mean([ptl(w, si, ld, p)["per_token_latency"] for si in range(n_seeds)]) for p in ("ssjf", "ltr")}
            best = min(b, key=b.get)
            c2[f"{w}/rho={ld}"] = float(t / b[best])
            wins[f"{w}/rho={ld}"] = f"best={best}, TIE {'wins' if t < b[best] else 'loses'}"
    claims.append(Claim(
        "C2", "TIE matches or beats point-estimate SJF schedulers (the paper: 2.31x lower per-token latency than "
              "the strongest baseline, LTR).",
        "TIE / min(SSJF, LTR) mean per-token latency (1-sample baselines, ample KV, mean over seeds)",
        c2, "<= 1.3 at every load on W1 and W2 (parity); < 1 would mean TIE wins",
        all(v <= 1.3 for v in c2.values()), True,
        "; ".join(f"{k}: {v}" for k, v in wins.items())
        + ". The paper's 2.31x gain is not expected in this equal-information queueing model (spec §6, §9)."))
    # C3
    if c3 is not None:
        cov = float(np.mean(c3["coverage80"]))
        nt, nn_ = float(np.mean(c3["nll_logt"])), float(np.mean(c3["nll_lognormal"]))
        rho = float(np.mean(c3["spearman"]))
        claims.append(Claim(
            "C3", "The predictor outputs a calibrated heavy-tailed length distribution, better fitted by log-t "
                  "than log-normal, whose TIE score ranks prompts by their true expected length.",
            "held-out W1 (16 fresh samples/prompt): 80% interval coverage; NLL per sample (nats); Spearman",
            {"coverage80": cov, "nll_logt": nt, "nll_lognormal": nn_, "spearman_tie_vs_true_mean": rho},
            "coverage in [0.70, 0.90]; NLL log-t < log-normal; Spearman >= 0.8",
            (0.70 <= cov <= 0.90) and nt < nn_ and rho >= 0.8, True,
            f"per seed coverage {np.round(c3['coverage80'], 3).tolist()}, NLL log-t {np.round(c3['nll_logt'], 4).tolist()}"
            f" vs log-normal {np.round(c3['nll_lognormal'], 4).tolist()}, Spearman "
            f"{np.round(c3['spearman'], 3).tolist()}; mu MAE {np.mean(c3['mu_mae']):.3f} vs family-mean "
            f"{np.mean(c3['mu_mae_family_mean']):.3f} (hidden N(0, 0.2) effect sets the floor ~0.16)"))
    # C4
    if "W2" in W:
        mx, dp = {}, {}
        for si in range(n_seeds):
            on, off = ptl("W2", si, top, "tie"), ptl("W2", si, top, "tie_nostarv")
            mx[f"seed{si}"] = on["e2e_max"] / off["e2e_max"]
            dp[f"seed{si}"] = on["per_token_latency"] / off["per_token_latency"] - 1
        held4 = all(v <= 0.8 for v in mx.values()) and all(abs(v) <= 0.05 for v in dp.values())
        claims.append(Claim(
            "C4", "Starvation prevention (TIE·γ^(t_wait/τ)) bounds the worst-case latency of long requests "
                  "without hurting mean per-token latency.",
            f"W2, rho={top}: max e2e latency on/off; relative per-token latency change",
            {"max_latency_ratio_worst": max(mx.values()), "per_token_change_worst": max(dp.values(), key=abs)},
            "max-latency ratio <= 0.8 and |per-token change| <= 5% on every seed",
            held4, True, "max-latency ratio " + ", ".join(f"{k}={v:.3f}" for k, v in mx.items())
            + "; per-token change " + ", ".join(f"{k}={v:+.3%}" for k, v in dp.items())))
    return claims


def _figures(result: Result, cfg, sims, data, preds, real) -> None:
    from icml26.common.plotting import new_figure
    from icml26.tie.dist import LogT

    kv_hi, top = max(cfg["kv_tokens"]), max(cfg["loads"])
    W = cfg["workloads"]
    fig, axes = new_figure(ncols=len(W), width=5.2, height=3.8)
    axes = np.atleast_1d(axes).ravel()
    for ax, w in zip(axes, W):
        c = next(s for s in sims if s["workload"] == w and s["seed_idx"] == 0 and s["load"] == top
                 and s["kv"] == kv_hi)["policies"]
        for pol in ["fcfs", "ssjf", "ltr", "sjf_median", "sjf_mean", "tie", "oracle"]:
            x = np.sort(c[pol]["per_token"]) * 1e3
            ax.plot(x, np.arange(1, len(x) + 1) / len(x), label=LABELS[pol], lw=1.4 if pol == "tie" else 1.0)
        ax.set_xscale("log")
        ax.set_xlabel("per-token latency (ms/token)")
        ax.set_ylabel("CDF over requests")
        ax.set_title(f"{w}, rho={top}, KV {kv_hi} tokens, seed 0")
    axes[0].legend(fontsize=7)
    result.add_figure("latency_cdf", fig)

    ncols = 2 if real and "summary" in real else 1
    fig, axes = new_figure(ncols=ncols, width=5.2, height=3.8)
    axes = np.atleast_1d(axes).ravel()
    if "W1" in W:
        d = data["W1"]
        te, ho, p = d["tests"][0], d["heldout"][0], preds[("W1", "tie")]["preds"][0]
        ax = axes[0]
        picks = np.argsort(p["sigma"])[[len(te) // 10, len(te) // 2, 9 * len(te) // 10]]
        for j, i in enumerate(picks):
            x = np.sort(ho[i])
            ax.step(x, np.arange(1, len(x) + 1) / len(x), where="post", color=f"C{j}", alpha=0.8)
            grid = np.geomspace(1, cfg["max_tokens"], 300)
            ax.plot(grid, LogT(p["mu"][i], p["sigma"][i], nu=cfg["nu"]).cdf(grid), "--", color=f"C{j}",
                    label=f"predicted log-t (mu={p['mu'][i]:.2f}, sigma={p['sigma'][i]:.2f})")
        ax.set_xscale("log")
        ax.set_xlabel("output length (tokens)")
        ax.set_ylabel("CDF")
        ax.set_title("W1 held-out prompts: 16 samples (steps) vs prediction")
        ax.legend(fontsize=7)
    if ncols == 2:
        ax = axes[1]
        L, cap = real["lengths"], real["cap"]
        ok = np.flatnonzero((L >= cap).mean(1) < 0.5)  # rows mostly censored have no identifiable fit
        order = ok[np.argsort(real["mu"][ok])] if len(ok) >= 3 else np.argsort(real["mu"])
        for j, i in enumerate(order[[0, len(order) // 2, -1]]):
            x = np.sort(L[i])
            ax.step(x, np.arange(1, len(x) + 1) / len(x), where="post", color=f"C{j}")
            grid = np.geomspace(1, cap, 300)
            ax.plot(grid, LogT(real["mu"][i], real["sigma"][i], nu=cfg["nu"]).cdf(grid), "--", color=f"C{j}",
                    label=real["prompts"][i][:38])
        ax.axvline(cap, color="gray", lw=0.8, ls=":")
        ax.set_xscale("log")
        ax.set_xlabel("output length (tokens)")
        ax.set_title(f"SmolLM2-135M-Instruct: {L.shape[1]} samples vs censored log-t fit")
        ax.legend(fontsize=7)
    result.add_figure("length_fit", fig)
