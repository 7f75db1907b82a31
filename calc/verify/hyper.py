"""Hyper-connections in the reference model (Zhu et al. 2024, arXiv 2409.19606): the residual
stream as n streams of width d [B, T, n, d], a map before each sublayer and a head map.

A map reads a token's n·d values (normed without a weight), and one product with its weight
gives the logits of its outputs: n `pre` weights that sum the streams into the sublayer's
input, n `post` weights that spread the sublayer's output over them, and with residual_mix
(DeepSeek-V4's mHC) an n × n matrix that mixes the streams, applied as a matmul. Summing by
pre and spreading by post are broadcast products, which FlopCounterMode does not count (as
transformers' HYV4HyperConnection and DeepseekV4HyperConnection compute them); the mHC matrix
is Sinkhorn-normalised there, an element-wise loop left out here as it changes no count.

The gated low-rank form (hyper_connections.gate_rank; Qwen4ExpTextGatedResidual) norms the
streams group-wise with a γ, gates each normed element by σ(up(SiLU(down(y) / n))), takes the
gated streams' mean as the sublayer's input and spreads its output by 2σ(inject(y) / n); its
head map is the same without inject.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from calc.spec import ModelSpec
from calc.verify.parts import tag


def _normed(flat: Tensor) -> Tensor:
    """An RMS norm without a weight over the n·d values (HYV4UnweightedRMSNorm)."""
    return flat * torch.rsqrt(flat.square().mean(-1, keepdim=True) + 1e-6)


class GatedMap(nn.Module):
    """A gated map (Qwen4ExpTextGatedResidual): the grouped norm's γ (n·d), down n·d → r,
    up r → n·d and, on the layers' maps, inject n·d → n, none with a bias."""

    def __init__(self, spec: ModelSpec, rank: int, inject: bool):
        super().__init__()
        hc = spec.hyper_connections
        assert hc is not None
        n, d = hc.streams, spec.d_model
        self.n = n
        self.gamma = nn.Parameter(torch.ones(n, d))
        self.down = nn.Linear(n * d, rank, bias=False)
        self.up = nn.Linear(rank, n * d, bias=False)
        self.inject = nn.Linear(n * d, n, bias=False) if inject else None

    def forward(self, streams: Tensor) -> tuple[Tensor | None, Tensor]:
        """(post [B, T, n] or None, the sublayer's input [B, T, d])."""
        y = streams * torch.rsqrt(streams.square().mean(-1, keepdim=True) + 1e-6) * self.gamma
        flat = y.flatten(2)
        gate = torch.sigmoid(self.up(F.silu(self.down(flat) / self.n)))
        mixed = (gate.view_as(y) * y).mean(2)
        post = None if self.inject is None else 2 * torch.sigmoid(self.inject(flat) / self.n)
        return post, mixed


class HyperConnection(nn.Module):
    """One map: its dynamic weight (outputs × n·d), static bias (one per output) and a scale
    per output group (pre, post, and the mix)."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        tag(self, "hyper_connections/layers")
        hc = spec.hyper_connections
        assert hc is not None
        n, d = hc.streams, spec.d_model
        self.n, self.mix = n, hc.residual_mix
        self.gated = GatedMap(spec, hc.gate_rank, True) if hc.gate_rank else None
        if self.gated is not None:
            return
        outputs = 2 * n + (n * n if hc.residual_mix else 0)
        self.weight = nn.Parameter(torch.empty(outputs, n * d).normal_(0, (n * d) ** -0.5))
        self.bias = nn.Parameter(torch.zeros(outputs))
        self.scale = nn.Parameter(torch.full((2 + int(hc.residual_mix),), 0.01))

    def forward(self, streams: Tensor) -> tuple[Tensor, Tensor | None, Tensor]:
        """(post [B, T, n], the mix [B, T, n, n] or None, the sublayer's input [B, T, d])."""
        if self.gated is not None:
            post, mixed = self.gated(streams)
            assert post is not None
            return post, None, mixed
        n = self.n
        logits = F.linear(_normed(streams.flatten(2)), self.weight) + self.bias
        pre = torch.sigmoid(logits[..., :n] * self.scale[0])
        post = 2 * torch.sigmoid(logits[..., n: 2 * n] * self.scale[1])
        mix = None
        if self.mix:
            mix = torch.softmax(logits[..., 2 * n:].unflatten(-1, (n, n)) * self.scale[2], -1)
        return post, mix, (pre.unsqueeze(-1) * streams).sum(2)


class Spread(nn.Module):
    """The streams after a sublayer: its output spread by post, plus the streams (mixed by the
    mHC matrix's transpose, as DeepseekV4DecoderLayer does). A module of its own, tagged as
    the maps are, so that FlopCounterMode credits mHC's matmul to them."""

    def __init__(self) -> None:
        super().__init__()
        tag(self, "hyper_connections/layers")

    def forward(self, post: Tensor, mix: Tensor | None, output: Tensor,
                streams: Tensor) -> Tensor:
        carried = streams if mix is None else torch.matmul(mix.transpose(-1, -2), streams)
        return post.unsqueeze(-1) * output.unsqueeze(-2) + carried


class HyperHead(nn.Module):
    """The head map: n weights from the n·d values collapse the streams into one."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        tag(self, "hyper_connections/head")
        hc = spec.hyper_connections
        assert hc is not None
        n, d = hc.streams, spec.d_model
        self.gated = GatedMap(spec, hc.gate_rank, False) if hc.gate_rank else None
        if self.gated is not None:
            return
        self.weight = nn.Parameter(torch.empty(n, n * d).normal_(0, (n * d) ** -0.5))
        self.bias = nn.Parameter(torch.zeros(n))
        self.scale = nn.Parameter(torch.full((1,), 0.01))

    def forward(self, streams: Tensor) -> Tensor:
        if self.gated is not None:
            return self.gated(streams)[1]
        pre = torch.sigmoid(F.linear(_normed(streams.flatten(2)), self.weight) * self.scale
                            + self.bias)
        return (pre.unsqueeze(-1) * streams).sum(2)
