"""The paper-scale path end to end at toy size: NExT-GQA-format files, one process and 2 gloo ranks under torchrun."""

from __future__ import annotations

import json

import pytest

from icml26.common.distributed import launch_local
from icml26.lingua import KitchenWorld
from icml26.lingua import scale as S


def _cfg(tmp_path, fake_nextgqa, out, **kw):
    csv_path, gsub, vdir = fake_nextgqa(tmp_path / "data", KitchenWorld(seed=0), 2)
    cfg = {"scale": "paper", "seed": 0, "nextgqa_csv": str(csv_path), "nextgqa_gsub": str(gsub),
           "video_dir": str(vdir), "stream_csv": str(csv_path), "stream_gsub": "", "n_stream": 2, "max_videos": 0,
           "sample_fps": 5.0, "max_frames": 900, "encoder": "random_projection", "encoder_path": "",
           "detector": "symbolic", "detector_path": "", "captioner": "symbolic", "llm": "rule_based", "llm_path": "",
           "embedder": "hashing", "device": "cpu", "out_dir": str(out), "world": "kitchen",
           "lingua": {"n_min": 2, "mine_every": 1}}
    cfg.update(kw)
    return cfg


def test_paper_path_single_process(tmp_path, fake_nextgqa):
    cfg = _cfg(tmp_path, fake_nextgqa, tmp_path / "one")
    res = S.run_paper(cfg)
    assert [c.id for c in res.claims] == ["P1", "P2"] and res.metrics["n_questions"] == 12
    assert res.metrics["stream_questions"] == 12 and (tmp_path / "one" / "memory" / "memory.json").is_file()
    assert (tmp_path / "one" / "predictions.json").is_file()


@pytest.mark.slow  # two torchrun worker processes: ~20 s of start-up on 2 cores
def test_paper_path_two_gloo_ranks_equal_one_process(tmp_path, fake_nextgqa):
    cfg = _cfg(tmp_path, fake_nextgqa, tmp_path / "one")
    S.run_paper(cfg)
    single = json.loads((tmp_path / "one" / "predictions.json").read_text())
    (tmp_path / "cfg.json").write_text(json.dumps(cfg))
    proc = launch_local(S.__file__, ["--config", str(tmp_path / "cfg.json"), "--set",
                                     f'out_dir="{tmp_path / "two"}"'], nproc=2, timeout=240)
    assert "world_size\": 2" in proc.stdout
    hashes = [(tmp_path / "two" / f"memory_rank{r}.sha256").read_text() for r in (0, 1)]
    assert hashes[0] == hashes[1] == (tmp_path / "one" / "memory_rank0.sha256").read_text()
    assert json.loads((tmp_path / "two" / "predictions.json").read_text()) == single


def test_paper_config_validation(tmp_path):
    base = {"nextgqa_csv": "a.csv", "nextgqa_gsub": "g.json", "video_dir": "v", "encoder": "videomae",
            "captioner": "ollama", "llm": "ollama", "embedder": "minilm", "out_dir": str(tmp_path)}
    with pytest.raises(ValueError, match="encoder_path"):
        S.validate_paper_config(base)
    with pytest.raises(ValueError, match="world"):
        S.validate_paper_config({**base, "encoder": "random_projection", "captioner": "symbolic"})
    with pytest.raises(ValueError, match="llm"):
        S.validate_paper_config({**base, "encoder_path": "x", "llm": "gpt"})
    with pytest.raises(ValueError, match="nextgqa_csv"):
        S.validate_paper_config({**base, "nextgqa_csv": ""})
