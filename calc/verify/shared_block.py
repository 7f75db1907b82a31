"""The shared block in the reference model (calc.spec.layers.SharedBlockSpec: Zamba, Zamba2).

`SharedBlock` is one weight set: an RMSNorm (the model's norm) over [hidden, embedding] (2d),
W_Q, W_K, W_V reading 2d, QKᵀ and A·V as explicit matmuls under the causal mask, W_O back to d,
a norm over d and the model's FFN, no residual inside (ZambaAttentionDecoderLayer). `Depth` is
what each depth has of its own: the projection d → d after the block and Zamba2's adapters. A
depth runs its set through `SharedBlock.forward(x, embedding, positions, depth)`, so each module
has one parent and FlopCounterMode attributes every product to one component: the weight set's
products to shared_block/attention and /mlp, the depth's to shared_block/projection and
/adapters, QKᵀ and A·V (done in the set's own forward) to attention/scores, where calc's
formulas count them beside the attention layers' (calc.formulas.flops).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from calc.spec import ModelSpec
from calc.verify.parts import ACTIVATIONS, linear, make_norm, rope, tag


def _adapter(n_in: int, rank: int, n_out: int) -> nn.Module:
    """A low-rank pair without biases (Zamba2's nn.Sequential of two nn.Linear)."""
    return tag(nn.Sequential(linear(n_in, rank, False, "shared_block/adapters"),
                             linear(rank, n_out, False, "shared_block/adapters")),
               "shared_block/adapters")


class Depth(nn.Module):
    """One depth's own parts: the projection d → d, and the adapters (rank r) on the FFN's
    gate and up (d → r → (1 + gated)·d_ff) and, with attention adapters, on W_Q, W_K, W_V
    (2d → r → each one's output width)."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        block, ffn, d = spec.shared_block, spec.ffn, spec.d_model
        assert block is not None and ffn is not None
        self.projection = linear(d, d, False, "shared_block/projection")
        rank = block.adapter_rank
        self.mlp = (_adapter(d, rank, (1 + int(ffn.gated)) * ffn.d_ff)
                    if rank is not None else None)
        h, kv = spec.attention.n_heads, spec.n_kv_heads
        widths = (h * spec.head_dim_qk, kv * spec.head_dim_qk, kv * spec.head_dim_v)
        self.qkv = (nn.ModuleList(_adapter(2 * d, rank, width) for width in widths)
                    if rank is not None and block.attention_adapters else None)


class Scores(nn.Module):
    """Causal softmax(QKᵀ/√d_qk)·V over [B, h, T, ·] as explicit matmuls."""

    def __init__(self) -> None:
        super().__init__()
        tag(self, "attention/scores")

    def forward(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        t = q.shape[2]
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
        position = torch.arange(t, device=q.device)
        hidden = position[None, :] > position[:, None]
        return scores.masked_fill(hidden, float("-inf")).softmax(-1) @ v


class SharedBlock(nn.Module):
    """One weight set of the shared block (module docstring); a container, run by `apply`."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        d, att, ffn = spec.d_model, spec.attention, spec.ffn
        assert ffn is not None
        self.h, self.h_kv = att.n_heads, spec.n_kv_heads
        self.d_qk, self.d_v = spec.head_dim_qk, spec.head_dim_v
        self.rope = spec.position.kind == "rope"
        self.norm_in = make_norm(spec.norm, 2 * d, "shared_block/norms")
        self.q = linear(2 * d, self.h * self.d_qk, False, "shared_block/attention")
        self.k = linear(2 * d, self.h_kv * self.d_qk, False, "shared_block/attention")
        self.v = linear(2 * d, self.h_kv * self.d_v, False, "shared_block/attention")
        self.scores = Scores()
        self.o = linear(self.h * self.d_v, d, False, "shared_block/attention")
        self.norm_ff = make_norm(spec.norm, d, "shared_block/norms")
        self.gated, self.d_ff = ffn.gated, ffn.d_ff
        self.up = linear(d, ffn.d_ff, ffn.bias, "shared_block/mlp")
        self.gate = linear(d, ffn.d_ff, ffn.bias, "shared_block/mlp") if ffn.gated else None
        self.down = linear(ffn.d_ff, d, ffn.bias, "shared_block/mlp")
        self.act = ACTIVATIONS[ffn.activation]

    def _heads(self, x: Tensor, n: int) -> Tensor:
        b, t, _ = x.shape
        return x.view(b, t, n, -1).transpose(1, 2)

    def _attention(self, x: Tensor, positions: Tensor, depth: Depth) -> Tensor:
        q, k, v = self.q(x), self.k(x), self.v(x)
        if depth.qkv is not None:  # Zamba2Attention: each adapter's output added
            q, k, v = (y + adapter(x) for y, adapter in zip((q, k, v), depth.qkv, strict=True))
        q, k, v = self._heads(q, self.h), self._heads(k, self.h_kv), self._heads(v, self.h_kv)
        if self.rope:
            q, k = rope(q, positions), rope(k, positions)
        if self.h_kv != self.h:
            k = k.repeat_interleave(self.h // self.h_kv, dim=1)
            v = v.repeat_interleave(self.h // self.h_kv, dim=1)
        out = self.scores(q, k, v)
        b, _, t, _ = out.shape
        return self.o(out.transpose(1, 2).reshape(b, t, self.h * self.d_v))

    def _ffn(self, x: Tensor, depth: Depth) -> Tensor:
        up = self.up(x)
        gate = self.gate(x) if self.gate is not None else None
        if depth.mlp is not None:  # Zamba2MLP: the adapter's output added to gate_up's
            extra = depth.mlp(x)
            if gate is not None:
                gate, up = gate + extra[..., :self.d_ff], up + extra[..., self.d_ff:]
            else:
                up = up + extra
        hidden = self.act(gate) * up if gate is not None else self.act(up)
        return self.down(hidden)

    def apply(self, x: Tensor, embedding: Tensor, positions: Tensor, depth: Depth) -> Tensor:
        """What the depth adds to its layer's mixer input: the projection of the block's
        output for [x, embedding]."""
        out = self._attention(self.norm_in(torch.cat([x, embedding], dim=-1)), positions, depth)
        return depth.projection(self._ffn(self.norm_ff(out), depth))
