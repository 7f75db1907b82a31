"""DeepSeek Sparse Attention in the reference model: the lightning indexer and the attention
over the keys it selects (DeepSeek-V3.2-Exp; transformers 5.24.0 modeling_deepseek_v32.py,
DeepseekV32Indexer and DeepseekV32Attention).

The indexer's projections are tagged attention/indexer; its scores against every key and the
attention over the selected keys run in the attention module, tagged attention/scores, as
calc.formulas.flops counts them. Unlike transformers, which masks dense scores, each query here
multiplies only its min(topk, T) selected keys.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from calc.spec import ModelSpec
from calc.verify.parts import linear, rope, tag


class Indexer(nn.Module):
    """wq_b: MLA's query latent r_q → h_I·d_I; wk: d → d_I and an nn.LayerNorm(d_I) with γ and
    β; weights_proj: d → h_I. RoPE turns the first qk_rope_head_dim of each head."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        tag(self, "attention/indexer")
        att = spec.attention
        indexer, mla = att.indexer, att.mla
        assert indexer is not None and mla is not None and mla.q_lora_rank is not None
        self.heads, self.width, self.topk = indexer.n_heads, indexer.head_dim, indexer.topk
        self.d_rope = mla.qk_rope_head_dim
        self.q = linear(mla.q_lora_rank, self.heads * self.width, False, "attention/indexer")
        self.k = linear(spec.d_model, self.width, False, "attention/indexer")
        self.k_norm = tag(nn.LayerNorm(self.width, eps=1e-6), "attention/indexer")
        self.weights = linear(spec.d_model, self.heads, False, "attention/indexer")

    def _rope(self, x: Tensor, positions: Tensor) -> Tensor:
        r = self.d_rope
        return torch.cat((rope(x[..., :r], positions), x[..., r:]), dim=-1)

    def forward(self, x: Tensor, latent: Tensor, positions: Tensor
                ) -> tuple[Tensor, Tensor, Tensor]:
        """Queries [B, h_I, T, d_I], keys [B, 1, T, d_I] and head weights [B, T, 1, h_I]."""
        b, t, _ = x.shape
        q = self.q(latent).view(b, t, self.heads, self.width).transpose(1, 2)
        k = self.k_norm(self.k(x))[:, None]
        weights = self.weights(x) * self.heads**-0.5
        return self._rope(q, positions), self._rope(k, positions), weights[:, :, None]


def select(indexer: Indexer, q: Tensor, k: Tensor, weights: Tensor) -> Tensor:
    """The top min(topk, T) keys of each query [B, T, K] by Σ_heads weight · ReLU(q·k), over
    every key: 2·h_I·d_I per key for q·k, 2·h_I for the weighted sum over heads."""
    t = q.shape[2]
    scores = F.relu(q @ k.transpose(-2, -1)) * indexer.width**-0.5  # [B, h_I, T, T]
    index = (weights @ scores.transpose(1, 2)).squeeze(2)  # [B, T, 1, h_I] @ [B, T, h_I, T]
    position = torch.arange(t, device=q.device)
    index = index.masked_fill(position[None, :] > position[:, None], float("-inf"))
    return index.topk(min(indexer.topk, t), dim=-1).indices


def attend_selected(q: Tensor, k: Tensor, v: Tensor, keys: Tensor, scale: float,
                    bias: Tensor | None = None) -> Tensor:
    """Each query [B, h, T, d] multiplies only its K selected keys [B, T, K] (or [B, h, T, K],
    a selection per head: Doge's dynamic mask): QKᵀ 2·d_qk and A·V 2·d_v per head per
    selected key; a selected key after the query is masked out (the top-k of a query with
    fewer than K keys before it). `bias` [B, h, T_keys]: a score per key added to its logits
    (element-wise)."""
    b, h, t, _ = q.shape
    batch = torch.arange(b, device=q.device)[:, None, None, None]
    heads = torch.arange(h, device=q.device)[None, :, None, None]
    chosen = keys[:, None] if keys.dim() == 3 else keys  # [B, 1 or h, T, K]
    k_sel, v_sel = k[batch, heads, chosen], v[batch, heads, chosen]  # [B, h, T, K, d]
    scores = (q.unsqueeze(-2) @ k_sel.transpose(-2, -1)).squeeze(-2) * scale  # [B, h, T, K]
    if bias is not None:
        scores = scores + bias[batch, heads, chosen]
    position = torch.arange(t, device=q.device)
    scores = scores.masked_fill(chosen > position[None, None, :, None], float("-inf"))
    return (scores.softmax(-1).unsqueeze(-2) @ v_sel).squeeze(-2)
