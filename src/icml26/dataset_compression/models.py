"""Networks of the reproduction: the small ConvNet student (also teacher and scorer), DM's random embedding, and a
plain ResNet-18 for the paper-scale path (no torchvision needed).

`make_model(factory, seed)` builds any factory's module under a fixed torch seed without touching the global RNG,
so every scorer, distiller and evaluator here is deterministic given its seed.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

from icml26.common.validation import check_int, check_seed

ModelFactory = Callable[[], nn.Module]


class _Pool2(torch.autograd.Function):
    """`F.avg_pool2d(x, 2)` for even H, W, bit for bit, ~2-3x faster on small CPU batches (the students' hot spot).

    Forward sums the four pixels in the CPU kernel's order ((x00 + x01) + x10) + x11, then / 4; backward gives
    every input pixel its window's grad / 4, as the kernel does (each pixel is in exactly one window).
    """

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        ctx.hw = tuple(x.shape[2:])
        return _pool2_sum(x)

    @staticmethod
    def backward(ctx, g: torch.Tensor) -> torch.Tensor:
        # g / 4 written into the four pixels of each window by four strided copies (~8 % faster per student than
        # two index_selects, the same values)
        H, W = ctx.hw
        B, C, h, w = g.shape
        g4 = g / 4
        out = torch.empty(B, C, h, 2, w, 2, dtype=g.dtype, device=g.device)
        out[:, :, :, 0, :, 0] = g4
        out[:, :, :, 0, :, 1] = g4
        out[:, :, :, 1, :, 0] = g4
        out[:, :, :, 1, :, 1] = g4
        return out.view(B, C, H, W)


def _pool2_sum(x: torch.Tensor) -> torch.Tensor:
    """((x00 + x01) + x10) + x11, then / 4, accumulated in place in the first sum's (contiguous) output: the same
    operations in the same order as the out-of-place expression, without three temporaries."""
    B, C, H, W = x.shape
    v = x.reshape(B, C, H // 2, 2, W // 2, 2)
    out = v[:, :, :, 0, :, 0] + v[:, :, :, 0, :, 1]
    out += v[:, :, :, 1, :, 0]
    out += v[:, :, :, 1, :, 1]
    return out.div_(4)


def _pool2(x: torch.Tensor) -> torch.Tensor:
    if x.device.type == "cpu" and x.shape[-1] % 2 == 0 and x.shape[-2] % 2 == 0:
        if x.requires_grad and torch.is_grad_enabled():
            return _Pool2.apply(x)
        return _pool2_sum(x)  # no graph to record (teacher forward, evaluation)
    return F.avg_pool2d(x, 2)


class ConvNet(nn.Module):
    """conv3x3(in -> w1)-ReLU-avgpool2 -> conv3x3(w1 -> w2)-ReLU-avgpool2 -> linear(w2 * (R/4)^2 -> classes).

    Spec section 6 with the review notes' widths 16 -> 32 (default; the spec's 32 -> 64 with `widths=(32, 64)`).

    Args:
        in_channels: image channels C (1 for digits).
        num_classes: output logits.
        image_size: input side R in pixels; must be divisible by 4 (two 2x2 poolings).
        widths: channels of the two conv layers.
    Input (B, C, R, R) float; output (B, num_classes) logits. `features(x)` is the penultimate (B, w2 * (R/4)^2)
    representation (herding uses it).
    """

    def __init__(self, in_channels: int = 1, num_classes: int = 10, image_size: int = 16,
                 widths: tuple[int, int] = (16, 32)) -> None:
        super().__init__()
        in_channels = check_int(in_channels, "in_channels", min=1)
        num_classes = check_int(num_classes, "num_classes", min=2)
        image_size = check_int(image_size, "image_size", min=4)
        if image_size % 4:
            raise ValueError(f"image_size must be divisible by 4 (two 2x2 poolings), got {image_size}")
        if not isinstance(widths, (tuple, list)) or len(widths) != 2:
            raise TypeError(f"widths must be a pair of ints, got {widths!r}")
        w1, w2 = (check_int(w, f"widths[{i}]", min=1) for i, w in enumerate(widths))
        self.image_size, self.in_channels, self.num_classes = image_size, in_channels, num_classes
        self.conv1 = nn.Conv2d(in_channels, w1, 3, padding=1)
        self.conv2 = nn.Conv2d(w1, w2, 3, padding=1)
        self.fc = nn.Linear(w2 * (image_size // 4) ** 2, num_classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        x = _pool2(F.relu(self.conv1(x)))
        x = _pool2(F.relu(self.conv2(x)))
        return x.flatten(1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.features(x))


def convnet_factory(in_channels: int = 1, num_classes: int = 10, image_size: int = 16,
                    widths: tuple[int, int] = (16, 32)) -> ModelFactory:
    """A picklable zero-argument factory of `ConvNet(in_channels, num_classes, image_size, widths)`."""
    ConvNet(in_channels, num_classes, image_size, widths)  # validate now, not at the first call
    return _Factory(ConvNet, dict(in_channels=in_channels, num_classes=num_classes, image_size=image_size,
                                  widths=tuple(widths)))


class MLPEmbedding(nn.Module):
    """DM's random embedding (spec 6): flatten -> [Linear(width) -> ReLU] x depth. (B, C, H, W) -> (B, width)."""

    def __init__(self, in_features: int, width: int = 128, depth: int = 2) -> None:
        super().__init__()
        in_features = check_int(in_features, "in_features", min=1)
        width = check_int(width, "width", min=1)
        depth = check_int(depth, "depth", min=1)
        layers: list[nn.Module] = []
        for i in range(depth):
            layers += [nn.Linear(in_features if i == 0 else width, width), nn.ReLU()]
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x.flatten(1))


def mlp_embedding_factory(in_features: int, width: int = 128, depth: int = 2) -> ModelFactory:
    """A picklable factory of `MLPEmbedding(in_features, width, depth)` (spec 6's DM embedding: 2 layers of 128)."""
    MLPEmbedding(in_features, width, depth)
    return _Factory(MLPEmbedding, dict(in_features=in_features, width=width, depth=depth))


class _Factory:
    """cls(**kwargs) as a picklable callable (lambdas cannot cross `run_parallel`'s process boundary)."""

    def __init__(self, cls: type, kwargs: dict) -> None:
        self.cls, self.kwargs = cls, kwargs

    def __call__(self) -> nn.Module:
        return self.cls(**self.kwargs)

    def __repr__(self) -> str:
        return f"{self.cls.__name__}({', '.join(f'{k}={v!r}' for k, v in self.kwargs.items())})"


def make_model(factory: ModelFactory, seed: int) -> nn.Module:
    """`factory()` under `torch.manual_seed(seed)`, leaving the global torch RNG as it was."""
    if not callable(factory):
        raise TypeError(f"model_factory must be a zero-argument callable returning an nn.Module, got "
                        f"{type(factory).__name__}")
    seed = check_seed(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = factory()
    if not isinstance(model, nn.Module):
        raise TypeError(f"model_factory must return an nn.Module, got {type(model).__name__}")
    return model


# ------------------------------------------------------------------------------ ResNet-18 (paper scale)
class _BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + (x if self.down is None else self.down(x)))


class ResNet(nn.Module):
    """The ImageNet ResNet of He et al. (2016) with basic blocks: stem 7x7/2 + maxpool, four stages, global pool.

    `ResNet((2, 2, 2, 2))` is ResNet-18 (the benchmark's student); `width` scales every stage (64 by default;
    tests use 4). Input (B, C, H, W) with H, W >= 32; output (B, num_classes).
    """

    def __init__(self, blocks: tuple[int, ...] = (2, 2, 2, 2), num_classes: int = 1000, in_channels: int = 3,
                 width: int = 64) -> None:
        super().__init__()
        num_classes = check_int(num_classes, "num_classes", min=2)
        width = check_int(width, "width", min=1)
        self.stem = nn.Sequential(nn.Conv2d(check_int(in_channels, "in_channels", min=1), width, 7, 2, 3, bias=False),
                                  nn.BatchNorm2d(width), nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        stages, cin = [], width
        for i, n in enumerate(blocks):
            cout = width * 2 ** i
            for j in range(check_int(n, f"blocks[{i}]", min=1)):
                stages.append(_BasicBlock(cin, cout, 2 if (j == 0 and i > 0) else 1))
                cin = cout
        self.stages = nn.Sequential(*stages)
        self.fc = nn.Linear(cin, num_classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return torch.flatten(F.adaptive_avg_pool2d(self.stages(self.stem(x)), 1), 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.features(x))


def build_model(name: str, num_classes: int, in_channels: int = 3, image_size: int = 224) -> nn.Module:
    """A student by name: "convnet", "resnet18", "resnet18-tiny" (width 4, for tests), or "timm:<name>" /
    "torchvision:<name>" when that package is installed (e.g. "timm:resnet50", "timm:mobilenetv2_100")."""
    if not isinstance(name, str):
        raise TypeError(f"model must be a string, got {type(name).__name__}")
    if name == "convnet":
        return ConvNet(in_channels, num_classes, image_size)
    if name == "resnet18":
        return ResNet((2, 2, 2, 2), num_classes, in_channels)
    if name == "resnet18-tiny":
        return ResNet((2, 2, 2, 2), num_classes, in_channels, width=4)
    if name.startswith("timm:"):
        try:
            import timm
        except ImportError:
            raise ValueError(f"model {name!r} needs the optional package timm (pip install timm)") from None
        return timm.create_model(name[5:], pretrained=False, num_classes=num_classes, in_chans=in_channels)
    if name.startswith("torchvision:"):
        try:
            import torchvision
        except ImportError:
            raise ValueError(f"model {name!r} needs the optional package torchvision") from None
        return torchvision.models.get_model(name[12:], weights=None, num_classes=num_classes)
    raise ValueError(f"model must be 'convnet', 'resnet18', 'resnet18-tiny', 'timm:<name>' or "
                     f"'torchvision:<name>', got {name!r}")


__all__ = ["ConvNet", "convnet_factory", "MLPEmbedding", "mlp_embedding_factory", "make_model", "ResNet",
           "build_model", "ModelFactory"]
