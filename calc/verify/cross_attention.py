"""A cross-attention layer's mixer (calc.spec.layers.CrossAttentionSpec): the text's queries
against image tokens, as transformers 5.24.0's MllamaTextCrossAttention and
MllamaCrossAttentionDecoderLayer build it, written to be counted.

The image tokens are the model's second input: `image_tokens` rows of width d per sequence
(the vision tower's output after the wrapper's projector), made here as zeros that require
a gradient, so that the backward computes their gradient as a trained tower's would (calc's
backward = 2 × forward holds for W_K and W_V too). QKᵀ and A·V are explicit matmuls over all
of them, tagged cross_attention/scores.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from calc.spec import ModelSpec
from calc.verify.parts import linear, make_norm, tag


class CrossAttentionGates(nn.Module):
    """cross_attn_attn_gate and cross_attn_mlp_gate: one scalar each, read through tanh."""

    def __init__(self) -> None:
        super().__init__()
        tag(self, "cross_attention/gates")
        self.attention = nn.Parameter(torch.zeros(1))
        self.mlp = nn.Parameter(torch.zeros(1))


class CrossAttention(nn.Module):
    """q from the text, k and v from the image tokens (grouped heads), a norm over each query
    and key head, no position encoding, no mask, o back to d."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        tag(self, "cross_attention/scores")
        cross = spec.cross_attention
        assert cross is not None
        d, h, kv = spec.d_model, spec.attention.n_heads, spec.n_kv_heads
        self.h, self.kv, self.d_qk, self.d_v = h, kv, spec.head_dim_qk, spec.head_dim_v
        self.images = cross.image_tokens
        self.q = linear(d, h * self.d_qk, False, "cross_attention/q")
        self.k = linear(d, kv * self.d_qk, False, "cross_attention/kv")
        self.v = linear(d, kv * self.d_v, False, "cross_attention/kv")
        self.o = linear(h * self.d_v, d, False, "cross_attention/o")
        self.q_norm = make_norm(spec.norm, self.d_qk, "cross_attention/qk_norm")
        self.k_norm = make_norm(spec.norm, self.d_qk, "cross_attention/qk_norm")

    def forward(self, x: Tensor) -> Tensor:
        b, t, d = x.shape
        images = torch.zeros(b, self.images, d, device=x.device, dtype=x.dtype,
                             requires_grad=True)
        q = self.q_norm(self.q(x).view(b, t, self.h, self.d_qk)).transpose(1, 2)
        k = self.k_norm(self.k(images).view(b, -1, self.kv, self.d_qk)).transpose(1, 2)
        v = self.v(images).view(b, -1, self.kv, self.d_v).transpose(1, 2)
        groups = self.h // self.kv
        k = k.repeat_interleave(groups, dim=1)
        v = v.repeat_interleave(groups, dim=1)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.d_qk)  # [B, h, T, T_img]
        out = scores.softmax(-1) @ v
        return self.o(out.transpose(1, 2).reshape(b, t, self.h * self.d_v))
