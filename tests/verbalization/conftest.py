"""Fixtures: a tiny word-level world, a trained-in-seconds TinyCausalLM, and a tiny Hugging Face Llama pair."""

from __future__ import annotations

import pytest
import torch


def make_hf_tokenizer(words, folder):
    """A `PreTrainedTokenizerFast` over `words` (whitespace word level, `<bos>` prepended like Llama)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(["<pad>", "<bos>", "<eos>", "<unk>", *dict.fromkeys(words)])}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tk.post_processor = processors.TemplateProcessing(single="<bos> $A", special_tokens=[("<bos>", 1)])
    tk.decoder = decoders.WordPiece(prefix="##")  # joins words with single spaces
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>",
                                  unk_token="<unk>")
    tok.save_pretrained(folder)
    return tok


def make_hf_llama(vocab_size: int, folder=None, hidden: int = 32, layers: int = 2, seed: int = 0):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=vocab_size, hidden_size=hidden, intermediate_size=2 * hidden,
                      num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=64, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    model = LlamaForCausalLM(cfg).eval()
    if folder is not None:
        model.save_pretrained(folder)
    return model


@pytest.fixture(scope="session")
def toy():
    """A small PersonaWorld + FeatureExtractionWorld, their tokenizer and C0."""
    from icml26.verbalization import FeatureExtractionWorld, PersonaWorld, build_tokenizer

    w = PersonaWorld(0, n_cultures=2, n_personas=2, n_generic=6, n_values=4, n_fantasy=4, n_fantasy_values=3,
                     attributes=("country", "food"), n_roster=2, n_fantasy_roster=4)
    f = FeatureExtractionWorld(0, relations=2, n_subjects=6, n_objects=3)
    tok = build_tokenizer(w, f)
    return {"world": w, "fe": f, "tok": tok, "c0": w.base_corpus() + f.base_corpus()}


@pytest.fixture(scope="session")
def hf_pair(tmp_path_factory, toy):
    """(folder, model, tokenizer) of a tiny random Llama with a word-level tokenizer over the toy vocabulary."""
    folder = tmp_path_factory.mktemp("tiny_llama")
    tok = make_hf_tokenizer(toy["tok"].vocab[3:], folder)
    model = make_hf_llama(len(tok), folder)
    return folder, model, tok


@pytest.fixture(scope="session")
def hf_factory():
    """The tiny-HF builders, for tests that need their own vocabulary (e.g. the real-LM LIT arm)."""
    return make_hf_tokenizer, make_hf_llama
