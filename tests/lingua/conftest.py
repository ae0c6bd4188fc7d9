"""Fixtures of the lingua tests: a small KitchenWorld and a fake NExT-GQA dataset made from it."""

from __future__ import annotations

import copy
import csv
import json

import numpy as np
import pytest

from icml26.lingua import ActivitySpec, KitchenWorld, WorldConfig
from icml26.lingua.synthetic import default_activities


class MemoWorld(KitchenWorld):
    """A KitchenWorld that renders each video once per test session: `video(i)` is deterministic in (seed, i)
    (test_world_is_deterministic_and_well_formed checks it on fresh worlds), and every call returns a deep copy, so
    no test can change another test's video. Rendering was ~4 s of the folder's run, most of it re-renders."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._rendered: dict[int, tuple] = {}

    def video(self, index):
        if index not in self._rendered:
            self._rendered[index] = super().video(index)
        return copy.deepcopy(self._rendered[index])


@pytest.fixture(scope="session")
def world():
    """A faster, plainer world for unit tests of the method: shorter gaps, 3-4 activities per video, no object
    variants and no off-event changes (the default world, with both, is tested in test_perception_world and
    test_experiment)."""
    plain = [ActivitySpec(a.name, a.goal, a.steps, a.synonyms) for a in default_activities()]  # no variants
    return MemoWorld(WorldConfig(activities=plain, gap_s=(1.5, 3.0), idle_s=(1.0, 2.0), n_activities=(3, 4),
                                    off_event_rate=0.0), seed=3)


@pytest.fixture
def fake_nextgqa():
    """write_fake_nextgqa(folder, world, n_videos) -> (csv path, gsub path, video folder)."""
    return write_fake_nextgqa


def write_fake_nextgqa(folder, world, n_videos=3):
    """NExT-GQA-format files (val.csv, gsub_val.json, <video_id>.npy) from KitchenWorld videos."""
    folder.mkdir(parents=True, exist_ok=True)
    vdir = folder / "videos"
    vdir.mkdir(exist_ok=True)
    rows, gsub = [], {}
    codes = {"causal": "CW", "temporal": "TN", "descriptive": "DO"}
    for i in range(n_videos):
        v, qs = world.video(i)
        vid = str(1000 + i)
        np.save(vdir / f"{vid}.npy", v.frames)
        gsub[vid] = {"duration": v.duration, "fps": v.fps, "location": {}}
        for k, q in enumerate(qs):
            rows.append({"video_id": vid, "frame_count": v.n_frames, "width": 24, "height": 24,
                         "question": q.question.lower().rstrip("?"), "answer": q.options[q.answer_idx], "qid": k,
                         "type": codes[q.qtype], **{f"a{j}": o for j, o in enumerate(q.options)}})
            gsub[vid]["location"][str(k)] = [list(s) for s in q.gt_spans]
    with open(folder / "val.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    (folder / "gsub_val.json").write_text(json.dumps(gsub))
    return folder / "val.csv", folder / "gsub_val.json", vdir
