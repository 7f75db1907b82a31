"""DeepSeek-V4's compressed attention in the reference model (calc.spec.attention.
CompressionSpec; transformers 5.24.0 modeling_deepseek_v4.py, DeepseekV4CSACompressor,
DeepseekV4HCACompressor, DeepseekV4Indexer).

A compressor projects every token to a key and a gate (kv_proj, gate_proj) and pools each
window of `rate` tokens into one entry by a softmax of the gates plus a learned bias per slot
(position_bias) over the window, then an RMSNorm with γ: the pooling is elementwise, so only
the two projections are matrix products (tagged attention/compressor, or attention/indexer for
the CSA indexer's own). A CSA compressor's windows overlap: an entry pools its window's second
half-width series with the previous window's first (2·rate slots of width, both projected at
2·width). Only whole windows make entries, ⌊T/rate⌋ of them, and query i (0-based) sees the
entries before ⌊(i + 1)/rate⌋ (the causal_threshold of the modeling file).

The CSA indexer's scores and the attention over the entries run in the attention module
(calc.verify.attention), tagged attention/scores, as calc.formulas.flops counts them.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from calc.verify.parts import linear, rms_norm, tag


class SlotBias(nn.Module):
    """position_bias: a learned value per window slot and channel, added to the gates."""

    def __init__(self, rate: int, width: int):
        super().__init__()
        self.values = nn.Parameter(torch.zeros(rate, width))


class Compressor(nn.Module):
    """kv_proj and gate_proj d → c·width (c = 2 where windows overlap, CSA), position_bias
    rate × c·width, kv_norm an RMSNorm(width) with γ; entries [B, ⌊T/rate⌋, width]."""

    def __init__(self, d: int, width: int, rate: int, overlap: bool, component: str):
        super().__init__()
        tag(self, component)
        self.width, self.rate, self.overlap = width, rate, overlap
        wide = width * (2 if overlap else 1)
        self.kv = linear(d, wide, False, component)
        self.gate = linear(d, wide, False, component)
        self.bias = tag(SlotBias(rate, wide), component)
        self.norm = rms_norm(width, component)

    def forward(self, x: Tensor) -> Tensor:
        b, t, _ = x.shape
        kv, gate = self.kv(x), self.gate(x)
        n, m, w = t // self.rate, self.rate, self.width
        if n == 0:  # no whole window yet: no entry (the projections are still made)
            return kv.new_zeros(b, 0, w)
        wide = kv.shape[-1]
        kv = kv[:, : n * m].reshape(b, n, m, wide)
        gate = gate[:, : n * m].reshape(b, n, m, wide) + self.bias.values
        if self.overlap:  # the previous window's first series beside this window's second
            before_kv = torch.cat((kv.new_zeros(b, 1, m, w), kv[:, :-1, :, :w]), dim=1)
            hidden = gate.new_full((b, 1, m, w), float("-inf"))
            before_gate = torch.cat((hidden, gate[:, :-1, :, :w]), dim=1)
            kv = torch.cat((before_kv, kv[..., w:]), dim=2)  # [B, n, 2·rate, width]
            gate = torch.cat((before_gate, gate[..., w:]), dim=2)
        return self.norm((kv * gate.softmax(dim=2)).sum(dim=2))


class CompressedIndexer(nn.Module):
    """The CSA layer's lightning indexer: its own overlapping compressor at d_I, q_b_proj
    r_q → h_I·d_I from the attention's query latent, weights_proj d → h_I (tagged
    attention/indexer)."""

    def __init__(self, d: int, q_rank: int, heads: int, width: int, topk: int, rate: int):
        super().__init__()
        tag(self, "attention/indexer")
        self.heads, self.width, self.topk, self.rate = heads, width, topk, rate
        self.compressor = Compressor(d, width, rate, True, "attention/indexer")
        self.q = linear(q_rank, heads * width, False, "attention/indexer")
        self.weights = linear(d, heads, False, "attention/indexer")

    def forward(self, x: Tensor, latent: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Queries [B, h_I, T, d_I], entries [B, 1, n, d_I], head weights [B, T, 1, h_I]."""
        b, t, _ = x.shape
        q = self.q(latent).view(b, t, self.heads, self.width).transpose(1, 2)
        weights = self.weights(x) * self.heads**-0.5
        return q, self.compressor(x)[:, None], weights[:, :, None]


def visible(t: int, n: int, rate: int, device: torch.device) -> Tensor:
    """hidden[i, j]: entry j is not yet whole for query i (j ≥ ⌊(i + 1)/rate⌋) [T, n]."""
    position = torch.arange(t, device=device)
    return torch.arange(n, device=device)[None, :] >= ((position + 1) // rate)[:, None]


def select_entries(indexer: CompressedIndexer, q: Tensor, entries: Tensor, weights: Tensor
                   ) -> Tensor:
    """The top min(topk, n) entries of each query [B, T, K] by Σ_heads weight · ReLU(q·k):
    2·h_I·d_I per entry for q·k, 2·h_I for the weighted sum over heads (as DSA's)."""
    t, n = q.shape[2], entries.shape[2]
    scores = torch.relu(q @ entries.transpose(-2, -1)) * indexer.width**-0.5  # [B, h_I, T, n]
    index = (weights @ scores.transpose(1, 2)).squeeze(2)  # [B, T, n]
    index = index.masked_fill(visible(t, n, indexer.rate, q.device), float("-inf"))
    return index.topk(min(indexer.topk, n), dim=-1).indices
