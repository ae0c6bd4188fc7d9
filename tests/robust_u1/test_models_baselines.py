"""Models, baselines and the pipeline (spec 8): one or two images, FARE's zero loss, degradation heads,
slot-2 switch-on equivalence, the ridge restorer, reuse."""

import pytest
import torch

from icml26.robust_u1 import (
    KINDS,
    CorruptedFinetune,
    DegradationAwareReasoner,
    FeatureAlignment,
    GaussianFilter,
    GaussianRestorationPolicy,
    GeneralModel,
    MedianFilter,
    RecoveredOnly,
    RidgeRestorer,
    RobustU1,
    TinyRestorer,
    TinyVQA,
    VQAStream,
    answers_for,
    load_digits_images,
)
from icml26.robust_u1.data import CachedStream, clean_eval_items, corrupted_test_set, stratified_split

X, Y = load_digits_images()
X, Y = X[:120], Y[:120]


def _q(n, seed=0):
    return torch.randint(0, 11, (n,), generator=torch.Generator().manual_seed(seed))


def test_vqa_accepts_one_or_two_images_and_slot_two_starts_switched_off():
    torch.manual_seed(0)
    vqa = TinyVQA()
    q = _q(8)
    one = vqa([X[:8]], q)
    assert one.shape == (8, 12)
    torch.testing.assert_close(vqa([X[:8], X[8:16]], q), one)  # zero-initialised slot-2 weights
    torch.testing.assert_close(vqa(X[:8], q), one)  # a lone tensor is read as [tensor]
    with torch.no_grad():
        vqa.fuse.weight.normal_()
    assert not torch.allclose(vqa([X[:8], X[8:16]], q), vqa([X[:8]], q))
    with pytest.raises(ValueError, match="1..2 image tensors"):
        vqa([X[:8]] * 3, q)
    with pytest.raises(ValueError, match="question_ids must lie in"):
        vqa([X[:8]], q + 11)
    with pytest.raises(ValueError, match="one id per image"):
        vqa([X[:8]], q[:5])
    with pytest.raises(ValueError, match="share one shape"):
        vqa([X[:8], X[:4]], q)


def test_answers_and_questions():
    y = torch.tensor([3, 4, 9, 0])
    assert answers_for(y, torch.tensor([0, 0, 0, 0])).tolist() == [3, 4, 9, 0]
    assert answers_for(y, torch.tensor([1, 1, 1, 1])).tolist() == [11, 10, 11, 10]  # even? YES=10, NO=11
    assert answers_for(y, torch.tensor([5, 5, 10, 2])).tolist() == [11, 10, 10, 11]  # > 3, > 3, > 8, > 0
    with pytest.raises(ValueError, match="question_ids must lie"):
        answers_for(y, torch.tensor([0, 0, 0, 11]))


def test_splits_and_test_sets():
    tr, va, te = stratified_split(Y, (0.6, 0.2, 0.2), 0)
    assert len(set(tr) | set(va) | set(te)) == 120 and not set(tr) & set(te)
    items = corrupted_test_set(X[te], Y[te], 5, seed=1)
    assert len(items["x_c"]) == 10 * len(te) and items["kind"].max() == len(KINDS) - 1
    assert torch.equal(items["image"][:len(te)], torch.arange(len(te)))
    clean = clean_eval_items(X[te], Y[te], seed=1)
    assert len(clean["x"]) == 3 * len(te)
    assert sorted(set((clean["question"] >= 2).long().tolist() + (clean["question"] == 1).long().tolist())) == [0, 1]


def test_feature_alignment_loss_is_zero_at_start_on_clean_input():
    vqa = TinyVQA()
    fa = FeatureAlignment(vqa, "fare")
    fa.model_ = fa._fresh()
    assert float(fa.alignment_loss(X[:16], X[:16]).detach()) == 0.0
    assert float(fa.alignment_loss(X[:16] * 0.5, X[:16]).detach()) > 0
    with pytest.raises(ValueError, match="mode"):
        FeatureAlignment(vqa, "robust-llava")


def test_degradation_aware_heads_and_equivalence_at_start():
    torch.manual_seed(0)
    vqa = TinyVQA()
    da = DegradationAwareReasoner(vqa)
    kind, sev = da.degradation_logits(X[:5])
    assert kind.shape == (5, len(KINDS) + 1) and sev.shape == (5, 6)
    torch.testing.assert_close(da.logits(X[:5], _q(5)), vqa([X[:5]], _q(5)))  # extra inputs start at zero


def test_every_method_fits_on_the_same_stream_and_refits_from_scratch():
    torch.manual_seed(0)
    vqa = TinyVQA()
    before = {k: v.clone() for k, v in vqa.state_dict().items()}
    stream = VQAStream(X, Y, batch_size=32, seed=0)
    pol = GaussianRestorationPolicy(TinyRestorer())
    methods = [CorruptedFinetune(vqa), FeatureAlignment(vqa), FeatureAlignment(vqa, "tecoa"),
               DegradationAwareReasoner(vqa), RecoveredOnly(vqa, pol), GeneralModel(vqa)]
    for m in methods:
        m.fit(VQAStream(X, Y, batch_size=32, seed=0), epochs=1, lr=1e-3)
        assert m.predict(X[:7], _q(7)).shape == (7,)
    assert all(torch.equal(before[k], v) for k, v in vqa.state_dict().items())  # the pretrained model is kept
    cft = CorruptedFinetune(vqa).fit(VQAStream(X, Y, batch_size=32, seed=0), epochs=1)
    first = cft.predict(X[:30], _q(30))
    again = cft.fit(VQAStream(X, Y, batch_size=32, seed=0), epochs=1).predict(X[:30], _q(30))
    assert torch.equal(first, again)  # a second fit starts over from the pretrained model
    with pytest.raises(TypeError, match="stream"):
        CorruptedFinetune(vqa).fit([1, 2, 3])
    cached = CachedStream(stream, 1)
    list(cached)
    with pytest.raises(ValueError, match="rewind"):
        list(cached)


def test_robust_u1_pipeline_joint_inputs_and_precomputed_recovery():
    torch.manual_seed(0)
    pol = GaussianRestorationPolicy(TinyRestorer())
    model = RobustU1(pol, TinyVQA())
    q = _q(10)
    a = model.predict(X[:10], q)
    b = model.predict(X[:10], q, x_r=model.recover(X[:10]))
    assert torch.equal(a, b)
    with pytest.raises(ValueError, match="max_images"):
        RobustU1(pol, TinyVQA(max_images=1))
    with pytest.raises(ValueError, match="question_ids"):
        model.predict(X[:10], q[:3])


def test_classical_restorers():
    x = torch.zeros(1, 1, 9, 9)
    x[0, 0, 4, 4] = 1.0  # one impulse: the median removes it, a Gaussian spreads it keeping the mass
    assert float(MedianFilter(3)(x).abs().max()) == 0.0
    g = GaussianFilter(1.0)(x)
    assert float(g.sum()) == pytest.approx(1.0, abs=1e-5) and float(g.max()) < 0.2
    xc = (X + 0.2 * torch.randn(X.shape, generator=torch.Generator().manual_seed(0))).clamp(0, 1)
    rr = RidgeRestorer().fit(xc, X, lam=10.0)
    from icml26.robust_u1 import ssim

    assert float(ssim(rr(xc), X).mean()) > float(ssim(xc, X).mean()) + 0.1
    with pytest.raises(ValueError, match="not fitted"):
        RidgeRestorer()(X)
    with pytest.raises(ValueError, match="must be \\(N, 1, 24, 24\\)"):
        rr(torch.rand(2, 1, 12, 12))


def test_lists_and_float64_are_read_in_the_models_dtype_and_labels_are_range_checked():
    from icml26.robust_u1 import TinyEncoder, restore, train_encoder

    r = TinyRestorer()
    want = restore(r, X[:4])
    assert torch.equal(restore(r, X[:4].tolist()), want) and restore(r, X[:4].double()).dtype == torch.float32
    with pytest.raises(ValueError, match="labels"):
        VQAStream(X[:4], torch.tensor([0, 1, 2, 10]))  # 10 is the YES answer id, not a digit
    with pytest.raises(ValueError, match="labels"):
        VQAStream(X[:4], torch.tensor([0, 1, 2, -1]))
    with pytest.raises(ValueError, match="labels"):
        train_encoder(TinyEncoder(), X[:4], torch.tensor([0, 1, 2, 10]), epochs=1)


@pytest.mark.parametrize("mode", ["restored", "corrupted", "both"])
def test_init_slots_starts_from_the_one_image_model(mode):
    import copy

    from icml26.robust_u1 import TinyVQA

    torch.manual_seed(0)
    one = TinyVQA()
    with torch.no_grad():  # a "pretrained" one-image model: slot 1 trained, slot 2 at zero
        one.fuse.weight[:, :one.dim].normal_()
    x_c, x_r, q = torch.rand(5, 1, 24, 24), torch.rand(5, 1, 24, 24), torch.arange(5)
    two = copy.deepcopy(one).init_slots(mode)
    got = two([x_c, x_r], q)
    if mode == "restored":  # the general model answering from the restored image
        assert torch.allclose(got, one([x_r], q), atol=1e-6)
    elif mode == "corrupted":  # the restored-image path is blind
        assert torch.allclose(got, one([x_c], q), atol=1e-6)
    else:  # the mean of the two images' slot-1 features
        f = (one.encoder(x_c) + one.encoder(x_r)) / 2
        z = torch.zeros_like(f)
        ref = one.out(one.fuse(torch.cat([f, z, one.question(q)], 1)))
        assert torch.allclose(got, ref, atol=1e-5)
    with pytest.raises(ValueError, match="mode"):
        TinyVQA().init_slots("zero")
