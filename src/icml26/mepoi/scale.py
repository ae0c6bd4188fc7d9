"""Paper-scale ME-POIs (spec section 7): a user-supplied visit table of millions of visits, multi-GPU contrastive
training with torch DDP under `torchrun` (through `icml26.common.distributed`), then the five map-enrichment probes.

    # one node, 8 GPUs; the tables are the user's parquet files (schemas in `icml26.mepoi.data`):
    torchrun --standalone --nproc_per_node 8 -m icml26.mepoi.scale configs/paper/mepoi/paper.json \\
        visits_path=/data/visits.parquet pois_path=/data/pois.parquet labels_path=/data/labels.parquet
    # single GPU / CPU, same code path (world size 1):
    icml26 run mepoi --scale paper --set visits_path=... --set pois_path=... --set labels_path=...

Every rank builds the same model (same seed; DDP also broadcasts rank 0's weights when wrapping), takes a disjoint
share of each epoch's shuffled windows (padded by wrap-around to a multiple of the world size, so every rank runs
the same number of steps) and computes the in-batch contrastive loss on its own batch (spec section 7: "computed
per rank"); DDP averages the gradients. The usage priors are computed once on rank 0 (numpy, chunked) and
broadcast. After training, rank 0 encodes the prompts with the sentence-transformers model `text_model`, probes
the five tasks over `seeds` and writes the Result plus the embeddings (`out_dir/embeddings_lambda*.npy`).

With world size 1, `train_ddp` draws exactly the random numbers `MEPOITrainer.fit` draws, so it returns the same
embeddings (tested). bf16 autocast is used on CUDA when `amp` is true. This module takes the config as an
argument and never imports `icml26.mepoi.experiment`.

Label table (`labels_path`, parquet keyed by `poi_id`; every column optional, missing tasks are skipped):
`opening_hours` (168 0/1 per row, Monday 00-01 first), `closure` (0/1), `busyness` (24 values in [0, 1]),
`price` (int class), `function` (int class).
"""

from __future__ import annotations

import copy
import json
import math
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from icml26.common import distributed as D
from icml26.common.validation import check_bool, check_int
from icml26.mepoi.data import POITable, VisitTable, make_windows, visit_features
from icml26.mepoi.model import MEPOI, MEPOITrainer, make_optimizer
from icml26.mepoi.usage import UsagePriors

__all__ = ["train_ddp", "trainer_params", "load_tables", "labels_from_frame", "run_paper", "main"]

_TRAINER_KEYS = ("d", "layers", "heads", "ffn", "dropout", "window", "batch_size", "optimizer", "epochs", "tau",
                 "lambda_kl", "min_visits", "bins", "prior_batch", "embedding_init_std", "use_absolute_time",
                 "keep_tail", "patience")


def trainer_params(config: Mapping[str, Any], **over: Any) -> dict[str, Any]:
    """`MEPOITrainer` keyword arguments from a run config (lr 0 = the optimizer's default; absolute_time_days 0 =
    the simulated span, 7 x weeks)."""
    p = {k: config[k] for k in _TRAINER_KEYS if k in config}
    p["sigmas_km"] = tuple(config.get("sigmas_km", (0.3, 1.0, 3.0)))
    p["lr"] = config["lr"] if config.get("lr", 0) else None
    atd = float(config.get("absolute_time_days", 0.0))
    p["absolute_time_days"] = atd if atd > 0 else 7.0 * int(config.get("weeks", 52))
    if config.get("tz"):
        p["tz"] = config["tz"]
    p.update(over)
    return p


def _steps_order(n: int, world: int, rng: np.random.Generator) -> np.ndarray:
    """One epoch's window order, wrapped around to a multiple of `world` (every rank gets len/world windows)."""
    order = rng.permutation(n)
    extra = (-n) % world
    return np.concatenate([order, order[:extra]]) if extra else order


def train_ddp(visits: pd.DataFrame, pois: pd.DataFrame, params: Mapping[str, Any], env: D.DistEnv | None = None,
              *, priors: UsagePriors | None = None, amp: bool = True, progress: bool = False) -> dict[str, Any]:
    """Train ME-POIs with DDP (or in one process when `env` is single / None).

    Args:
        visits, pois: the tables (`icml26.mepoi.data` schemas). params: `MEPOITrainer` keyword arguments
            (validated by it). env: `D.init_distributed()`'s result (default: a single process on `params['device']`).
        priors: precomputed `UsagePriors` (default: built on rank 0 and broadcast). amp: bf16 autocast on CUDA.
    Returns:
        dict with `model` (the unwrapped MEPOI, best epoch's weights, eval mode), `embeddings` (n_poi, d) float32,
        `history` (per-epoch mean losses, averaged over ranks), `epoch_s` (mean seconds per epoch),
        `visits_per_s` (real visits per second, all ranks together), `n_windows`, `n_dropped`, `priors`,
        `world_size`.
    """
    tr = MEPOITrainer(**dict(params))
    p = tr._check_params()
    amp = check_bool(amp, "amp")
    env = env or D.DistEnv(device=p["device"])
    P = pois if isinstance(pois, POITable) else POITable.from_frame(pois)
    V = visits if isinstance(visits, VisitTable) else VisitTable.from_frame(visits, P)
    feats = visit_features(V, P, tz=tr.tz, days_scale=p["absolute_time_days"])
    win = make_windows(V.frame["user_id"], p["window"], keep_tail=p["keep_tail"])
    if len(win) < env.world_size:
        raise ValueError(f"{len(win)} training windows for {env.world_size} ranks: need at least one per rank "
                         f"(lower window or set keep_tail=True)")
    if priors is None:
        priors = D.broadcast_object(tr.build_priors(V, P) if env.is_main else None)
    else:
        priors = tr._check_priors(priors, len(P), p)
    torch.manual_seed(p["seed"])
    rng = np.random.default_rng(p["seed"])  # identical on every rank: same order, same prior batches
    model = MEPOI(len(P), len(P.categories), d=p["d"], layers=p["layers"], heads=p["heads"], ffn=p["ffn"],
                  dropout=p["dropout"], tau=p["tau"], lambda_kl=p["lambda_kl"], lambda_anchor=p["lambda_anchor"],
                  lambda_align=0.0, use_absolute_time=p["use_absolute_time"], n_scales=priors.transfer.shape[1],
                  bins=p["bins"], max_len=max(p["window"], 1))
    torch.nn.init.normal_(model.poi.table.weight, std=p["embedding_init_std"])
    model.set_priors(priors)
    model.to(env.device)
    # a batch whose visits are all anchors with no prior batch leaves alpha unused
    ddp = D.wrap_ddp(model, env, find_unused_parameters=True)
    opt = make_optimizer(model, p["optimizer"], p["lr"], p["weight_decay"])
    sparse_ids = np.flatnonzero(~priors.is_anchor)
    use_amp = amp and env.device.type == "cuda"
    history: list[dict[str, float]] = []
    best, best_state, bad, t_epochs = math.inf, None, 0, []
    n_real = int(win.mask.sum())  # real visits per epoch, all ranks together
    from tqdm.auto import tqdm

    from icml26.mepoi.data import gather_batch

    bar = tqdm(total=p["epochs"], desc="ME-POI (DDP)", disable=not (progress and env.is_main), leave=False)
    for epoch in range(p["epochs"]):
        t0 = time.perf_counter()
        ddp.train()
        order = _steps_order(len(win), env.world_size, rng)
        mine = order[env.rank::env.world_size]
        sums: dict[str, float] = {}
        steps = 0
        for i in range(0, len(mine), p["batch_size"]):
            idx = win.index[mine[i:i + p["batch_size"]]]
            batch = gather_batch(feats, idx)
            if p["prior_batch"] and len(sparse_ids):
                k = min(p["prior_batch"], len(sparse_ids))
                draws = [rng.choice(sparse_ids, size=k, replace=False) for _ in range(env.world_size)]
                batch["prior_poi"] = torch.from_numpy(draws[env.rank])
            batch = {key: v.to(env.device, non_blocking=True) for key, v in batch.items()}
            with torch.autocast(device_type=env.device.type, dtype=torch.bfloat16, enabled=use_amp):
                out = ddp(batch)
            opt.zero_grad(set_to_none=True)
            out["loss"].backward()
            opt.step()
            for key, v in out.items():
                sums[key] = sums.get(key, 0.0) + float(v.detach())
            steps += 1
        t_epochs.append(time.perf_counter() - t0)
        sums = D.mean_reduce({k: v / max(steps, 1) for k, v in sums.items()})
        history.append({"epoch": epoch, **sums, "time_s": t_epochs[-1]})
        bar.update()
        if sums["loss"] < best - 1e-6:
            best, bad = sums["loss"], 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            bad += 1
            if p["patience"] and bad >= p["patience"]:
                break
    bar.close()
    if best_state is not None:
        model.load_state_dict(best_state)
    model.eval()
    return {"model": model, "embeddings": model.poi.table.weight.detach().float().cpu().numpy().astype(np.float32),
            "history": history, "epoch_s": float(np.mean(t_epochs)),
            "visits_per_s": float(n_real / max(float(np.mean(t_epochs)), 1e-9)), "n_windows": len(win),
            "n_dropped": win.n_dropped, "priors": priors, "world_size": env.world_size}


# ---------------------------------------------------------------------------------------------- tables
def load_tables(config: Mapping[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(visits, pois, labels) from the config's parquet paths."""
    out = []
    for key in ("visits_path", "pois_path", "labels_path"):
        path = config.get(key, "")
        if not path:
            raise ValueError(f"the paper-scale path needs {key} (a parquet file; --set {key}=/path/file.parquet)")
        if not Path(path).is_file():
            raise ValueError(f"{key} {path!r} is not a file")
        out.append(pd.read_parquet(path))
    return out[0], out[1], out[2]


def labels_from_frame(labels: pd.DataFrame, pois: pd.DataFrame) -> dict[str, np.ndarray]:
    """Task labels aligned with the rows of `pois` from a label table keyed by `poi_id` (see module docstring).
    Every POI must have a label row; a task whose column is absent is skipped."""
    if not isinstance(labels, pd.DataFrame) or "poi_id" not in labels.columns:
        raise ValueError("labels must be a DataFrame with a poi_id column")
    lab = labels.drop_duplicates("poi_id").set_index("poi_id")
    missing = ~pois["poi_id"].isin(lab.index)
    if missing.any():
        raise ValueError(f"labels has no row for poi_id {pois['poi_id'][missing].iloc[0]!r}")
    lab = lab.loc[pois["poi_id"].to_numpy()]
    out: dict[str, np.ndarray] = {}
    for task, width in (("opening_hours", 168), ("busyness", 24)):
        if task in lab.columns:
            arr = np.stack([np.asarray(v, float) for v in lab[task]])
            if arr.shape[1] != width:
                raise ValueError(f"labels.{task} must have {width} values per row, got {arr.shape[1]}")
            out[task] = arr.astype(np.uint8) if task == "opening_hours" else arr.astype(np.float32)
    for task in ("closure", "price", "function"):
        if task in lab.columns:
            out[task] = lab[task].to_numpy(np.int64)
    if not out:
        raise ValueError("labels has none of the task columns opening_hours, closure, busyness, price, function")
    return out


# ---------------------------------------------------------------------------------------------- run
def run_paper(config: Mapping[str, Any]):
    """The paper-scale run: DDP training of lambda_kl = 1 and 0, then (rank 0) text embeddings, probes and claims.
    Returns the Result on rank 0 and None on the other ranks."""
    config = dict(config)
    t_start = time.perf_counter()
    env = D.init_distributed()
    if config.get("device") == "cpu":
        env = D.DistEnv(env.rank, env.local_rank, env.world_size, torch.device("cpu"), env.backend)
    visits, pois, labels_df = load_tables(config)
    seeds = [int(s) for s in config["seeds"]]
    lam = float(config.get("lambda_kl", 1.0))
    trains = {}
    for lk in (lam, 0.0):
        D.log(env, f"mepoi: training lambda_kl={lk:g} on {len(visits)} visits, world size {env.world_size}")
        trains[lk] = train_ddp(visits, pois, trainer_params(config, seed=seeds[0], lambda_kl=lk), env,
                               amp=bool(config.get("amp", True)), progress=True)
    if not env.is_main:
        return None
    out_dir = Path(config.get("out_dir") or "runs/mepoi/paper/artifacts")
    out_dir.mkdir(parents=True, exist_ok=True)
    for lk, tr in trains.items():
        np.save(out_dir / f"embeddings_lambda{lk:g}.npy", tr["embeddings"])
    result = evaluate_paper(config, pois, labels_df, trains[lam], trains[0.0], seeds)
    result.metrics["world_size"] = env.world_size
    result.runtime_s = time.perf_counter() - t_start
    return result


def evaluate_paper(config: Mapping[str, Any], pois: pd.DataFrame, labels_df: pd.DataFrame, full: Mapping[str, Any],
                   ablation: Mapping[str, Any], seeds: list[int]):
    """Text embeddings, probes (one 60/20/20 split per seed), cross-fitted long-tail check and claims."""
    from icml26.common.paths import cache_dir
    from icml26.mepoi import claims as C
    from icml26.mepoi.baselines import text_embeddings
    from icml26.mepoi.evaluation import collect, crossfit_job, probe_task_job, score_table
    from icml26.mepoi.text import HashingTextEncoder, SentenceTransformerEncoder
    from icml26.results import Result

    labels = labels_from_frame(labels_df, pois)
    enc = (HashingTextEncoder(256) if config.get("text_encoder") == "hashing" else
           SentenceTransformerEncoder(config.get("text_model") or None,
                                      device="cuda" if torch.cuda.is_available() else "cpu"))
    T = text_embeddings(pois, enc, k=int(config.get("n_neighbors", 10)),
                        cache=None if config.get("text_encoder") == "hashing" else str(cache_dir("mepoi") / "text"))
    E1, E0 = full["embeddings"], ablation["embeddings"]
    counts = full["priors"].visit_counts
    sparse = counts <= 5
    pp = {k[len("probe_"):]: config[k] for k in config if k.startswith("probe_")}
    onehot = np.eye(int(pois["category"].nunique()), dtype=np.float32)[pd.factorize(pois["category"], sort=True)[0]]
    arms = {"category": ("text", onehot, None), "minilm": ("text", T, None), "poi": ("poi", None, E1),
            "category+poi": ("both", onehot, E1), "minilm+poi": ("both", T, E1)}
    keep = tuple(arms)
    jobs = [probe_task_job(task, s, labels[task], arms, sparse, pp, keep_preds=keep) for s in seeds for task in labels]
    col = collect(jobs, seeds)
    scores, sparse_scores, preds, val = col["scores"], col["sparse"], col["preds"], col["val"]
    nb = int(config.get("n_boot", 1000))
    claims = [C.claim_both_vs_text(t, preds[t], val[t], scores[t], nb) for t in C.MARGINS
              if t in labels and t != "price"]
    if "price" in labels:
        claims.append(C.claim_price(preds["price"], val["price"], scores["price"], nb))
    if all(t in labels for t in ("opening_hours", "closure", "busyness")):
        claims.append(C.claim_poi_vs_text(preds, val, scores, nb))
    if "busyness" in labels:
        fam = {o["seed"]: o["chosen"]["poi"] for o in jobs if o["task"] == "busyness"}
        cross = [crossfit_job(s, labels["busyness"], {"lambda1": E1, "lambda0": E0}, pp,
                              families={"lambda1": (fam[s],), "lambda0": (fam[s],)}) for s in seeds]
        claims.append(C.claim_propagation([o["errs"]["lambda1"] for o in cross],
                                          [o["errs"]["lambda0"] for o in cross], counts, n_boot=nb))
    metrics = {"world": "parquet", "n_poi": len(pois), "n_visits": int(counts.sum()), "scores": scores,
               "sparse_subgroup_scores": sparse_scores, "text_encoder": enc.name,
               "performance": {"epoch_s": full["epoch_s"], "train_visits_per_s": full["visits_per_s"]},
               "training": {k: {"history": v["history"], "n_windows": v["n_windows"], "n_dropped": v["n_dropped"]}
                            for k, v in (("lambda1", full), ("lambda0", ablation))}}
    notes = ("Paper-scale run on the user's tables. Test scores (mean ± sd over seeds; busyness is MAE):\n\n"
             + score_table(scores))
    return Result(slug="mepoi", scale=str(config.get("scale", "paper")), config=dict(config), metrics=metrics,
                  claims=claims, notes=notes)


def _parse_override(arg: str) -> tuple[str, Any]:
    if "=" not in arg:
        raise ValueError(f"overrides are key=value, got {arg!r}")
    k, v = arg.split("=", 1)
    try:
        return k, json.loads(v)
    except json.JSONDecodeError:
        return k, v


def main(argv: list[str] | None = None) -> int:
    """`python -m icml26.mepoi.scale CONFIG.json [key=value ...]` (under torchrun for DDP); rank 0 saves the
    Result to `runs/mepoi/paper/` (or `result_dir`)."""
    from icml26.results import save_result

    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        raise SystemExit("usage: python -m icml26.mepoi.scale CONFIG.json [key=value ...]")
    config = json.loads(Path(argv[0]).read_text())
    config.update(dict(_parse_override(a) for a in argv[1:]))
    check_int(len(config.get("seeds", [])), "seeds", min=1)
    result = run_paper(config)
    if result is not None:
        print(f"saved {save_result(result, config.get('result_dir', 'runs/mepoi/paper'))}", flush=True)
    D.shutdown()
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
