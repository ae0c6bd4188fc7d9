"""Spec 8 correctness tests of the read/patch hooks on TinyLM and a Hugging Face Llama."""

from __future__ import annotations

import pytest
import torch

from icml26.common.generation import generate, lm_logits
from icml26.verbalization import (TinyCausalLM, get_decoder_layers, hidden_size, num_layers, patch_activations,
                                  read_activations)


@pytest.fixture
def tiny():
    torch.manual_seed(0)
    return TinyCausalLM(40, d_model=16, n_layers=2, n_heads=2, max_len=24).eval()


def _ids(B=3, T=6, V=40, seed=1):
    return torch.randint(3, V, (B, T), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("kind", ["tiny", "hf"])
def test_self_patch_is_bit_identical(kind, tiny, hf_pair):
    model = tiny if kind == "tiny" else hf_pair[1]
    ids = _ids(V=40 if kind == "tiny" else len(hf_pair[2]))
    base = lm_logits(model, ids)
    for layer in range(num_layers(model) + 1):
        h = read_activations(model, ids, layer=layer, positions="all")
        with patch_activations(model, layer, torch.arange(ids.shape[1]), h):
            assert torch.equal(lm_logits(model, ids), base)


def test_layer_convention_tinylm(tiny):
    ids = _ids()
    assert torch.equal(read_activations(tiny, ids, layer=0, positions="all"), tiny.tok_emb(ids))
    _, final = tiny(ids, return_hidden=True)  # after the final norm
    last = read_activations(tiny, ids, layer=2, positions="all")
    assert torch.allclose(tiny.norm(last), final, atol=1e-6)
    assert not torch.allclose(last, final)  # read before the final norm


def test_layer_convention_hf(hf_pair):
    model = hf_pair[1]
    ids = _ids(V=len(hf_pair[2]))
    hs = model(ids, output_hidden_states=True).hidden_states
    assert torch.equal(read_activations(model, ids, layer=0, positions="all"), hs[0])
    assert torch.allclose(read_activations(model, ids, layer=1, positions="all"), hs[1])


def test_last_position_respects_padding(tiny):
    ids = _ids(B=2, T=5)
    mask = torch.tensor([[1, 1, 1, 0, 0], [0, 1, 1, 1, 1]])
    h = read_activations(tiny, ids, mask, layer=1, positions="all")
    last = read_activations(tiny, ids, mask, layer=1, positions="last")
    assert torch.equal(last[0, 0], h[0, 2]) and torch.equal(last[1, 0], h[1, 4])
    per_row = read_activations(tiny, ids, mask, layer=1, positions=torch.tensor([[0, 2], [1, 3]]))
    assert torch.equal(per_row[1, 1], h[1, 3])


def test_hook_removed_after_context(tiny):
    ids = _ids()
    base = lm_logits(tiny, ids)
    with patch_activations(tiny, 1, [2], torch.full((16,), 5.0)):
        assert not torch.allclose(lm_logits(tiny, ids), base)
    assert torch.equal(lm_logits(tiny, ids), base)
    assert all(not layer._forward_hooks and not layer._forward_pre_hooks for layer in get_decoder_layers(tiny))


@pytest.mark.parametrize("kind", ["tiny", "hf"])
def test_generation_patches_prefill_only(kind, tiny, hf_pair):
    model = tiny if kind == "tiny" else hf_pair[1]
    V = 40 if kind == "tiny" else len(hf_pair[2])
    ids = _ids(V=V)
    vec = torch.randn(3, 1, hidden_size(model), generator=torch.Generator().manual_seed(3)) * 4
    with patch_activations(model, 1, [ids.shape[1] - 1], vec):
        first = generate(model, ids.tolist(), 1, temperature=0.0)
        logits = lm_logits(model, ids)
    assert [f[0] for f in first] == logits[:, -1].argmax(-1).tolist()
    # count the passes the hook changes during a 4-token generation: only the prefill
    changed = []
    layer = get_decoder_layers(model)[0]
    handle = layer.register_forward_hook(lambda m, a, o: changed.append((o[0] if isinstance(o, tuple) else o).shape[1]))
    try:
        with patch_activations(model, 1, [ids.shape[1] - 1], vec):
            generate(model, ids.tolist(), 4, temperature=0.0)
    finally:
        handle.remove()
    assert changed[0] == ids.shape[1] and all(t == 1 for t in changed[1:])  # prefill, then cached single steps


def test_patch_changes_only_later_positions(tiny):
    ids = _ids()
    base = lm_logits(tiny, ids)
    with patch_activations(tiny, 0, [3], torch.full((16,), 2.0)):
        out = lm_logits(tiny, ids)
    assert torch.equal(out[:, :3], base[:, :3]) and not torch.allclose(out[:, 3:], base[:, 3:])


def test_valid_mask_skips_slots(tiny):
    ids = _ids(B=2)
    base = lm_logits(tiny, ids)
    vec = torch.full((2, 1, 16), 3.0)
    with patch_activations(tiny, 1, torch.tensor([[1], [1]]), vec, valid=torch.tensor([[True], [False]])):
        out = lm_logits(tiny, ids)
    assert torch.equal(out[1], base[1]) and not torch.allclose(out[0], base[0])


def test_errors_name_the_problem(tiny, hf_pair):
    ids = _ids()
    with pytest.raises(IndexError, match=r"valid layers are 0\.\.2"):
        read_activations(tiny, ids, layer=3)
    with pytest.raises(IndexError, match="0..2"):
        with patch_activations(tiny, -1, [0], torch.zeros(16)):
            pass
    with pytest.raises(ValueError, match="hidden size is 16"):
        with patch_activations(tiny, 1, [0], torch.zeros(32)):
            pass
    with pytest.raises(IndexError, match="positions"):
        read_activations(tiny, ids, layer=1, positions=[6])
    with pytest.raises(IndexError, match="only 6 tokens"):
        with patch_activations(tiny, 1, [9], torch.zeros(16)):
            lm_logits(tiny, ids)
    with pytest.raises(ValueError, match="cannot find the decoder layers"):
        get_decoder_layers(torch.nn.Linear(2, 2))
    with pytest.raises(TypeError, match="integer token ids"):
        read_activations(tiny, ids.float(), layer=1)
    with pytest.raises(ValueError, match="finite"):
        with patch_activations(tiny, 1, [0], torch.full((16,), float("nan"))):
            pass
    with pytest.raises(ValueError, match="mode"):
        with patch_activations(tiny, 1, [0], torch.zeros(16), mode="swap"):
            pass
    with pytest.raises(ValueError, match="input_ids must hold token ids < the model's vocabulary size 40"):
        read_activations(tiny, [[1, 40]], layer=1)
    with pytest.raises(ValueError, match="input_ids .* vocabulary size"):
        read_activations(hf_pair[1], [[1, 10_000]], layer=1)
    assert len(get_decoder_layers(hf_pair[1])) == 2 and hidden_size(hf_pair[1]) == 32
