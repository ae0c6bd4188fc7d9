"""The evaluation speed-ups are bit for bit the computations they replace (issue 34's 5-minute budget).

- inference (no graph) in `ConvFeatures` pools with two element-wise maxima before the ReLU, in place, and
  `TinyRestorer` applies its ReLUs in place: exactly the training path's values; with a graph both keep the
  old path (F.max_pool2d), and its gradients match;
- the experiment evaluates in batches of `EVAL_BATCH` (128): restorer outputs, VQA logits, embeddings and SSIM
  equal one call over the whole test set;
- `job_restorer_eval` scores the reward from the SSIM it already has and the clean references embedded once:
  equal to the composite reward `_reward(cfg, encoder)(y, ref)`.
"""

import torch
import torch.nn.functional as F

from icml26.robust_u1.corruptions import RandomCorruption
from icml26.robust_u1.experiment import CONFIGS, EVAL_BATCH, _chunked, _eval_reward, _reward
from icml26.robust_u1.metrics import ssim
from icml26.robust_u1.models import ConvFeatures, TinyEncoder, TinyRestorer, TinyVQA, _max_pool2_values
from icml26.robust_u1.rewards import EmbeddingSimilarityReward
from icml26.robust_u1.training import restore


def _old_features(f: ConvFeatures, x: torch.Tensor) -> torch.Tensor:  # the forward before the fast path
    h = F.max_pool2d(F.relu(f.c1(x)), 2)
    h = F.max_pool2d(F.relu(f.c2(h)), 2)
    return F.relu(f.fc(h.flatten(1)))


def _old_restorer(r: TinyRestorer, x: torch.Tensor) -> torch.Tensor:
    h = x
    for i, conv in enumerate(r.convs):
        h = conv(h)
        if i < len(r.convs) - 1:
            h = F.relu(h)
    return (x + h).clamp(0.0, 1.0)


def _images(n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 1, 24, 24, generator=g) ** 3  # mostly dark, like the digits: many ReLU / pooling ties
    x[: n // 4] = 0.0  # all-zero images: all-equal pooling windows
    return RandomCorruption(severities=(5,))(x, generator=g)[0], x


def test_inference_fast_paths_equal_the_training_path_bit_for_bit():
    torch.manual_seed(0)
    xc, _ = _images(72)  # a quarter all-zero images plus dark ones: ties in the ReLUs and pooling windows
    f, r = ConvFeatures(), TinyRestorer()
    with torch.no_grad():
        assert torch.equal(f(xc), _old_features(f, xc))
        assert torch.equal(r(xc), _old_restorer(r, xc))
    # with a graph: the same path as before, same values and gradients
    out = f(xc)
    out.square().sum().backward()
    g_new = [p.grad.clone() for p in f.parameters()]
    f.zero_grad()
    ref = _old_features(f, xc)
    ref.square().sum().backward()
    assert torch.equal(out, ref) and all(torch.equal(a, p.grad) for a, p in zip(g_new, f.parameters()))


def test_max_pool_values_equal_max_pool2d():
    g = torch.Generator().manual_seed(4)
    for shape in [(3, 4, 8, 8), (2, 3, 7, 9), (5, 2, 6, 5)]:  # even and odd sides (floor mode)
        h = torch.randint(-2, 3, shape, generator=g).float()  # many ties inside the windows, zeros and equal maxima
        out = _max_pool2_values(h)
        assert out.is_contiguous() and torch.equal(out, F.max_pool2d(h, 2))
        assert torch.equal(F.relu(out), F.max_pool2d(F.relu(h), 2))  # the inference path's pool-then-ReLU


def test_eval_batches_give_the_values_of_one_whole_batch():
    torch.manual_seed(1)
    xc, x = _images(2 * EVAL_BATCH + 37, seed=1)
    r, vqa, enc = TinyRestorer().eval(), TinyVQA().eval(), TinyEncoder().freeze()
    q = torch.randint(0, 11, (len(x),), generator=torch.Generator().manual_seed(2))
    y = restore(r, xc, EVAL_BATCH)
    assert torch.equal(y, restore(r, xc, 1024))
    with torch.no_grad():
        assert torch.equal(_chunked(lambda a, b: vqa([a], b), y, q), vqa([y], q))
        assert torch.equal(vqa.predict([y], q, EVAL_BATCH), vqa.predict([y], q))
        assert torch.equal(_chunked(enc.embed, y), enc.embed(y))
    assert torch.equal(_chunked(ssim, y, x), ssim(y, x))


def test_eval_reward_equals_the_composite_reward():
    cfg = CONFIGS["small"]
    xc, x = _images(EVAL_BATCH + 50, seed=3)
    enc = TinyEncoder().freeze()
    y = restore(TinyRestorer(), xc)
    sim = EmbeddingSimilarityReward(enc, alpha=cfg["clip_alpha"])
    ref_emb = _chunked(sim._embed, x)
    total, clip = _eval_reward(cfg, sim, _chunked(ssim, y, x), y, ref_emb)
    want, parts = _reward(cfg, enc)(y, x)
    assert torch.equal(total, want) and torch.equal(clip, parts["clip"])
