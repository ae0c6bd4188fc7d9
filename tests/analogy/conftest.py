"""The gate tests' training runs, computed once per session in a background worker on the second core.

pytest runs every test in one process, on one core. The gate tests of test_experiment.py (each gate driven with
a working and a broken arm, and the frozen-E mutation of issue 41) need 26 short minimal-model runs, about 9 s of
one core. As soon as collection has found a test that asks for `gate_runs`, they are submitted to one spawned
single-thread worker (`icml26.common.parallel.init_worker`), which trains them while this process runs the other
tests; those tests go first, the gate tests last (`pytest_collection_modifyitems`). Every run is a deterministic
single-thread job, so where it runs changes no number.
"""

from __future__ import annotations

import multiprocessing as mp
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

SEEDS = (0, 1)
FROZEN = ((), ("E",))  # the mutation: E held fixed in stage 2 (stage 2 cannot move entity representations)

# arm -> run_curriculum kwargs (seed added per run). Cut to what each property needs: transfer, forgetting and
# the frozen-E failure show long before 3000 steps per stage (attr_then_sim gives the same per-seed accuracies at
# 1000 steps as at 3000). Each frozen arm has exactly the sizes of its unfrozen twin, so the freeze is the only
# difference between them.
CURRICULUM_ARMS = {
    "joint": dict(schedule="joint", steps_per_stage=400),
    "attribute_only": dict(schedule="attribute_only", steps_per_stage=100),  # similarity premises dropped
    "sim": dict(schedule="sim_then_attr", steps_per_stage=(400, 400)),
    "attr": dict(schedule="attr_then_sim", steps_per_stage=(400, 400)),
    "untyped": dict(schedule="attr_then_sim", steps_per_stage=(400, 400), typed=False),
    "short": dict(schedule="attr_then_sim", steps_per_stage=(200, 600)),
    "noind": dict(schedule="attr_then_sim", steps_per_stage=(400, 400), n_individual=0),
    "frozen_attr": dict(schedule="attr_then_sim", steps_per_stage=(400, 400), freeze=FROZEN),
    "frozen_short": dict(schedule="attr_then_sim", steps_per_stage=(200, 600), freeze=FROZEN),
    "frozen_noind": dict(schedule="attr_then_sim", steps_per_stage=(400, 400), n_individual=0, freeze=FROZEN),
}
TWO_HOP_STEPS = 600  # the small config's two_hop_steps

_HERE = Path(__file__).resolve().parent
_state: dict = {}


def _start() -> None:
    """Submit every gate run to one background worker (once per session)."""
    if "futures" in _state:
        return
    from icml26.analogy import experiment
    from icml26.analogy.baselines import run_two_hop
    from icml26.common.parallel import init_worker

    pool = ProcessPoolExecutor(1, mp_context=mp.get_context("spawn"), initializer=init_worker)
    futures = [(arm, pool.submit(experiment._curriculum_job, arm, {**kw, "seed": s}))
               for arm, kw in CURRICULUM_ARMS.items() for s in SEEDS]
    futures += [(f"two_hop_{'bridge' if b else 'no_bridge'}", pool.submit(run_two_hop, b, s, steps=TWO_HOP_STEPS))
                for b in (True, False) for s in SEEDS]
    _state.update(pool=pool, futures=futures)


def _is_gate_test(item: pytest.Item) -> bool:
    return "gate_runs" in getattr(item, "fixturenames", ()) and _HERE in Path(item.path).resolve().parents


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    gate = [it for it in items if _is_gate_test(it)]
    if not gate or config.option.collectonly:
        return
    _start()
    # the gate tests move behind the last other test of this folder (the rest of the suite keeps its order)
    ours = [i for i, it in enumerate(items) if _HERE in Path(it.path).resolve().parents]
    last = ours[-1]
    gate_ids = {id(it) for it in gate}
    head = [it for it in items[:last + 1] if id(it) not in gate_ids]
    items[:] = head + gate + items[last + 1:]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    pool = _state.pop("pool", None)
    if pool is not None:
        pool.shutdown(wait=True, cancel_futures=True)


@pytest.fixture(scope="session")
def gate_runs() -> dict[str, list[dict]]:
    """arm -> its runs' metric dicts in seed order (SEEDS); two-hop runs under "two_hop_bridge" / "two_hop_no_bridge"."""
    _start()
    out: dict[str, list[dict]] = {}
    for name, fut in _state["futures"]:
        out.setdefault(name, []).append(fut.result(timeout=280))
    return out
