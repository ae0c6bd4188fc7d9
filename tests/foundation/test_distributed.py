"""icml26.common.distributed: single-process fallbacks, and a real 2-process gloo DDP job under torchrun."""

from pathlib import Path

import pytest
import torch

from icml26.common import distributed as D

SCRIPT = Path(__file__).with_name("ddp_tinylm.py")


def test_single_process_fallbacks(monkeypatch):
    for k in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        monkeypatch.delenv(k, raising=False)
    env = D.init_distributed()
    assert (env.rank, env.world_size, env.is_main, env.is_distributed, env.backend) == (0, 1, True, False, None)
    model = torch.nn.Linear(2, 2)
    assert D.wrap_ddp(model, env) is model and D.unwrap(model) is model
    assert D.mean_reduce({"a": 1.5, "b": torch.tensor([2.0])})["a"] == 1.5
    assert D.shard(list(range(5)), D.DistEnv(rank=1, world_size=2)) == [1, 3]
    assert D.save_on_main(env, lambda: 7) == 7


def test_bad_environment_is_named(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "two")
    with pytest.raises(ValueError, match="WORLD_SIZE"):
        D.init_distributed()
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "5")
    with pytest.raises(ValueError, match="RANK=5"):
        D.init_distributed()
    monkeypatch.delenv("RANK")
    monkeypatch.setenv("WORLD_SIZE", "1")
    with pytest.raises(ValueError, match="backend"):
        D.init_distributed("mpi")
    with pytest.raises(ValueError, match="nproc"):
        D.launch_local(SCRIPT, nproc=0)


def test_two_gloo_ranks_match_each_other_and_one_process(tmp_path):
    """2 ranks on half-batches end bit-equal to each other and equal (fp tolerance) to 1 process on full batches."""
    proc = D.launch_local(SCRIPT, [tmp_path, "ddp"], nproc=2, timeout=240)
    assert proc.stdout.count("loss ") == 4  # rank-0-only logging: 4 steps, printed once each
    D.launch_local(SCRIPT, [tmp_path, "single"], nproc=1, timeout=240)
    r0, r1 = (torch.load(tmp_path / f"ddp_rank{r}.pt") for r in (0, 1))
    ddp, single = torch.load(tmp_path / "ddp.pt"), torch.load(tmp_path / "single.pt")
    assert r0.keys() == r1.keys() == single.keys()
    for k in r0:
        assert torch.equal(r0[k], r1[k]), k
        assert torch.equal(r0[k], ddp[k]), k
        torch.testing.assert_close(ddp[k], single[k], rtol=1e-5, atol=1e-6)
    torch.manual_seed(0)
    from icml26.common.lm import TinyLM, TinyLMConfig

    init = TinyLM(TinyLMConfig(vocab_size=64, d_model=32, n_layers=2, n_heads=2, ctx=16)).state_dict()
    assert any(not torch.allclose(init[k], single[k]) for k in init)
