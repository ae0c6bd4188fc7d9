"""torchrun set-up shared by every paper-scale path: one process per GPU (nccl) or per CPU worker (gloo).

Launch a paper-scale script with `torchrun --nproc_per_node N script.py ...`; inside it:

    from icml26.common import distributed as D

    env = D.init_distributed()               # reads RANK/LOCAL_RANK/WORLD_SIZE; nccl on GPU, gloo on CPU
    model = D.wrap_ddp(model.to(env.device), env)
    ...
    D.log(env, f"step {step} loss {D.mean_reduce(loss.item()):.4f}")   # printed by rank 0 only
    D.save_on_main(env, lambda: torch.save(model.state_dict(), path))
    D.shutdown()

Run without torchrun (no WORLD_SIZE in the environment), the same code is a plain single process: `wrap_ddp`
returns the model unchanged, reductions are identities and rank 0 does everything. `launch_local` starts a
CPU gloo job of a few processes through torchrun, for tests and for trying a scale-out script on a laptop.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import torch
import torch.distributed as dist

__all__ = ["DistEnv", "init_distributed", "shutdown", "wrap_ddp", "unwrap", "log", "save_on_main",
           "mean_reduce", "barrier", "broadcast_object", "shard", "launch_local"]

T = TypeVar("T")


@dataclass(frozen=True)
class DistEnv:
    """Where this process sits in a torchrun job. `world_size == 1` means a plain single process."""

    rank: int = 0
    local_rank: int = 0
    world_size: int = 1
    device: torch.device = torch.device("cpu")
    backend: str | None = None  # "nccl" / "gloo" once a process group exists, else None

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def is_distributed(self) -> bool:
        return self.world_size > 1


def _env_int(key: str, default: int) -> int:
    raw = os.environ.get(key)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"environment variable {key} must be an integer, got {raw!r}") from None


def init_distributed(backend: str | None = None, *, device: str | torch.device | None = None) -> DistEnv:
    """Join the torchrun job described by the environment (idempotent).

    Args:
        backend: "nccl" or "gloo"; default nccl when CUDA is available, gloo otherwise.
        device: override the device; default `cuda:LOCAL_RANK` with CUDA, else CPU.
    Returns:
        The `DistEnv` of this process. Without WORLD_SIZE (or with WORLD_SIZE=1) no process group is created.
    """
    world = _env_int("WORLD_SIZE", 1)
    rank = _env_int("RANK", 0)
    local = _env_int("LOCAL_RANK", 0)
    if world < 1 or not 0 <= rank < world:
        raise ValueError(f"inconsistent torchrun environment: RANK={rank}, WORLD_SIZE={world}")
    cuda = torch.cuda.is_available()
    if backend is None:
        backend = "nccl" if cuda else "gloo"
    if backend not in ("nccl", "gloo"):
        raise ValueError(f"backend must be 'nccl' or 'gloo', got {backend!r}")
    if backend == "nccl" and not cuda:
        raise ValueError("backend 'nccl' needs CUDA; use 'gloo' on CPU")
    if device is None:
        device = torch.device(f"cuda:{local}") if cuda else torch.device("cpu")
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    if world > 1 and not dist.is_initialized():
        dist.init_process_group(backend=backend, rank=rank, world_size=world)
    active = dist.get_backend() if dist.is_initialized() else None
    return DistEnv(rank=rank, local_rank=local, world_size=world, device=device, backend=active)


def shutdown() -> None:
    """Destroy the process group if one exists (safe to call in a single process)."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def wrap_ddp(model: torch.nn.Module, env: DistEnv, **ddp_kwargs: Any) -> torch.nn.Module:
    """`DistributedDataParallel(model)` in a multi-process job, the model itself otherwise."""
    if not env.is_distributed:
        return model
    from torch.nn.parallel import DistributedDataParallel as DDP

    ids = [env.device.index] if env.device.type == "cuda" else None
    return DDP(model, device_ids=ids, **ddp_kwargs)


def unwrap(model: torch.nn.Module) -> torch.nn.Module:
    """The module inside a DDP/FSDP wrapper (for saving a state_dict without the `module.` prefix)."""
    return getattr(model, "module", model)


def log(env: DistEnv, *args: Any, **kwargs: Any) -> None:
    """`print` on rank 0 only (flushed, so torchrun's interleaved output stays readable)."""
    if env.is_main:
        print(*args, flush=True, **kwargs)


def save_on_main(env: DistEnv, fn: Callable[[], T]) -> T | None:
    """Call `fn()` (a save) on rank 0 only, then wait for it on every rank; returns fn's value on rank 0."""
    out = fn() if env.is_main else None
    barrier()
    return out


def barrier() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.barrier()


def mean_reduce(value: Any) -> Any:
    """Mean over ranks of a float, a tensor, or a dict of them (identity in a single process)."""
    if isinstance(value, dict):
        return {k: mean_reduce(v) for k, v in value.items()}
    if not (dist.is_available() and dist.is_initialized()):
        return value
    world = dist.get_world_size()
    if isinstance(value, torch.Tensor):
        t = value.detach().clone().to(torch.float64 if value.device.type == "cpu" else value.dtype)
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        return (t / world).to(value.dtype)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        dev = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else "cpu"
        t = torch.tensor(float(value), dtype=torch.float64, device=dev)
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        return float(t.item()) / world
    raise TypeError(f"mean_reduce takes a number, a tensor or a dict of them, got {type(value).__name__}")


def broadcast_object(obj: T, src: int = 0) -> T:
    """`obj` from rank `src` on every rank (identity in a single process)."""
    if not (dist.is_available() and dist.is_initialized()):
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=src)
    return box[0]


def shard(items: Sequence[T], env: DistEnv) -> list[T]:
    """This rank's share of `items` (round-robin: items[rank::world_size])."""
    return list(items[env.rank::env.world_size])


def launch_local(script: str | os.PathLike, args: Sequence[str] = (), *, nproc: int = 2, timeout: float = 300,
                 env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run `torchrun --standalone --nproc_per_node nproc script args...` on this machine (CPU, gloo).

    Each worker gets one thread (OMP_NUM_THREADS=1). Output is captured; a non-zero exit raises
    `subprocess.CalledProcessError` with torchrun's output attached (`e.output`).
    """
    if not isinstance(nproc, int) or isinstance(nproc, bool) or nproc < 1:
        raise ValueError(f"nproc must be a positive int, got {nproc!r}")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
           str(script), *map(str, args)]
    full_env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": "", **(env or {})}
    proc = subprocess.run(cmd, env=full_env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, cmd, output=proc.stdout + proc.stderr)
    return proc
