"""ZAYA1's parts in the reference model (transformers 5.24.0 modeling_zaya.py, rewritten to be
counted): CCA's queries, keys and values (ZayaCCAProjection, ZayaQKNorm), the MLP router that
carries its state to the next layer (ZayaRouter) and the learned residual scales
(ZayaResidualScaling; Doge's scale alone).

The convs are causal: each pads its own input by its kernel less one on the left, so each
computes T outputs (calc's convention; transformers pads once for both and its depthwise conv
computes k_b − 1 more, calc.verify.hf_implementation). The first token's previous value is
zero, not v_proj_delayed of a zero token.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from calc.spec import ModelSpec
from calc.verify.parts import linear, make_norm, tag


class CCAProjection(nn.Module):
    """From W_Q's and W_K's outputs and the layer's input: the queries [B, h, T, d_h], keys
    [B, h_kv, T, d_h] and values [B, h_kv, T, d_h] of compressed convolutional attention."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        att, d = spec.attention, spec.d_model
        assert att.cca is not None
        self.h, self.h_kv, self.width = att.n_heads, spec.n_kv_heads, spec.head_dim_qk
        channels = (self.h + self.h_kv) * self.width
        self.kernels = (att.cca.kernel, att.cca.grouped_kernel)
        self.depthwise = tag(nn.Conv1d(channels, channels, att.cca.kernel, groups=channels),
                             "attention/conv")
        self.grouped = tag(nn.Conv1d(channels, channels, att.cca.grouped_kernel,
                                     groups=self.h + self.h_kv), "attention/conv")
        half = self.h_kv * self.width // 2
        self.v_current = linear(d, half, att.qkv_bias, "attention/kv")
        self.v_delayed = linear(d, half, att.qkv_bias, "attention/kv")
        self.temp = tag(Temperature(self.h_kv), "attention/qk_norm")

    def forward(self, x: Tensor, q: Tensor, k: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        b, t, _ = x.shape
        group = self.h // self.h_kv
        heads_q = q.view(b, t, self.h, self.width)
        heads_k = k.view(b, t, self.h_kv, self.width)
        # the residual paths: each query head's mean with its key head, and for each key head
        # the mean of that over its query heads
        q_res = (heads_q + heads_k.repeat_interleave(group, dim=2)) * 0.5
        k_res = q_res.view(b, t, self.h_kv, group, self.width).mean(dim=3)
        mixed = torch.cat([q, k], dim=-1).transpose(1, 2)  # [B, C, T]
        mixed = self.depthwise(F.pad(mixed, (self.kernels[0] - 1, 0)))
        mixed = self.grouped(F.pad(mixed, (self.kernels[1] - 1, 0))).transpose(1, 2)
        q_out = mixed[..., :self.h * self.width].view(b, t, self.h, self.width) + q_res
        k_out = mixed[..., self.h * self.width:].view(b, t, self.h_kv, self.width) + k_res
        # L2 norms to √d_h, then the keys times their head's temperature
        scale = self.width ** 0.5
        q_out = q_out * (scale / q_out.norm(dim=-1, keepdim=True).clamp_min(1e-6))
        k_out = k_out * (scale / k_out.norm(dim=-1, keepdim=True).clamp_min(1e-6))
        k_out = k_out * self.temp.values[None, None, :, None]
        delayed = self.v_delayed(x)
        previous = torch.cat([torch.zeros_like(delayed[:, :1]), delayed[:, :-1]], dim=1)
        v = torch.cat([self.v_current(x), previous], dim=-1).view(b, t, self.h_kv, self.width)
        return q_out.transpose(1, 2), k_out.transpose(1, 2), v.transpose(1, 2)


class Temperature(nn.Module):
    """ZayaQKNorm.temp: one learned scale of the keys per key/value head."""

    def __init__(self, heads: int):
        super().__init__()
        self.values = nn.Parameter(torch.ones(heads))


class RouterMLP(nn.Module):
    """ZAYA1's router: d → r with bias, plus the previous layer's router state times a learned
    scale (every layer but the first), a norm, fc1 and fc2 r → r with bias and GELU, r → E + 1
    (the experts and the skip class). Returns the scores and the state for the next layer."""

    def __init__(self, spec: ModelSpec, first: bool):
        super().__init__()
        tag(self, "moe/router")
        moe, d = spec.moe, spec.d_model
        assert moe is not None and moe.router_mlp is not None
        r = moe.router_mlp.width
        self.down = linear(d, r, True, "moe/router")
        self.state_scale = None if first else nn.Parameter(torch.ones(r))
        self.norm = make_norm(spec.norm, r, "moe/router")
        self.fc1 = linear(r, r, True, "moe/router")
        self.fc2 = linear(r, r, True, "moe/router")
        self.out = linear(r, moe.n_experts + 1, False, "moe/router")

    def forward(self, x: Tensor, state: Tensor | None) -> tuple[Tensor, Tensor]:
        hidden = self.down(x)
        if self.state_scale is not None and state is not None:
            hidden = hidden + state * self.state_scale
        scores = self.out(F.gelu(self.fc2(F.gelu(self.fc1(self.norm(hidden))))))
        return scores, hidden


class ResidualScale(nn.Module):
    """A residual add r + x with learned vectors of width d: (r + b_r)·s_r + (x + b_x)·s_x,
    the biases and the branch's scale where the spec has them (tagged residual_scales)."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        tag(self, "residual_scales")
        scales, d = spec.residual_scales, spec.d_model
        assert scales is not None
        self.scale = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d)) if scales.residual_bias else None
        self.branch_scale = nn.Parameter(torch.ones(d)) if scales.branch else None
        self.branch_bias = nn.Parameter(torch.zeros(d)) if scales.branch else None

    def forward(self, residual: Tensor, x: Tensor) -> Tensor:
        if self.bias is not None:
            residual = residual + self.bias
        if self.branch_scale is not None and self.branch_bias is not None:
            x = (x + self.branch_bias) * self.branch_scale
        return residual * self.scale + x


class EmbeddingScale(nn.Module):
    """ZayaModel's input_hidden_states_bias and _scale: (e + b)·s on the token embedding."""

    def __init__(self, width: int):
        super().__init__()
        tag(self, "residual_scales")
        self.scale = nn.Parameter(torch.ones(width))
        self.bias = nn.Parameter(torch.zeros(width))

    def forward(self, x: Tensor) -> Tensor:
        return (x + self.bias) * self.scale
