"""Real backends: they work on tiny local models and fail clearly (never hang, never download) when unavailable."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from icml26.lingua import (BackendUnavailableError, HashingEmbedder, LinguaAgent, LinguaConfig, MiniLMEmbedder,
                           OllamaCaptioner, OllamaLLM, RandomProjectionEncoder, TransformersDetector, TransformersLLM,
                           VideoMAEEncoder, load_nextgqa, load_video_frames)
from icml26.lingua.data import group_by_video


def test_ollama_without_server_fails_within_timeout():
    t0 = time.perf_counter()
    with pytest.raises(BackendUnavailableError, match="not reachable"):
        OllamaLLM(host="http://127.0.0.1:9", timeout=2)
    with pytest.raises(BackendUnavailableError):
        OllamaCaptioner(host="http://127.0.0.1:9", timeout=2)
    llm = OllamaLLM(host="http://127.0.0.1:9", timeout=2, check=False)
    with pytest.raises(BackendUnavailableError):
        llm.generate("hi")
    assert time.perf_counter() - t0 < 10
    with pytest.raises(ValueError, match="host"):
        OllamaLLM(host="127.0.0.1:11434")


def test_missing_local_models_raise(tmp_path):
    for cls in (VideoMAEEncoder, TransformersLLM, TransformersDetector):
        with pytest.raises(BackendUnavailableError, match="config.json"):
            cls(tmp_path / "nothing")
    with pytest.raises(BackendUnavailableError):
        MiniLMEmbedder(path=tmp_path / "nothing")


def test_hashing_embedder_and_random_projection():
    e = HashingEmbedder(64)
    v = e.encode(["the person opens the fridge", "then the person opens the fridge", ""])
    assert v.shape == (3, 64) and np.allclose(np.linalg.norm(v[:2], axis=1), 1) and not v[2].any()
    assert v[0] @ v[1] == pytest.approx(1.0)  # continuity markers and articles carry no content
    with pytest.raises(TypeError, match="list of strings"):
        e.encode("a string")
    enc = RandomProjectionEncoder(16, seed=0)
    x = np.random.default_rng(0).random((5, 4, 4, 3))
    a, b = enc.encode(x), RandomProjectionEncoder(16, seed=0).encode(x.tolist())
    assert a.shape == (5, 16) and np.allclose(a, b) and np.allclose(np.linalg.norm(a, axis=1), 1)


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory):
    """A random 2-layer Llama with a word-level tokenizer, saved locally (no download)."""
    transformers = pytest.importorskip("transformers")
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = ["<unk>", "<pad>", "<eos>"] + sorted(set("""you answer multiple choice questions about a video from its
        linguistic belief state observations id start end in seconds roles narrative question options reply with
        the letter of best option and supporting observation e g b answer why did person open fridge a c d
        none procedural scripts""".split()))
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>",
                                                eos_token="<eos>")
    cfg = transformers.LlamaConfig(vocab_size=len(words), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=512,
                                   eos_token_id=2, pad_token_id=1, bos_token_id=2)
    import torch

    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg)
    path = tmp_path_factory.mktemp("tiny_llama")
    model.save_pretrained(path)
    fast.save_pretrained(path)
    return path


def test_transformers_llm_generates_and_caches(tiny_llama, tmp_path):
    llm = TransformersLLM(tiny_llama, cache_path=tmp_path / "c.jsonl")
    out = llm.generate("why did the person open the fridge", max_tokens=4, temperature=0.0)
    assert isinstance(out, str) and llm.n_generated == 1
    assert llm.generate("why did the person open the fridge", max_tokens=4, temperature=0.0) == out
    assert llm.n_cached == 1 and len((tmp_path / "c.jsonl").read_text().splitlines()) == 1
    again = TransformersLLM(tiny_llama, cache_path=tmp_path / "c.jsonl")
    assert again.generate("why did the person open the fridge", 4, 0.0) == out and again.n_generated == 0
    s1 = llm.generate("a b c", 5, temperature=1.0)
    assert llm.generate("a b c", 5, temperature=1.0) == s1  # seeded sampling (and cache)
    with pytest.raises(ValueError, match="max_tokens"):
        llm.generate("x", 0)
    with pytest.raises(TypeError, match="prompt"):
        llm.generate(["x"])


def test_agent_with_a_transformers_llm(world, tiny_llama):
    """Any causal LM plugs in: a garbage reply still yields a valid answer (closest option, noted in the trace)."""
    from icml26.lingua import SymbolicCaptioner, SymbolicDetector

    agent = LinguaAgent(LinguaConfig(max_tokens=3), detector=SymbolicDetector(world),
                        captioner=SymbolicCaptioner(world), llm=TransformersLLM(tiny_llama))
    v, qs = world.video(0)
    agent.observe(v)
    r = agent.answer(qs[0].question, qs[0].options)
    assert 0 <= r.option_index < len(qs[0].options) and any("reply" in t for t in r.trace)


def test_videomae_encoder_tiny(tmp_path):
    transformers = pytest.importorskip("transformers")
    cfg = transformers.VideoMAEConfig(image_size=32, patch_size=16, num_frames=4, tubelet_size=2, hidden_size=32,
                                      num_hidden_layers=1, num_attention_heads=2, intermediate_size=64)
    transformers.VideoMAEModel(cfg).save_pretrained(tmp_path / "vmae")
    enc = VideoMAEEncoder(tmp_path / "vmae", batch_size=2)
    rng = np.random.default_rng(0)
    frames = (rng.random((5, 20, 24, 3)) * 255).astype(np.uint8)
    frames[2] = frames[1]
    e = enc.encode(frames)
    assert e.shape == (5, 32) and np.allclose(np.linalg.norm(e, axis=1), 1, atol=1e-5)
    # pair (prev, cur) clip: identical consecutive frames give the first frame's clip back
    e0 = enc.encode(frames[[1, 1]])
    assert np.allclose(e[2], e0[1], atol=1e-5)
    with pytest.raises(ValueError, match="RGB"):
        enc.encode(np.zeros((2, 8, 8, 4)))


def test_nextgqa_loader_and_video_frames(tmp_path, world, fake_nextgqa):
    csv_path, gsub, vdir = fake_nextgqa(tmp_path, world, 2)
    items = load_nextgqa(csv_path, gsub)
    assert len(items) == 12 and items[0].question.endswith("?") and items[0].qtype == "causal"
    vids = group_by_video(items)
    assert list(vids) == ["1000", "1001"] and all(len(v) == 6 for v in vids.values())
    v0, q0 = world.video(0)
    assert items[0].gt_spans == q0[0].gt_spans and items[0].answer_idx == q0[0].answer_idx
    assert all(q.gt_spans == [] for q in load_nextgqa(csv_path, None))
    g = json.loads(gsub.read_text())
    g["1000"]["location"].pop("0")
    gsub.write_text(json.dumps(g))
    with pytest.raises(ValueError, match="no segment"):
        load_nextgqa(csv_path, gsub)
    assert len(load_nextgqa(csv_path, gsub, missing="skip")) == 11
    vid = load_video_frames(vdir / "1000.npy", fps=5, sample_fps=2.5, max_frames=10)
    assert vid.fps == 2.5 and vid.frames.shape[0] == 10 and np.array_equal(vid.frames[0], v0.frames[0])
    with pytest.raises(ValueError, match="fps is required"):
        load_video_frames(vdir / "1000.npy")
    (tmp_path / "clip.mp4").write_bytes(b"")
    try:
        import av  # noqa: F401
    except ImportError:
        with pytest.raises(BackendUnavailableError, match="decord"):
            load_video_frames(tmp_path / "clip.mp4")
