"""Real-data loaders for the paper-scale path: NExT-GQA annotations and video frames (spec section 7).

The synthetic KitchenWorld of the CPU reproduction lives in `synthetic.py`. Nothing here downloads anything:
NExT-GQA (`val.csv`/`test.csv` + `gsub_val.json`/`gsub_test.json`, github.com/doc-doc/NExT-GQA) and the NExT-QA
videos are supplied by the user.
"""

from __future__ import annotations

import csv
import json
import os
from collections import defaultdict
from pathlib import Path

import numpy as np

from icml26.common.validation import check_choice, check_float, check_int
from icml26.lingua.backends import BackendUnavailableError
from icml26.lingua.metrics import QTYPE_GROUPS
from icml26.lingua.synthetic import QAItem, Video

__all__ = ["load_nextgqa", "group_by_video", "load_video_frames"]


def load_nextgqa(csv_path: str | os.PathLike, gsub_path: str | os.PathLike | None,
                 missing: str = "error") -> list[QAItem]:
    """NExT-GQA questions with their grounding segments.

    Args:
        csv_path: val.csv / test.csv (columns video_id, question, answer, qid, type, a0..a4; `answer` is the
            correct option's text or index).
        gsub_path: gsub_val.json / gsub_test.json ({video_id: {"duration", "fps", "location": {qid: [[s, e], ..]}}});
            None for a question set without grounding (e.g. NExT-QA train.csv as a continual-learning stream):
            then every `gt_spans` is empty.
        missing: what to do with a question that has no segment: "error" (default) or "skip".
    Returns:
        `QAItem`s (qtype causal/temporal/descriptive from the type code) with meta {"video_id", "qid", "type",
        "duration", "fps"}, in file order.
    """
    missing = check_choice(missing, "missing", ("error", "skip"))
    csv_path = Path(csv_path)
    paths = [csv_path] + ([Path(gsub_path)] if gsub_path is not None else [])
    for p in paths:
        if not p.is_file():
            raise FileNotFoundError(f"{p} does not exist")
    gsub = json.loads(Path(gsub_path).read_text()) if gsub_path is not None else {}
    if not isinstance(gsub, dict):
        raise ValueError(f"{gsub_path} must hold a JSON object keyed by video id")
    out: list[QAItem] = []
    with open(csv_path, newline="") as f:
        reader = csv.DictReader(f)
        need = {"video_id", "question", "answer", "qid", "type"}
        if reader.fieldnames is None or not need <= set(reader.fieldnames):
            raise ValueError(f"{csv_path} must have columns {sorted(need)} and a0..a4, got {reader.fieldnames}")
        opt_cols = sorted((c for c in reader.fieldnames if c.startswith("a") and c[1:].isdigit()),
                          key=lambda c: int(c[1:]))
        if len(opt_cols) < 2:
            raise ValueError(f"{csv_path} must have option columns a0, a1, ...")
        for row_no, row in enumerate(reader, start=2):
            vid, qid = str(row["video_id"]).strip(), str(row["qid"]).strip()
            options = [row[c].strip() for c in opt_cols]
            ans = row["answer"].strip()
            if ans.isdigit() and int(ans) < len(options):
                idx = int(ans)
            elif ans in options:
                idx = options.index(ans)
            else:
                raise ValueError(f"{csv_path}:{row_no}: answer {ans!r} is neither an option index nor an option")
            info = gsub.get(vid, {})
            segs = info.get("location", {}).get(qid)
            if gsub_path is None:
                segs = []
            elif not segs:
                if missing == "skip":
                    continue
                raise ValueError(f"{gsub_path} has no segment for video {vid} question {qid}")
            spans = [(float(s), float(e)) for s, e in segs]
            code = row["type"].strip()
            qtype = QTYPE_GROUPS.get(code[:1].upper(), "descriptive")
            q = row["question"].strip()
            q = q if q.endswith("?") else q + "?"
            q = q[:1].upper() + q[1:]
            out.append(QAItem(q, options, idx, qtype, spans,
                              {"video_id": vid, "qid": qid, "type": code, "duration": info.get("duration"),
                               "fps": info.get("fps")}))
    return out


def group_by_video(items: list[QAItem]) -> dict[str, list[QAItem]]:
    """{video_id: its questions}, in first-appearance order."""
    out: dict[str, list[QAItem]] = defaultdict(list)
    for q in items:
        out[str(q.meta.get("video_id"))].append(q)
    return dict(out)


_IMG = (".jpg", ".jpeg", ".png", ".bmp")
_VID = (".mp4", ".avi", ".mkv", ".webm", ".mov")


def load_video_frames(path: str | os.PathLike, fps: float | None = None, sample_fps: float | None = None,
                      max_frames: int | None = None) -> Video:
    """Frames of one video as a `Video` (T, H, W, C).

    Args:
        path: a .npy array (T, H, W, C) (then `fps` is required), a folder of image files (sorted by name;
            `fps` required), or a video file (read with decord, PyAV or OpenCV, whichever is installed).
        fps: frame rate of an array/folder source. sample_fps: keep every round(fps / sample_fps)-th frame.
        max_frames: keep at most this many frames (evenly spaced) after sampling.
    """
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p} does not exist")
    if p.is_dir():
        files = sorted(f for f in p.iterdir() if f.suffix.lower() in _IMG)
        if not files:
            raise ValueError(f"{p} holds no image files ({', '.join(_IMG)})")
        if fps is None:
            raise ValueError("fps is required for a folder of frames")
        from PIL import Image

        frames = np.stack([np.asarray(Image.open(f).convert("RGB")) for f in files])
        src_fps = check_float(fps, "fps", min=0.0, min_open=True)
    elif p.suffix == ".npy":
        frames = np.load(p, mmap_mode="r")
        if fps is None:
            raise ValueError("fps is required for a .npy video")
        src_fps = check_float(fps, "fps", min=0.0, min_open=True)
    elif p.suffix.lower() in _VID:
        frames, src_fps = _read_video_file(p)
        if fps is not None:
            src_fps = check_float(fps, "fps", min=0.0, min_open=True)
    else:
        raise ValueError(f"unsupported video source {p} (use .npy, a frame folder or {', '.join(_VID)})")
    if frames.ndim != 4:
        raise ValueError(f"{p} must hold (T, H, W, C) frames, got shape {frames.shape}")
    step = 1
    if sample_fps is not None:
        sample_fps = check_float(sample_fps, "sample_fps", min=0.0, min_open=True)
        step = max(1, int(round(src_fps / sample_fps)))
    idx = np.arange(0, frames.shape[0], step)
    if max_frames is not None:
        max_frames = check_int(max_frames, "max_frames", min=1)
        if len(idx) > max_frames:
            idx = idx[np.linspace(0, len(idx) - 1, max_frames).round().astype(int)]
    out = np.ascontiguousarray(frames[idx])
    eff_fps = src_fps / step
    return Video(out, eff_fps, {"source": str(p), "source_fps": src_fps, "frame_index": idx.tolist()})


def _read_video_file(p: Path) -> tuple[np.ndarray, float]:
    import importlib.util

    if importlib.util.find_spec("decord") is not None:
        import decord

        vr = decord.VideoReader(str(p))
        return vr.get_batch(list(range(len(vr)))).asnumpy(), float(vr.get_avg_fps())
    if importlib.util.find_spec("av") is not None:
        import av

        with av.open(str(p)) as c:
            s = c.streams.video[0]
            frames = np.stack([f.to_ndarray(format="rgb24") for f in c.decode(s)])
            return frames, float(s.average_rate or 30)
    if importlib.util.find_spec("cv2") is not None:
        import cv2

        cap = cv2.VideoCapture(str(p))
        fr, out = cap.get(cv2.CAP_PROP_FPS) or 30.0, []
        while True:
            ok, f = cap.read()
            if not ok:
                break
            out.append(f[..., ::-1])
        cap.release()
        if not out:
            raise ValueError(f"could not decode {p}")
        return np.stack(out), float(fr)
    raise BackendUnavailableError(f"reading {p.suffix} files needs decord, av (PyAV) or opencv-python; or extract "
                                  "frames to a folder / .npy first")
