"""The paper-scale path at toy size: LIT with LoRA under torchrun (2 gloo ranks end identical), then evaluation."""

from __future__ import annotations

import copy
import json

import pytest
import torch

pytest.importorskip("peft")
pytest.importorskip("transformers")

from icml26.common import distributed as D  # noqa: E402
from icml26.verbalization import experiment as E  # noqa: E402
from icml26.verbalization import scale as S  # noqa: E402


def _files(tmp_path, toy):
    w = toy["world"]
    texts, qas = w.lit_examples()
    rows = [{"read_prompt": t, "question": q, "answer": a} for t, pairs in zip(texts[:24], qas) for q, a in pairs]
    (tmp_path / "lit.json").write_text(json.dumps(rows))
    pq = tmp_path / "pq" / "PersonaQA"
    pq.mkdir(parents=True)
    for a in w.attributes:
        items = [it for it in w.eval_items("consistent") if it.meta["attribute"] == a]
        pq.joinpath(f"{a}.json").write_text(json.dumps(
            {str(i): {"prompt": it.source, "question": it.question, "target": it.target} for i, it in enumerate(items)}))


def _cfg(tmp_path, folder) -> dict:
    cfg = copy.deepcopy(E.CONFIGS["paper"])
    cfg.update(target_model=str(folder), decoder_model=str(folder), personaqa_dir=str(tmp_path / "pq"),
               lit_data=str(tmp_path / "lit.json"), lit_steps=4, lit_lr=1e-2, lit_batch_size=4, lora_rank=2,
               read_layers=[1, 2], ps_source_layers=[1], ps_target_layers=[0, 1], max_new_tokens=3, dtype="float32",
               out_dir=str(tmp_path / "out"), save_all_ranks=True)
    return cfg


def test_paper_path_end_to_end_in_one_process(tmp_path, toy, hf_pair):
    """LIT training with LoRA (world size 1, the code torchrun runs per rank), then evaluation from the adapters."""
    _files(tmp_path, toy)
    cfg = _cfg(tmp_path, hf_pair[0])
    weights = S.train_lit(cfg)
    saved = torch.load(tmp_path / "out" / "lit_decoder.pt")
    assert weights and set(saved) == set(weights) and all("lora_" in k for k in saved)
    assert any(float(v.abs().sum()) > 0 for k, v in saved.items() if "lora_B" in k)  # trained away from B = 0
    cfg_eval = dict(cfg, lit_steps=0, lit_checkpoint=str(tmp_path / "out" / "lit_decoder.pt"), scale="paper")
    res = E.run(cfg_eval)
    assert res.scale == "paper" and res.metrics["n"] == len(toy["world"].eval_items("consistent"))
    assert set(res.metrics["lit"]["per_layer"]) == {1, 2} and "any_layer" in res.metrics["patchscopes"]
    assert [c.id for c in res.claims] == ["3-paper"] and not res.claims[0].gate


@pytest.mark.slow  # ~15 s (torchrun + two processes importing torch, transformers and peft); CI runs it
def test_lit_ddp_two_gloo_ranks_end_identical(tmp_path, toy, hf_pair):
    _files(tmp_path, toy)
    cfg = _cfg(tmp_path, hf_pair[0])
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps(cfg))
    D.launch_local(S.__file__, ["train", "--config", str(path)], nproc=2, timeout=240)
    r0 = torch.load(tmp_path / "out" / "lit_decoder_rank0.pt")
    r1 = torch.load(tmp_path / "out" / "lit_decoder_rank1.pt")
    assert r0 and set(r0) == set(r1) and all("lora_" in k for k in r0)
    assert all(torch.equal(r0[k], r1[k]) for k in r0)
    assert any(float(v.abs().sum()) > 0 for k, v in r0.items() if "lora_B" in k)  # trained away from B = 0
    assert all(torch.equal(r0[k], v) for k, v in torch.load(tmp_path / "out" / "lit_decoder.pt").items())


def test_paper_config_and_loaders_reject_bad_input(tmp_path, toy, hf_pair):
    cfg = _cfg(tmp_path, hf_pair[0])
    for key, value, match in (("lit_steps", -1, "lit_steps"), ("dtype", "int8", "dtype"),
                              ("read_layers", [], "read_layers"), ("lora_rank", 0, "lora_rank")):
        with pytest.raises((ValueError, TypeError), match=match):
            S.validate_paper_config(dict(cfg, **{key: value}))
    (tmp_path / "bad.json").write_text(json.dumps([{"read_prompt": "a"}]))
    with pytest.raises(ValueError, match="question"):
        S.load_lit_data(tmp_path / "bad.json")
    with pytest.raises(ValueError, match="no PersonaQA"):
        S.load_personaqa(tmp_path, "PersonaQA")
