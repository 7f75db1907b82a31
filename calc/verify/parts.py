"""The pieces every part of the reference model uses: component tags, norms, linears,
activations, positions, the causal convolution and the counted state arithmetic of scans.

Every module carries the component key its parameters and FLOPs belong to (`attention/q`,
`mlp/up`, `mamba/scan`, ...: the keys of calc.formulas). A scan's multiplies and adds on its
state are not matrix products, so FlopCounterMode does not see them; they run inside
`state_arithmetic(component)`, where calc.verify.count's StateCounter counts every element
a multiply, add or subtract produces (calc.formulas.mixers states the convention).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from calc.spec.model import NormSpec


def _relu2(x: Tensor) -> Tensor:
    return F.relu(x).square()


ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu, "silu": F.silu, "relu2": _relu2,
               "swiglu": F.silu, "geglu": F.gelu, "reglu": F.relu, "relu2glu": _relu2}


class XIELU(nn.Module):
    """xIELU (Huang & Schlag 2024, arXiv:2411.13010) with its two learned scalars α_p, α_n and
    the fixed β = 0.5 (as transformers' XIELUActivation); elementwise, so no FLOPs counted."""

    def __init__(self, component: str):
        super().__init__()
        self.alpha_p = nn.Parameter(torch.full((1,), 0.8))
        self.alpha_n = nn.Parameter(torch.full((1,), 0.3))
        tag(self, component)

    def forward(self, x: Tensor) -> Tensor:
        alpha_p, alpha_n = F.softplus(self.alpha_p), 0.5 + F.softplus(self.alpha_n)
        negative = (torch.expm1(torch.clamp(x, max=-1e-6)) - x) * alpha_n
        return torch.where(x > 0, alpha_p * x * x, negative) + 0.5 * x


def activation(name: str, component: str):
    """The activation function, or the module of one with learned parameters (xIELU)."""
    return XIELU(component) if name == "xielu" else ACTIVATIONS[name]


def tag(module: nn.Module, component: str) -> nn.Module:
    """Mark `module` (and what it owns) as part of `component`."""
    module.component = component  # type: ignore[assignment]
    return module


def scales(component: str, **widths: int) -> nn.Module:
    """Learned scale vectors of the given widths (nGPT's, Dory's), tagged `component`: their
    products with activations are elementwise (0 FLOPs), so they are held, not applied."""
    return tag(nn.ParameterDict({name: nn.Parameter(torch.ones(width))
                                 for name, width in widths.items()}), component)


def make_norm(norm: NormSpec, width: int, component: str) -> nn.Module:
    """The spec's norm kind; without weights (OLMo 1) it has no parameters at all."""
    if norm.kind == "rmsnorm":
        return tag(nn.RMSNorm(width, elementwise_affine=norm.weights), component)
    return tag(nn.LayerNorm(width, elementwise_affine=norm.weights, bias=norm.has_bias),
               component)


def rms_norm(width: int, component: str, weights: bool = True) -> nn.Module:
    """An RMSNorm whatever the model's norm kind (Mamba-2's and DeltaNet's gated norms)."""
    return tag(nn.RMSNorm(width, elementwise_affine=weights), component)


def linear(n_in: int, n_out: int, bias: bool, component: str) -> nn.Module:
    return tag(nn.Linear(n_in, n_out, bias=bias), component)


# ---- positions ------------------------------------------------------------------------------
def rope(x: Tensor, positions: Tensor) -> Tensor:
    """Rotary embedding on the last dimension (its largest even prefix); elementwise only."""
    width = x.shape[-1] // 2 * 2
    if width == 0:
        return x
    half = width // 2
    inv_freq = 1.0 / (10000 ** (torch.arange(half, device=x.device, dtype=x.dtype) / half))
    angles = positions[:, None].to(x.dtype) * inv_freq[None, :]  # [T, half]
    cos, sin = angles.cos(), angles.sin()
    a, b, rest = x[..., :half], x[..., half:width], x[..., width:]
    return torch.cat((a * cos - b * sin, a * sin + b * cos, rest), dim=-1)


def sinusoids(length: int, width: int, device: torch.device, dtype: torch.dtype) -> Tensor:
    """Vaswani et al. 2017 §3.5: PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos."""
    position = torch.arange(length, device=device, dtype=dtype)[:, None]
    rate = torch.exp(torch.arange(0, width, 2, device=device, dtype=dtype)
                     * (-math.log(10000.0) / width))
    table = torch.zeros(length, width, device=device, dtype=dtype)
    table[:, 0::2] = torch.sin(position * rate)
    table[:, 1::2] = torch.cos(position * rate)[:, : width // 2]
    return table


def alibi_slopes(n_heads: int, device: torch.device, dtype: torch.dtype) -> Tensor:
    """Press et al. 2022: geometric slopes 2^(-8i/n) for n a power of two (interleaved else)."""
    def powers(n: int) -> list[float]:
        start = 2 ** (-8 / n)
        return [start ** (i + 1) for i in range(n)]

    closest = 2 ** math.floor(math.log2(n_heads))
    slopes = powers(closest) + powers(2 * closest)[0::2][: n_heads - closest]
    return torch.tensor(slopes, device=device, dtype=dtype)


# ---- convolutions and scans -----------------------------------------------------------------
class CausalConv(nn.Module):
    """A causal depthwise conv1d over [B, T, C]: pad k − 1 steps on the left, T outputs (so
    FlopCounterMode counts 2·k per channel per token: calc's convolution convention)."""

    def __init__(self, channels: int, kernel: int, bias: bool, component: str):
        super().__init__()
        tag(self, component)
        self.kernel = kernel
        self.conv = nn.Conv1d(channels, channels, kernel, groups=channels, bias=bias)

    def forward(self, x: Tensor) -> Tensor:
        padded = F.pad(x.transpose(1, 2), (self.kernel - 1, 0))
        return self.conv(padded).transpose(1, 2)


_REGIONS: list[str] = []  # the component whose state arithmetic is running (innermost last)


@contextmanager
def state_arithmetic(component: str) -> Iterator[None]:
    """Mark the multiplies and adds on a scan's state, for calc.verify.count to count."""
    _REGIONS.append(component)
    try:
        yield
    finally:
        _REGIONS.pop()


def state_region() -> str | None:
    return _REGIONS[-1] if _REGIONS else None
