"""Selecting attention in the reference model: DeepSeek Sparse Attention's lightning indexer
(DeepSeek-V3.2-Exp; transformers 5.24.0 modeling_deepseek_v32.py, DeepseekV32Indexer and
DeepseekV32Attention), MiniMax-M3's block indexer (modeling_minimax_m3_vl.py
MiniMaxM3VLIndexer), Qwen4-Exp's QSA (modular_qwen4_exp.py Qwen4ExpTextQSAIndexer: blocks
scored by their mean-pooled keys), and the attention over the keys they select.

The indexers' projections are tagged attention/indexer; their scores against every key and the
attention over the selected keys run in the attention module, tagged attention/scores, as
calc.formulas.flops counts them. Unlike transformers, which masks dense scores, each query here
multiplies only its min(topk, T) selected keys, or the min(topk·block_size, T) keys of its
selected blocks.
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


class BlockIndexer(nn.Module):
    """MiniMax-M3's indexer, without MLA: q_proj d → h_I·d_I and k_proj d → d_I from the
    residual, without bias; q_norm over each head and k_norm, RMSNorms of d_I with γ; RoPE on
    both (elementwise). No head weights: each head picks its own blocks."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        tag(self, "attention/indexer")
        indexer = spec.attention.indexer
        assert indexer is not None
        self.heads, self.width, self.topk = indexer.n_heads, indexer.head_dim, indexer.topk
        self.block, self.pooled = indexer.block_size, indexer.pooled
        self.rope = spec.position.kind == "rope"
        self.q = linear(spec.d_model, self.heads * self.width, False, "attention/indexer")
        self.k = linear(spec.d_model, self.width, False, "attention/indexer")
        self.q_norm = tag(nn.RMSNorm(self.width), "attention/indexer")
        self.k_norm = tag(nn.RMSNorm(self.width), "attention/indexer")

    def forward(self, x: Tensor, positions: Tensor) -> tuple[Tensor, Tensor]:
        """Queries [B, h_I, T, d_I] and keys [B, 1, T, d_I] (QSA's keys raw: its norm and
        RoPE act on the pooled keys, select_pooled)."""
        b, t, _ = x.shape
        q = self.q_norm(self.q(x).view(b, t, self.heads, self.width)).transpose(1, 2)
        k = self.k(x)[:, None]
        if self.pooled:
            return (rope(q, positions) if self.rope else q), k
        k = self.k_norm(k)
        if self.rope:
            q, k = rope(q, positions), rope(k, positions)
        return q, k


def select_pooled(indexer: BlockIndexer, q: Tensor, k: Tensor, positions: Tensor) -> Tensor:
    """QSA's keys for each query [B, T, K·B + tail] (Qwen4ExpTextQSAIndexer), counted as every
    query sees all T keys (calc's full convention): the ⌊T/B⌋ complete blocks' keys averaged,
    normed and turned at the block's start, scored by Σ_heads ReLU(q·k) (2·h_I·d_I per
    block), the top min(K, ⌊T/B⌋) blocks' keys and the keys past the last complete block. A
    block not complete at the query is chosen last, the earliest first (its visible keys are
    the query's own tail; attend_selected masks the rest)."""
    b, _, t, _ = q.shape
    size = indexer.block
    n = t // size
    tail = torch.arange(n * size, t, device=q.device).expand(b, t, -1)
    if n == 0:
        return tail
    pooled = indexer.k_norm(k[:, :, : n * size].unflatten(2, (n, size)).mean(3))
    if indexer.rope:
        pooled = rope(pooled, positions[: n * size: size])
    scores = (F.relu(q @ pooled.transpose(-2, -1)).sum(1)
              * indexer.width**-0.5)  # [B, T, n]
    block = torch.arange(n, device=q.device)
    incomplete = (block[None, :] + 1) * size - 1 > torch.arange(t, device=q.device)[:, None]
    scores = torch.where(incomplete, -1e30 * (1 + block.to(scores.dtype)), scores)
    chosen = scores.topk(min(indexer.topk, n), dim=-1).indices  # [B, T, K]
    keys = (chosen[..., None] * size + torch.arange(size, device=q.device)).flatten(-2)
    return torch.cat([keys, tail], dim=-1)


def select_blocks(indexer: BlockIndexer, q: Tensor, k: Tensor) -> Tensor:
    """The keys of each head's top min(topk, blocks) blocks for each query [B, h_I, T,
    blocks·B]: q·k over every key (2·h_I·d_I per key), a block's score its visible keys'
    maximum, the query's own block always kept (MiniMaxM3VLIndexer: index_local_blocks >= 1
    scores it +inf). A block wholly after the query, or a key past T in a last partial block,
    is picked only where fewer blocks are visible and is masked by attend_selected."""
    t, size = q.shape[2], indexer.block
    n = -(-t // size)
    position = torch.arange(t, device=q.device)
    scores = (q @ k.transpose(-2, -1)).masked_fill(position[None, :] > position[:, None],
                                                    float("-inf"))  # [B, h_I, T, T]
    scores = F.pad(scores, (0, n * size - t), value=float("-inf"))
    blocks = scores.unflatten(-1, (n, size)).amax(-1)  # [B, h_I, T, n]
    own = torch.arange(n, device=q.device)[None, :] == (position // size)[:, None]
    blocks = blocks.masked_fill(own, float("inf"))
    chosen = blocks.topk(min(indexer.topk, n), dim=-1).indices  # [B, h_I, T, K]
    keys = chosen[..., None] * size + torch.arange(size, device=q.device)
    return keys.flatten(-2)


def attend_selected(q: Tensor, k: Tensor, v: Tensor, keys: Tensor, scale: float,
                    bias: Tensor | None = None) -> Tensor:
    """Each query [B, h, T, d] multiplies only its K selected keys, one selection for all heads
    [B, T, K] (DSA) or one per group of heads [B, g, T, K] (MiniMax-M3; g = h: Doge's dynamic
    mask): QKᵀ 2·d_qk and A·V 2·d_v per head per selected key; a selected key after the query,
    or past T, is masked out (the top-k of a query with fewer than K keys before it). `bias`
    [B, h, T_keys]: a score per key added to its logits (element-wise)."""
    b, h, t, _ = q.shape
    batch = torch.arange(b, device=q.device)[:, None, None, None]
    heads = torch.arange(h, device=q.device)[None, :, None, None]
    chosen = (keys[:, None] if keys.dim() == 3
              else keys.repeat_interleave(h // keys.shape[1], dim=1))  # [B, 1 or h, T, K]
    gathered = chosen.clamp(max=t - 1)
    k_sel, v_sel = k[batch, heads, gathered], v[batch, heads, gathered]  # [B, h, T, K, d]
    scores = (q.unsqueeze(-2) @ k_sel.transpose(-2, -1)).squeeze(-2) * scale  # [B, h, T, K]
    if bias is not None:
        scores = scores + bias[batch, heads, gathered]
    position = torch.arange(t, device=q.device)
    scores = scores.masked_fill(chosen > position[None, None, :, None], float("-inf"))
    return (scores.softmax(-1).unsqueeze(-2) @ v_sel).squeeze(-2)
